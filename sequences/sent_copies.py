"""A copy of each message sent, in the mailbox's own Sent folder: what the salesperson's mail client shows as sent.

Postfix + Dovecot (and most servers, Microsoft 365's SMTP submission too) keep no copy of mail submitted over SMTP;
Gmail does. So a mailbox's `save_to_sent` (mailboxes.models.SaveToSent) says whether we append one over IMAP:

- "auto" (the default): yes, unless the server keeps one itself or there is no IMAP Sent folder to keep it in:
  no, when the mailbox sends through Gmail / Google Workspace (SMTP host smtp.gmail.com or smtp.googlemail.com,
  or OAuth2 with Google's token URL), when it sends through an ESP (transport "anymail"), or has no IMAP settings;
- "always": yes, whenever the mailbox has IMAP settings (also through an ESP, or Gmail: then it shows twice);
- "never": no.

The copy comes after the send, never in its way: only once the hand-off is recorded as submitted (evidence that we
sent) does the pipeline enqueue a job of its own on the "default" queue (served after "ingest" by the ingest
worker, never by a send worker), with the exact bytes handed off. The bytes live only in that RQ job (Redis,
transport) until it ends; nothing of the message is written to the database. A copy that fails is tried again a
few times (OUTREACH_SENT_COPY_RETRY_SECONDS; a worker started `--with-scheduler` runs the later tries), is logged
once, and is shown on the mailbox in words ("copy to Sent … failed: <the server's words>"); the next copy saved
clears it. A refused login or a missing password is not tried again: another login would only add a failure the
provider counts. A message scheduled at a provider for later is not copied (it may still be canceled there).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from urllib.parse import urlsplit

import django_rq
from django.conf import settings

from db.clock import db_now
from mailboxes.imap.errors import ImapAuthError, ImapError
from mailboxes.imap.sent_copy import SentCopySession
from mailboxes.models import Auth, Mailbox, SaveToSent
from mailboxes.oauth2 import provider_defaults
from mailboxes.secrets import SecretRefused
from mailboxes.selectors import imap_config_for, imap_password_missing

from .models import SendJob

log = logging.getLogger("outreach.sent_copies")

TASK = "sequences.sent_copies.sent_copy_save"
QUEUE = "default"  # never "send": a copy waits behind replies and sends, and no send waits for it
# Seconds before each further try; three tries after the first at most.
RETRY_SECONDS = (60, 300, 1800)
# Servers that put every message sent through their SMTP into the account's Sent folder themselves.
KEEPS_SENT_SMTP_HOSTS = frozenset({"smtp.gmail.com", "smtp.googlemail.com"})
KEEPS_SENT_TOKEN_HOSTS = frozenset({"oauth2.googleapis.com", "accounts.google.com", "www.googleapis.com"})


def server_keeps_sent_copy(mailbox: Mailbox) -> bool:
    """Whether the mailbox sends through a server that files each message in Sent itself (Gmail)."""
    if mailbox.smtp_host.strip().lower().rstrip(".") in KEEPS_SENT_SMTP_HOSTS:
        return True
    if mailbox.auth == Auth.OAUTH2:
        preset = provider_defaults(mailbox.oauth2_provider)
        token_url = mailbox.oauth2_token_url or (preset.token_url if preset else "")
        return (urlsplit(token_url).hostname or "") in KEEPS_SENT_TOKEN_HOSTS
    return False


def sent_copy_wanted(mailbox: Mailbox) -> bool:
    """Whether a copy of each message this mailbox sends goes to its IMAP Sent folder (the rule above)."""
    if not mailbox.has_imap or mailbox.save_to_sent == SaveToSent.NEVER:
        return False
    if mailbox.save_to_sent == SaveToSent.ALWAYS:
        return True
    return mailbox.transport_kind == "smtp" and not server_keeps_sent_copy(mailbox)


def sent_copy_enqueue(*, mailbox: Mailbox, job_id: int, message: bytes) -> bool:
    """After the hand-off of `job_id` is recorded: enqueue the copy of `message` (the bytes handed off) when the
    mailbox wants one. Never raises: a Redis that cannot take the job costs the copy, never the send."""
    if not sent_copy_wanted(mailbox):
        return False
    try:
        _enqueue(mailbox.pk, job_id, message, attempt=1, delay=0)
    except Exception as exc:  # noqa: BLE001 - the message is sent and recorded; nothing here may undo that
        log.warning("mailbox %s: copy to Sent of job %s not queued: %s", mailbox.name, job_id, exc)
        return False
    return True


def _enqueue(mailbox_id: int, job_id: int, message: bytes, *, attempt: int, delay: int) -> None:
    # No result kept: the job's arguments hold the message, so it leaves Redis when the job ends.
    options = {"result_ttl": 0, "failure_ttl": 3600, "job_timeout": 300}
    queue = django_rq.get_queue(QUEUE)
    if delay:
        queue.enqueue_in(timedelta(seconds=delay), TASK, mailbox_id, job_id, message, attempt, **options)
    else:
        queue.enqueue(TASK, mailbox_id, job_id, message, attempt, **options)


def _retry_seconds() -> tuple[int, ...]:
    return tuple(getattr(settings, "OUTREACH_SENT_COPY_RETRY_SECONDS", RETRY_SECONDS))


def sent_copy_save(mailbox_id: int, job_id: int, message: bytes, attempt: int = 1) -> str:
    """RQ job: append the copy of job `job_id`'s message to the mailbox's Sent folder; returns what happened."""
    mailbox = Mailbox.objects.get(pk=mailbox_id)
    found = SendJob.objects.filter(pk=job_id).values_list("message_id", "submitted_at").first()
    if found is None:
        return "no such send job: nothing copied"
    message_id, submitted_at = found
    what = f"copy to Sent of {message_id}"
    if not mailbox.has_imap:
        return _failed(mailbox, what, "the mailbox has no IMAP settings", attempt=attempt)
    if missing := imap_password_missing(mailbox):
        return _failed(mailbox, what, missing, attempt=attempt)
    last = attempt > len(_retry_seconds())
    if mailbox.imap_next_login_at is not None and mailbox.imap_next_login_at > db_now():
        # The server refused this account's login lately: no login before the ladder's next attempt (inbound.login).
        reason = f"IMAP login refused; next attempt at {mailbox.imap_next_login_at:%Y-%m-%d %H:%M} UTC"
        if last:
            return _failed(mailbox, what, reason, attempt=attempt)
        return _again(mailbox, job_id, message, attempt, what, reason)
    try:
        with SentCopySession(imap_config_for(mailbox)) as session:
            copy = session.copy_to_sent(message, message_id=message_id, when=submitted_at)
    except (ImapAuthError, SecretRefused) as exc:
        return _failed(mailbox, what, str(exc), attempt=attempt)
    except ImapError as exc:  # the connection, or the server refused a command: may pass later
        if last:
            return _failed(mailbox, what, str(exc), attempt=attempt)
        return _again(mailbox, job_id, message, attempt, what, str(exc))
    Mailbox.objects.filter(pk=mailbox.pk, sent_copy_failed_at__isnull=False).update(
        sent_copy_failed_at=None, sent_copy_error="")
    done = "already there" if copy.already_there else "saved" + (" (folder created)" if copy.created_folder else "")
    log.info("mailbox %s: %s %s in %s (UID %s)", mailbox.name, what, done, copy.folder, copy.uid)
    return f"{done} in {copy.folder}"


def _again(mailbox: Mailbox, job_id: int, message: bytes, attempt: int, what: str, error: str) -> str:
    """Try again later; the mailbox shows the failure meanwhile (a worker without a scheduler never runs the try)."""
    delay = _retry_seconds()[attempt - 1]
    _enqueue(mailbox.pk, job_id, message, attempt=attempt + 1, delay=delay)
    log.log(logging.WARNING if attempt == 1 else logging.INFO, "mailbox %s: %s failed, trying again in %s s: %s",
            mailbox.name, what, delay, error)
    _record(mailbox, f"{what} failed (trying again): {error}")
    return f"failed, trying again in {delay} s: {error}"


def _failed(mailbox: Mailbox, what: str, error: str, *, attempt: int) -> str:
    """No further try. Logged as a warning once per copy: the first try's failure was already."""
    log.log(logging.WARNING if attempt == 1 else logging.INFO, "mailbox %s: %s failed: %s", mailbox.name, what, error)
    _record(mailbox, f"{what} failed: {error}")
    return f"failed: {error}"


def _record(mailbox: Mailbox, words: str) -> None:
    Mailbox.objects.filter(pk=mailbox.pk).update(sent_copy_failed_at=db_now(), sent_copy_error=words[:2000])
