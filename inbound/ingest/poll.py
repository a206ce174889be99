"""Polling: one pass over a mailbox's reply folders, or some of them, from their cursors. No transaction is open
during IMAP I/O.

Each batch of new UIDs goes through inbound.ingest.batch, which commits
what it records in short transactions; the cursor only moves inside them.

A folder seen for the first time (or after a UIDVALIDITY change) starts at
the mailbox's first submission: the first UID that IMAP SEARCH SINCE finds
for that date minus a day (clock skew), or UIDNEXT when this mailbox has
submitted nothing yet. Older mail is never fetched; ``since`` re-reads from
an explicit date.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db import transaction
from django.db.models import F, Min

from db.clock import db_now
from mailboxes.imap.connection import ImapConfig
from mailboxes.imap.errors import ImapAuthError, ImapConnectionError, ImapError, ImapUidValidityError
from mailboxes.imap.folders import folder_guess
from mailboxes.imap.session import ImapSession
from mailboxes.models import ImapCursor, Mailbox
from mailboxes.oauth2 import TokenRefused
from mailboxes.secrets import SecretRefused
from mailboxes.selectors import imap_config_for, smtp_logs_in_with
from sequences.models import SendJob
from sequences.sending_mailbox import sends_from
from sequences.services.mailbox_health import mailbox_block
from sequences.timeline import Event, event_record

from .batch import batch_ingest
from .login import Connection, login_accepted, login_refused, login_wait
from .view import folder_read_through

log = logging.getLogger("outreach.ingest")


@dataclass
class PollResult:
    mailbox: str
    folders: dict[str, dict[str, int]] = field(default_factory=dict)
    error: str = ""
    # Over all folders: messages read whole (the rest needed their header only).
    stats: dict[str, float] = field(default_factory=lambda: {"bodies": 0})

    @property
    def fetched(self) -> int:
        return sum(f["fetched"] for f in self.folders.values())


def cursor_for(mailbox: Mailbox, folder: str) -> ImapCursor:
    cursor, _ = ImapCursor.objects.get_or_create(mailbox=mailbox, folder=folder)
    return cursor


def cursor_reset(cursor: ImapCursor, uidvalidity: int, highestmodseq: int | None, last_uid: int = 0) -> None:
    """A new UIDVALIDITY: every UID we knew is void, so rescan the folder from *last_uid* (its first sync start).

    Message-ID deduplication makes the rescan harmless: nothing acts twice.
    """
    first_sight = cursor.uidvalidity is None
    with transaction.atomic(durable=True):
        ImapCursor.objects.filter(pk=cursor.pk).update(
            uidvalidity=uidvalidity, last_uid=last_uid, highestmodseq=highestmodseq,
            rescans=F("rescans") + (0 if first_sight else 1), updated_at=db_now())
        if not first_sight:
            event_record(kind=Event.IMAP_UIDVALIDITY_CHANGED, mailbox=cursor.mailbox.name, folder=cursor.folder,
                         old=cursor.uidvalidity, new=uidvalidity)


def first_sync_day(mailbox: Mailbox) -> date | None:
    """The day a new folder is read from: the mailbox's first submission minus a day; None if nothing was sent."""
    first = SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__"), submitted_at__isnull=False).aggregate(
        first=Min("submitted_at"))["first"]
    return (first - timedelta(days=1)).date() if first else None


