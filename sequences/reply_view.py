"""Can't see, don't send: whether a follow-up may leave on what the mailbox has read of its replies.

The final check is exact against what the database has committed; this makes it honest about what the
database has not seen yet. A follow-up (a message to a person this mailbox has already mailed) is held,
never failed, while:

- the IDLE watcher has heard of mail in a reply folder that no completed poll has read yet (an unread
  mark): the reply may be in it;
- a reply folder has not been read through a time within the mailbox's `reply_view_max_age` of now (its
  login fails, it times out, a folder is missing, it was never polled): a reply may be waiting there;
- the mailbox reads no replies at all, unless its configuration says `follow_ups_without_reply_view`.

The bound this gives: a follow-up is never handed off when a reply reached the watched folders more than
`reply_view_max_age` before the hand-off. A first message to a new person needs no view. The facts come from
`sequences.loads.facts_read`, in the final check's transaction; the pipeline holds the job
(`sequences.services.sending`) and it goes back through the final check when the view is fresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from mailboxes.models import ImapCursor, Mailbox

from .loads import Facts


def max_age_seconds(mailbox: Mailbox) -> int:
    return settings.OUTREACH_REPLY_VIEW_MAX_AGE if mailbox.reply_view_max_age is None else mailbox.reply_view_max_age


def hold_reason(mailbox: Mailbox, facts: Facts) -> str:
    """Why this job must wait for the mailbox to read its replies, in words; '' when it may go."""
    if not facts.follow_up:
        return ""
    if not mailbox.has_imap:
        if mailbox.follow_ups_without_reply_view:
            return ""
        return ("this mailbox reads no replies (no IMAP): follow-ups wait; connect its inbox, or allow "
                "follow_ups_without_reply_view")
    if facts.unread_since is not None:
        return (f"waiting to read replies: new mail arrived {_ago(facts.now - facts.unread_since)} ago and is "
                "being read")
    folders = len(mailbox.imap_folders or ["INBOX"])
    if facts.folders_read < folders or facts.read_through is None:
        return "waiting to read replies: the reply folders have not all been read yet" + _why(mailbox)
    age = facts.now - facts.read_through
    if age > timedelta(seconds=max_age_seconds(mailbox)):
        return f"waiting to read replies: last read {_ago(age)} ago" + _why(mailbox)
    return ""


def view_age_seconds(facts: Facts) -> float | None:
    """How long before the final check the replies were read through (for the authorization's event)."""
    if facts.read_through is None:
        return None
    return round(max((facts.now - facts.read_through).total_seconds(), 0.0), 3)


def _why(mailbox: Mailbox) -> str:
    return f" ({mailbox.last_poll_error})" if mailbox.last_poll_error else ""


def _ago(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} minutes"
    return f"{seconds // 3600} hours"


@dataclass(frozen=True)
class ViewStatus:
    """What the pages say of a mailbox's reply view: the words, and whether follow-ups are held now."""

    text: str
    holding: bool


def view_status(mailbox: Mailbox, cursors: list[ImapCursor], *, now: datetime) -> ViewStatus:
    """The reply view of `mailbox` in words, from its folders' cursors (the same rule as `hold_reason`)."""
    if not mailbox.has_imap:
        if mailbox.follow_ups_without_reply_view:
            return ViewStatus("reads no replies: follow-ups are sent without reading replies", False)
        return ViewStatus("reads no replies: follow-ups held (connect its inbox)", True)
    folders = set(mailbox.imap_folders or ["INBOX"])
    views = [c for c in cursors if c.folder in folders]
    unread = [c.unread_since for c in views if c.unread_since is not None]
    if unread:
        return ViewStatus(f"new mail since {min(unread):%H:%M:%S} UTC is being read: follow-ups held", True)
    read = [c.read_through for c in views if c.read_through is not None]
    if len(read) < len(folders):
        return ViewStatus("replies not read yet: follow-ups held until the first poll" + _why(mailbox), True)
    oldest = min(read)
    if now - oldest > timedelta(seconds=max_age_seconds(mailbox)):
        return ViewStatus(f"not reading replies since {oldest:%Y-%m-%d %H:%M} UTC: follow-ups held" + _why(mailbox),
                          True)
    return ViewStatus(f"replies read up to {_ago(now - oldest)} ago", False)
