"""What the IMAP server said of a mailbox's credentials, from any connection: refused is shown at once.

A login refused on any connection (the poll, the IDLE watcher opening a folder, an operator's check of the stored
settings) is counted for the login ladder (the next attempt waits for the next interval of
OUTREACH_PROBE_INTERVALS: `inbound.ingest.login`) and marks the mailbox's credentials refused, with the server's
words, until a login is accepted. The first refusal since the last accepted login writes one
`mailbox_credentials_refused` event (the webhook `mailbox.credentials_refused`), in the refusal's transaction.

While the mark is set the reply view is not trusted (`sequences.reply_view`, View.REFUSED): follow-ups are held
and every page says "credentials refused" with the server's words. Dovecot, like other servers, keeps a session
that logged in before a password change: an IDLE connection opened earlier still reads, and without this mark its
quiet re-checks kept the view fresh (and ended a blind episode) while every new login was refused, so the next
reconnect would have found the mailbox blind with no warning. The mark also wins over mail heard of but not read
yet: a poll that cannot log in will not read it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from django.db import transaction
from django.db.models import F, Q

from db.clock import db_now
from mailboxes.checks import ImapLogin
from mailboxes.models import Mailbox

from ..locks import mailbox_lock
from ..timeline import Event, event_record, iso
from .mailbox_health import probe_interval


class Connection(StrEnum):
    """Which connection's login the server answered (the event's and the webhook's `connection`)."""

    POLL = "poll"
    IDLE = "IDLE watcher"
    CHECK = "connection check"  # an operator's check of the stored settings


def imap_login_refused(*, mailbox_id: int, error: str, connection: Connection, now: datetime) -> bool:
    """The server refused a login to the mailbox's IMAP account (`connection`: which one tried; `now`: the
    database time of the attempt). One durable transaction, the mailbox locked, so two connections refused at once
    write one event. True when this refusal is the first since a login was accepted."""
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        first = mailbox.imap_login_refused_at is None
        since = now if first else mailbox.imap_login_refused_at
        next_attempt = now + probe_interval(mailbox.imap_login_refusals)
        Mailbox.objects.filter(pk=mailbox.pk).update(
            imap_login_refusals=F("imap_login_refusals") + 1, imap_next_login_at=next_attempt,
            imap_login_refused_at=since, imap_login_refused_error=error[:2000])
        if first:
            event_record(kind=Event.MAILBOX_CREDENTIALS_REFUSED, version_seen=mailbox.version, mailbox=mailbox.name,
                         mailbox_id=mailbox.pk, side="imap", connection=connection.value, reason=error[:2000],
                         refused_at=iso(since), next_attempt_at=iso(next_attempt))
        return first


def imap_login_accepted(*, mailbox_id: int) -> None:
    """A login to the mailbox's IMAP account was accepted: the ladder starts again and the credentials count as
    good. One guarded UPDATE, filtered in the database (the caller's row may predate a refusal another connection
    recorded), that changes nothing on a mailbox with no refusal."""
    Mailbox.objects.filter(pk=mailbox_id).filter(
        Q(imap_login_refusals__gt=0) | Q(imap_next_login_at__isnull=False) | Q(imap_login_refused_at__isnull=False)
    ).update(imap_login_refusals=0, imap_next_login_at=None, imap_login_refused_at=None, imap_login_refused_error="")


def imap_login_checked(*, mailbox_id: int, login: ImapLogin) -> None:
    """An operator's check of the mailbox's stored IMAP settings logged in, or the server refused it: recorded as
    any other login (a check of settings not saved yet says nothing of the stored ones: its caller decides)."""
    if login.refused:
        imap_login_refused(mailbox_id=mailbox_id, error=login.refused, connection=Connection.CHECK, now=db_now())
    elif login.accepted:
        imap_login_accepted(mailbox_id=mailbox_id)