def mailbox_poll(*, mailbox_id: int, batch_size: int = 200,
                 progress: Callable[[str, int, int], None] | None = None, since: date | None = None,
                 folders: Collection[str] | None = None) -> PollResult:
    """One pass over a mailbox's reply folders. No transaction is open during IMAP I/O.

    *folders*: only those of the reply folders (the folder an IDLE push was heard in): the other folders'
    cursors and reply views stay as they are. None: every reply folder.
    *since*: also read mail that arrived on that day or later even when it is older than the cursor
    (an explicit re-read of history; what was recorded already is a no-op).
    """
    mailbox = Mailbox.objects.get(pk=mailbox_id)
    result = PollResult(mailbox=mailbox.name)
    if not mailbox.has_imap:
        result.error = "no IMAP settings"
        return result
    reading = [f for f in mailbox.reply_folders if folders is None or f in folders]
    if not reading:  # the folders asked for are read no more (the settings changed since the ask)
        return result
    folder_errors: list[str] = []
    config: ImapConfig | None = None
    now = db_now()
    wait = login_wait(mailbox, now=now)
    if wait:
        # No login now (no password, or the last one was refused and its interval has not passed): nothing is
        # read, so the reply view stays where it was and the mailbox's follow-ups wait. Not an attempt either:
        # `poll_failures` ("failures in a row") counts the logins and connections that failed, not the polls that
        # waited between them.
        result.error = wait
        refused_before = mailbox.imap_next_login_at is not None
        Mailbox.objects.filter(pk=mailbox.pk).update(
            last_poll_at=now, **({} if refused_before else {"last_poll_error": wait[:2000]}))
        log.warning("poll of mailbox %s: %s", mailbox.name, wait)
        return result
    try:
        config = imap_config_for(mailbox)
        with ImapSession(config) as session:
            sent = _sent_folders(session)
            for folder in reading:
                begun = db_now()  # what this folder's pass reads through, if it completes
                try:
                    result.folders[folder] = _poll_folder(session, mailbox, folder, batch_size, progress, since,
                                                          result.stats, sent_folder=folder in sent)
                except (ImapConnectionError, ImapAuthError):
                    raise  # the connection itself: the whole mailbox
                except (ImapError, SecretRefused) as exc:
                    # This folder only (missing, not selectable): the others are still read.
                    error = _folder_error(session, folder, exc)
                    folder_errors.append(f"folder {folder}: {error}")
                    result.folders[folder] = {"error": error}
                    log.warning("poll of mailbox %s folder %s failed: %s", mailbox.name, folder, error)
                    ImapCursor.objects.filter(pk=cursor_for(mailbox, folder).pk).update(
                        last_error=error[:2000], failures=F("failures") + 1)
                else:
                    ImapCursor.objects.filter(mailbox=mailbox, folder=folder).exclude(failures=0, last_error="").update(
                        last_error="", failures=0)
                    folder_read_through(mailbox_id=mailbox.pk, folder=folder, at=begun)
    except (ImapError, SecretRefused) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        log.warning("poll of mailbox %s failed: %s", mailbox.name, result.error)
        Mailbox.objects.filter(pk=mailbox.pk).update(last_poll_at=db_now(), last_poll_error=result.error[:2000],
                                                     poll_failures=F("poll_failures") + 1)
        if isinstance(exc, ImapAuthError):
            login_refused(mailbox, now=now, error=str(exc), connection=Connection.POLL)
        _block_sending_if_token_refused(mailbox, exc, config)
        if isinstance(exc, SecretRefused):  # a password env var outside the allow-list: nothing was sent
            raise ImapAuthError(str(exc)) from exc
        raise
    login_accepted(mailbox)
    errors = "; ".join(folder_errors) if folders is None else _folder_errors_standing(mailbox)
    Mailbox.objects.filter(pk=mailbox.pk).update(last_poll_at=db_now(), last_poll_ok_at=db_now(),
                                                 last_poll_error=errors[:2000], poll_failures=0)
    return result


def _folder_errors_standing(mailbox: Mailbox) -> str:
    """The mailbox's poll error after a pass of some folders: each reply folder's error as its own last pass left
    it (a pass of one folder neither clears nor repeats what the others said)."""
    errors = dict(ImapCursor.objects.filter(mailbox=mailbox, folder__in=mailbox.reply_folders).exclude(
        last_error="").values_list("folder", "last_error"))
    return "; ".join(f"folder {folder}: {errors[folder]}" for folder in mailbox.reply_folders if folder in errors)


def _block_sending_if_token_refused(mailbox: Mailbox, exc: BaseException, config: ImapConfig | None) -> None:
    """The token endpoint refused the OAuth2 refresh token (or client) that SMTP logs in with too: block sending
    now, so no job tries a login bound to fail; the mailbox's probe unblocks it once the token works again.

    Only the endpoint's own refusal counts (a variable missing in the poller's environment may be set for the
    senders), and only when SMTP uses the same OAuth2 settings: an IMAP password refused, or OAuth2 for IMAP
    alone, never stops the sending side.
    """
    refusal = token_refusal(exc)
    if refusal is None or not refusal.by_endpoint or config is None or not smtp_logs_in_with(mailbox, config.oauth2):
        return
    reason = token_refused_reason(refusal)
    if mailbox_block(mailbox_id=mailbox.pk, reason=reason):
        log.warning("mailbox %s blocked for sending: %s", mailbox.name, reason)


