"""Can't see, don't send: whether a follow-up may leave on what the mailbox has read of its replies.

The final check is exact against what the database has committed; this makes it honest about what the
database has not seen yet. A follow-up (a message to a person this mailbox has already mailed) is held,
never failed, while:

- the IMAP server refused the mailbox's credentials on any connection, since no login was accepted
  (`sequences.services.imap_login`): a session that logged in before a password change may still read, but
  the next one will not, and a poll cannot read what the watcher heard of. This wins over every other state;
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
from enum import StrEnum

from django.conf import settings

from mailboxes.models import ImapCursor, Mailbox

from .loads import Facts, FolderViews, folder_views


def max_age_seconds(mailbox: Mailbox) -> int:
    return settings.OUTREACH_REPLY_VIEW_MAX_AGE if mailbox.reply_view_max_age is None else mailbox.reply_view_max_age


class View(StrEnum):
    """What a mailbox's reply view is now: the one rule the final check and the pages read."""

    NOT_READ_ALLOWED = "not_read_allowed"  # no IMAP, and its configuration sends follow-ups anyway
    NOT_READ = "not_read"  # no IMAP: follow-ups wait
    REFUSED = "refused"  # the IMAP server refused the mailbox's credentials and has accepted no login since
    UNREAD = "unread"  # the watcher heard of mail no completed poll has read
    NEVER_READ = "never_read"  # a reply folder has no read-through time yet
    STALE = "stale"  # read longer ago than the mailbox's max age
    FRESH = "fresh"


HOLDING = frozenset({View.NOT_READ, View.REFUSED, View.UNREAD, View.NEVER_READ, View.STALE})


def view_of(mailbox: Mailbox, views: FolderViews, *, now: datetime) -> View:
    if not mailbox.has_imap:
        return View.NOT_READ_ALLOWED if mailbox.follow_ups_without_reply_view else View.NOT_READ
    if mailbox.imap_login_refused_at is not None:
        return View.REFUSED
    if views.unread_since is not None:
        return View.UNREAD
    if views.read < len(mailbox.reply_folders) or views.read_through is None:
        return View.NEVER_READ
    if now - views.read_through > timedelta(seconds=max_age_seconds(mailbox)):
        return View.STALE
    return View.FRESH


def hold_reason(mailbox: Mailbox, facts: Facts) -> str:
    """Why this job must wait for the mailbox to read its replies, in words; '' when it may go."""
    if not facts.follow_up:
        return ""
    views, now = facts.views, facts.now
    view = view_of(mailbox, views, now=now)
    if view == View.NOT_READ:
        return ("this mailbox reads no replies (no IMAP): follow-ups wait; connect its inbox, or tick "
                "\"Follow-ups without reply view\" on its Edit page")
    if view == View.REFUSED:
        return f"waiting to read replies: {refused_words(mailbox)}"
    if view == View.UNREAD:
        return f"waiting to read replies: new mail arrived {_ago(now - views.unread_since)} ago and is being read"
    if view == View.NEVER_READ:
        return "waiting to read replies: the reply folders have not all been read yet" + _why(mailbox)
    if view == View.STALE:
        return f"waiting to read replies: last read {_ago(now - views.read_through)} ago" + _why(mailbox)
    return ""


def view_age_seconds(facts: Facts) -> float | None:
    """How long before the final check the replies were read through (for the authorization's event)."""
    if facts.views.read_through is None:
        return None
    return round(max((facts.now - facts.views.read_through).total_seconds(), 0.0), 3)


def hand_off_words(seconds: float | None, *, first_message: bool) -> str:
    """The evidence an authorization carries, in words: how long before the hand-off the replies were read
    through (its event's `replies_read_seconds_before`)."""
    if seconds is None:
        return ("no reply view needed: a first message to this person" if first_message
                else "sent without reading replies (the mailbox allows follow-ups without reply view)")
    if seconds < 120:
        return f"replies read up to {seconds:.1f} s before the hand-off"
    return f"replies read up to {_ago(timedelta(seconds=seconds))} before the hand-off"


def refused_words(mailbox: Mailbox) -> str:
    """The credentials refused, in words: since when, and the server's own words (a held job's, an episode's)."""
    return f"credentials refused since {mailbox.imap_login_refused_at:%Y-%m-%d %H:%M:%S} UTC{_refusal(mailbox)}"


def _refusal(mailbox: Mailbox) -> str:
    return f" ({mailbox.imap_login_refused_error})" if mailbox.imap_login_refused_error else ""


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
    risky: bool = False  # follow-ups leave without anything read of the replies: the pages show it as a warning

    @property
    def tone(self) -> str:
        """The label's colour: amber while held or sent blind, green when replies are read."""
        return "unknown" if self.holding else "stale-view" if self.risky else "sent"


def view_status(mailbox: Mailbox, cursors: list[ImapCursor], *, now: datetime) -> ViewStatus:
    """The reply view of `mailbox` in words, from its folders' cursors (`view_of`, as the final check)."""
    folders = set(mailbox.reply_folders)
    views = folder_views((c.read_through, c.unread_since) for c in cursors if c.folder in folders)
    view = view_of(mailbox, views, now=now)
    holding = view in HOLDING
    if view == View.NOT_READ_ALLOWED:
        return ViewStatus("reads no replies: follow-ups are sent without reading replies", holding, risky=True)
    if view == View.NOT_READ:
        return ViewStatus("reads no replies: follow-ups held (connect its inbox)", holding)
    if view == View.REFUSED:
        waiting = f"; new mail since {views.unread_since:%H:%M:%S} UTC waits to be read" if views.unread_since else ""
        since = mailbox.imap_login_refused_at
        return ViewStatus(f"credentials refused: not reading replies since {since:%Y-%m-%d %H:%M} UTC: follow-ups held"
                          f"{_refusal(mailbox)}{waiting}", holding)
    if view == View.UNREAD:
        return ViewStatus(f"new mail since {views.unread_since:%H:%M:%S} UTC is being read: follow-ups held", holding)
    if view == View.NEVER_READ:
        return ViewStatus("replies not read yet: follow-ups held until the first poll" + _why(mailbox), holding)
    if view == View.STALE:
        return ViewStatus(f"not reading replies since {views.read_through:%Y-%m-%d %H:%M} UTC: follow-ups held"
                          + _why(mailbox), holding)
    return ViewStatus(f"replies read up to {_ago(now - views.read_through)} ago", holding)
