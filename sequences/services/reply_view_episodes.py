"""Episodes of a mailbox's reply view: one timeline event when it goes blind, one when it reads again.

A mailbox that reads replies (IMAP) is *blind* while its view is stale (a reply folder read through a time
older than its `reply_view_max_age`), or never read and older than that age. An episode starts with one
`mailbox_reply_view_stale` event and ends with one `mailbox_reply_view_restored`; the outbox turns them into
the webhooks `mailbox.reply_view_stale` and `mailbox.reply_view_restored`. A mark of mail heard of but not
read yet (`View.UNREAD`) holds follow-ups for seconds; it neither starts nor ends an episode.

No column keeps the episode: the last of these two events of the mailbox *is* its state, found through the
timeline's indexed `email` column under the key `mailbox:<id>` (no person's address has that form, so a
person's search, export or erasure never meets it). A sweep compares that state with the view now and writes
the event that differs, under the mailbox's row lock, so two sweeps at once write it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import CharField, OuterRef, Subquery, Value
from django.db.models.functions import Cast, Concat

from db.sql import db_now
from mailboxes.models import Mailbox

from ..loads import FolderViews, folder_views
from ..locks import mailbox_lock
from ..models import TimelineEvent
from ..reply_view import View, max_age_seconds, view_of
from ..timeline import Event, event_record, iso

EPISODE_KINDS = (Event.MAILBOX_REPLY_VIEW_STALE, Event.MAILBOX_REPLY_VIEW_RESTORED)
BLIND = frozenset({View.STALE, View.NEVER_READ})


def episode_key(mailbox_id: int) -> str:
    """The timeline `email` under which a mailbox's reply-view episodes are written."""
    return f"mailbox:{mailbox_id}"


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
    if view == View.STALE:
        return views.read_through + age
    if view == View.NEVER_READ and now - mailbox.created_at > age:
        return mailbox.created_at + age
    return None


def reply_view_episodes_sweep() -> list[Change]:
    """Write the start or the end of each IMAP mailbox's blind episode that the timeline does not have yet.

    Reads without a lock; a change is written in its own short transaction that locks the mailbox and reads
    its last episode event again."""
    last_kind = Subquery(
        TimelineEvent.objects.filter(email=_key_of(OuterRef("pk")), kind__in=EPISODE_KINDS)
        .order_by("-at", "-id").values("kind")[:1]
    )
    mailboxes = list(Mailbox.objects.exclude(imap_host="").prefetch_related("cursors"))
    last = dict(Mailbox.objects.filter(pk__in=[m.pk for m in mailboxes]).annotate(k=last_kind).values_list("pk", "k"))
    now = db_now()
    changes = []
    for mailbox in mailboxes:
        blind = blind_since(mailbox, now=now) is not None
        if blind != (last[mailbox.pk] == Event.MAILBOX_REPLY_VIEW_STALE) and _write(mailbox.pk, blind=blind):
            changes.append(Change(mailbox.name, Event.MAILBOX_REPLY_VIEW_STALE if blind else
                                  Event.MAILBOX_REPLY_VIEW_RESTORED))
    return changes


def _key_of(pk) -> Concat:
    return Concat(Value("mailbox:"), Cast(pk, CharField()), output_field=CharField())


def _write(mailbox_id: int, *, blind: bool) -> bool:
    """Record the episode's start (blind) or end under the mailbox's lock, unless a sweep just did."""
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        key = episode_key(mailbox_id)
        last = (TimelineEvent.objects.filter(email=key, kind__in=EPISODE_KINDS).order_by("-at", "-id")
                .values_list("kind", "at").first())
        now = db_now()
        since = blind_since(mailbox, now=now)
        was_blind = last is not None and last[0] == Event.MAILBOX_REPLY_VIEW_STALE
        if (since is not None) != blind or was_blind == blind:
            return False
        common = {"mailbox": mailbox.name, "read_through": iso(read_views(mailbox).read_through),
                  "max_age_seconds": max_age_seconds(mailbox)}
        if blind:
            event_record(kind=Event.MAILBOX_REPLY_VIEW_STALE, email=key, version_seen=mailbox.version,
                         blind_since=iso(since), reason=mailbox.last_poll_error, **common)
        else:
            event_record(kind=Event.MAILBOX_REPLY_VIEW_RESTORED, email=key, version_seen=mailbox.version,
                         stale_event_at=iso(last[1]) if last else "", **common)
        return True