def token_refusal(exc: BaseException | None) -> TokenRefused | None:
    """The token endpoint's refusal behind an error, however it was wrapped (its `refusal`, cause or context)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, TokenRefused):
            return exc
        refusal = getattr(exc, "refusal", None)
        if isinstance(refusal, TokenRefused):
            return refusal
        exc = exc.__cause__ or exc.__context__
    return None


def token_refused_reason(refusal: TokenRefused) -> str:
    """Why sending is blocked, in words an operator acts on: who refused what, and what to do (no secret)."""
    if refusal.error in ("invalid_client", "unauthorized_client"):
        what, todo = "OAuth2 client", "fix the mailbox's OAuth2 client"
    else:
        what, todo = "OAuth2 refresh token", "reconnect the mailbox"
    reason = f"{what} refused by {refusal.endpoint} ({refusal.error}) at the IMAP login: {todo}"
    return f"{reason} ({refusal.hint})" if refusal.hint else reason


def _folder_error(session: ImapSession, folder: str, exc: ImapError) -> str:
    """The server's words, and the folder's likely real name when it does not exist under the one configured."""
    try:
        listed = session.folders()
    except ImapError:
        return str(exc)
    names = [name for name, _ in listed]
    if folder in names:
        return str(exc)
    delimiter = next((d for _, d in listed if d), "/")
    guess = folder_guess(folder, names, delimiter)
    return f"folder {folder} not found" + (f" — did you mean {guess}?" if guess else "") + f" ({exc})"


def _sent_folders(session: ImapSession) -> set[str]:
    """Folders marked \\Sent: what is in them is our own mail, never a reply (a failed LIST: the names decide)."""
    try:
        return session.sent_folders()
    except ImapError:
        return set()


def _poll_folder(session: ImapSession, mailbox: Mailbox, folder: str, batch_size: int, progress,
                 since: date | None, stats: dict[str, float], *, sent_folder: bool = False) -> dict[str, int]:
    cursor = cursor_for(mailbox, folder)
    counts = {"fetched": 0, "recorded": 0, "duplicates": 0}
    status = session.select(folder)
    if cursor.uidvalidity != status.uidvalidity:
        if cursor.uidvalidity is not None:
            log.warning("mailbox %s folder %s: UIDVALIDITY %s -> %s, rescanning", mailbox.name, folder,
                        cursor.uidvalidity, status.uidvalidity)
        start = _start_after(session, status, first_sync_day(mailbox))
        cursor_reset(cursor, status.uidvalidity, status.highestmodseq, start)
        cursor.refresh_from_db()
    read_after = cursor.last_uid
    if since is not None:
        read_after = min(read_after, _start_after(session, status, since))
    uids = session.uids_after(read_after)
    try:
        for i in range(0, len(uids), batch_size):
            done = batch_ingest(session, mailbox, folder, cursor.uidvalidity, uids[i : i + batch_size],
                                sent_folder=sent_folder)
            for key, value in done.items():
                (counts if key in counts else stats)[key] += value
            if progress:
                progress(folder, counts["fetched"], len(uids))
    except ImapUidValidityError:
        # Changed between our SELECT and the listing: the next pass rescans.
        log.warning("mailbox %s folder %s: UIDVALIDITY changed during the pass", mailbox.name, folder)
    if status.highestmodseq is not None:
        ImapCursor.objects.filter(pk=cursor.pk).update(highestmodseq=status.highestmodseq)
    return counts


def _start_after(session: ImapSession, status, day: date | None) -> int:
    """The UID to read after: just before the first mail of *day* (SEARCH SINCE), or UIDNEXT - 1."""
    first = session.uid_since(day) if day is not None else None
    return first - 1 if first is not None else status.uidnext - 1
