"""When the reading side may log in to a mailbox's IMAP server: never without a password, never in a burst.

A missing or empty password variable is found before any connection: no login is attempted with it. A login
the server refused is tried again only after the next interval of the probe ladder
(OUTREACH_PROBE_INTERVALS, as for a blocked sending side), one attempt per interval, so a revoked or wrong
password never adds up to the failed logins that make Google or Microsoft lock the account. The poller and
the IDLE watcher both ask here before they connect. A refusal also marks the mailbox's credentials refused, with
the server's words, until a login is accepted (`sequences.services.imap_login`): every page says so at once.
"""

from __future__ import annotations

from datetime import datetime

from mailboxes.models import Mailbox
from mailboxes.selectors import imap_password_missing
from sequences.services.imap_login import Connection, imap_login_accepted, imap_login_refused


def login_wait(mailbox: Mailbox, *, now: datetime) -> str:
    """Why no login may be attempted now, in words (the poll's error); '' when one may."""
    if missing := imap_password_missing(mailbox):
        return missing
    if mailbox.imap_next_login_at is not None and mailbox.imap_next_login_at > now:
        times = mailbox.imap_login_refusals
        return (f"IMAP login refused {times} time{'s' if times != 1 else ''} in a row; next attempt at "
                f"{mailbox.imap_next_login_at:%Y-%m-%d %H:%M:%S} UTC"
                + (f" ({words})" if (words := mailbox.imap_login_refused_error or mailbox.last_poll_error) else ""))
    return ""


def login_refused(mailbox: Mailbox, *, now: datetime, error: str, connection: Connection) -> None:
    """The server refused the login (`error`: its words; `connection`: which one tried): the next attempt waits for
    the next interval of the ladder, and the mailbox's credentials show as refused."""
    imap_login_refused(mailbox_id=mailbox.pk, error=error, connection=connection, now=now)


def login_accepted(mailbox: Mailbox) -> None:
    if mailbox.imap_login_refusals or mailbox.imap_next_login_at or mailbox.imap_login_refused_at:
        imap_login_accepted(mailbox_id=mailbox.pk)
