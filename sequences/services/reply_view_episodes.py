"""Episodes of a mailbox's reply view: one timeline event when it goes blind, one when it reads again.

A mailbox that reads replies (IMAP) is *blind* while its view is stale (a reply folder read through a time
older than its `reply_view_max_age`), or never read and older than that age, or while the IMAP server refuses its
credentials (from the first refusal since a login was accepted, however an older IDLE session still reads:
`sequences.services.imap_login`, whose own event says so at once). An episode starts with one
`mailbox_reply_view_stale` event and ends with one `mailbox_reply_view_restored`; the outbox turns them into
the webhooks `mailbox.reply_view_stale` and `mailbox.reply_view_restored`. A mark of mail heard of but not
read yet (`View.UNREAD`) holds follow-ups for seconds; it neither starts nor ends an episode.

The mailbox row keeps the episode: `Mailbox.reply_view_blind_since` is set when it starts and cleared when it
ends, in the transaction that writes the event. The end also makes the follow-ups the mailbox held for its view
due at once, each back through the final check (`mailbox_health.held_release`): they leave within the sweep's
interval of the view reading again, not at their next check. A sweep compares it with the view now and changes what
differs, under the mailbox's row lock, so two sweeps at once write each event once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from db.clock import db_now
from mailboxes.models import Mailbox

from ..loads import FolderViews, folder_views
from ..locks import mailbox_lock
from ..reasons import Reason
from ..reply_view import View, max_age_seconds, refused_words, view_of
from ..timeline import Event, event_record, iso
from .mailbox_health import held_release

EPISODE_KINDS = (Event.MAILBOX_REPLY_VIEW_STALE, Event.MAILBOX_REPLY_VIEW_RESTORED)


@dataclass(frozen=True)
class Change:
    mailbox: str
    kind: Event


def read_views(mailbox: Mailbox) -> FolderViews:
    """The read-through times of the mailbox's reply folders, without unread marks: a mark says the watcher's
    connection is up and a poll is on its way, which neither starts nor ends an episode."""
    folders = set(mailbox.reply_folders)
    return folder_views((c.read_through, None) for c in mailbox.cursors.all() if c.folder in folders)


def blind_since(mailbox: Mailbox, *, now: datetime) -> datetime | None:
    """When the mailbox's reply view went blind (the read-through time plus the max age), or None when it sees
    (or reads no replies at all: a configuration, not an episode)."""
    views = read_views(mailbox)
    view = view_of(mailbox, views, now=now)
    age = timedelta(seconds=max_age_seconds(mailbox))
    if view == View.REFUSED:
        return mailbox.imap_login_refused_at
    if view == View.STALE:
        return views.read_through + age
    if view == View.NEVER_READ and now - mailbox.created_at > age:
        return mailbox.created_at + age
    return None


def reply_view_episodes_sweep() -> list[Change]:
    """Write the start or the end of each IMAP mailbox's blind episode that its row does not say yet.

    Reads without a lock; a change is written in its own short transaction that locks the mailbox and decides
    again."""
    now = db_now()
    changes = []
    for mailbox in Mailbox.objects.exclude(imap_host="").prefetch_related("cursors"):
        blind = blind_since(mailbox, now=now) is not None
        if blind != (mailbox.reply_view_blind_since is not None) and _write(mailbox.pk, blind=blind):
            changes.append(Change(mailbox.name, Event.MAILBOX_REPLY_VIEW_STALE if blind else
                                  Event.MAILBOX_REPLY_VIEW_RESTORED))
    return changes


def _write(mailbox_id: int, *, blind: bool) -> bool:
    """Start (blind) or end the episode under the mailbox's lock, unless a sweep just did."""
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        since = blind_since(mailbox, now=db_now())
        started = mailbox.reply_view_blind_since
        if (since is not None) != blind or (started is not None) == blind:
            return False
        Mailbox.objects.filter(pk=mailbox.pk).update(reply_view_blind_since=since)
        common = {"mailbox": mailbox.name, "mailbox_id": mailbox.pk,
                  "read_through": iso(read_views(mailbox).read_through), "max_age_seconds": max_age_seconds(mailbox)}
        if blind:
            reason = refused_words(mailbox) if mailbox.imap_login_refused_at else mailbox.last_poll_error
            event_record(kind=Event.MAILBOX_REPLY_VIEW_STALE, version_seen=mailbox.version, blind_since=iso(since),
                         reason=reason, **common)
        else:
            released = held_release(mailbox=mailbox, reason=Reason.REPLY_VIEW_RESTORED)
            event_record(kind=Event.MAILBOX_REPLY_VIEW_RESTORED, version_seen=mailbox.version,
                         blind_since=iso(started), released=released, **common)
        return True
