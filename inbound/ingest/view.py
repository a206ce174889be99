"""The reply view of each folder, as ingestion and the IDLE watcher know it (`sequences.reply_view` reads it).

Two marks on the folder's cursor, both on the database clock:

- `read_through`: every message that reached the folder before it has been ingested. A poll of the folder
  that completes sets it to when that pass began (`folder_read_through`); the IDLE watcher advances it
  while its connection is healthy and no new mail arrived (`folder_quiet_through`). A failed login, a
  timeout or a missing folder moves nothing, so the view grows stale on its own.
- `unread_since`: the watcher heard of new mail in the folder (`folder_unread_mark`), before it asks for the
  poll. The final check holds the mailbox's follow-ups while such a mark is not covered by a completed pass:
  the reply it may carry is known to be on its way.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

from db.clock import DbClock
from mailboxes.models import ImapCursor


def folder_unread_mark(*, mailbox_id: int, folder: str) -> None:
    """New mail is in the folder now and not yet read: mark it (the earliest mark stays)."""
    ImapCursor.objects.get_or_create(mailbox_id=mailbox_id, folder=folder)
    ImapCursor.objects.filter(mailbox_id=mailbox_id, folder=folder, unread_since__isnull=True).update(
        unread_since=DbClock())


def folder_read_through(*, mailbox_id: int, folder: str, at: datetime) -> None:
    """Everything that reached the folder before `at` has been ingested: move its read-through time forward
    (never back), and lift an unread mark made before `at` (a later one stays for the next pass)."""
    cursors = ImapCursor.objects.filter(mailbox_id=mailbox_id, folder=folder)
    cursors.filter(Q(read_through__isnull=True) | Q(read_through__lt=at)).update(read_through=at)
    cursors.filter(unread_since__lte=at).update(unread_since=None)


def folder_quiet_through(*, mailbox_id: int, folder: str, at: datetime) -> None:
    """The watcher's healthy connection saw no new mail in the folder up to `at`, and nothing it heard of
    before is unread: the folder is read through `at`. An unread mark stays until a poll lifts it."""
    ImapCursor.objects.filter(mailbox_id=mailbox_id, folder=folder, unread_since__isnull=True).filter(
        Q(read_through__isnull=True) | Q(read_through__lt=at)).update(read_through=at)
