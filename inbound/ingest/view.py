"""The reply view of each folder, as ingestion and the IDLE watcher know it (`sequences.reply_view` reads it).

Two marks on the folder's cursor, both on the database clock:

- `read_through`: every message that reached the folder before it has been ingested. A poll of the folder
  that completes sets it to when that pass began (`folder_read_through`); the IDLE watcher advances it to the
  time it read before a command whose answer showed nothing beyond the folder's cursor
  (`folders_quiet_through`, every few seconds while its connection is healthy). A failed login, a timeout, a
  missing folder or a server that stops answering moves nothing, so the view grows stale on its own.
- `unread_since`: the watcher heard of new mail in the folder (`folder_unread_mark`), before it asks for the
  poll. The final check holds the mailbox's follow-ups while such a mark is not covered by a completed pass:
  the reply it may carry is known to be on its way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from functools import reduce
from operator import or_

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


def folders_quiet_through(*, folders: Iterable[tuple[int, str]], at: datetime) -> int:
    """The watcher's healthy connections showed nothing beyond these folders' cursors (mailbox id, folder) in
    answers to commands sent after `at`, and nothing heard of before is unread: each is read through `at`, in
    one UPDATE. An unread mark stays until a poll lifts it. How many folders moved forward."""
    by_mailbox: dict[int, set[str]] = defaultdict(set)
    for mailbox_id, folder in folders:
        by_mailbox[mailbox_id].add(folder)
    if not by_mailbox:
        return 0
    which = reduce(or_, (Q(mailbox_id=pk, folder__in=sorted(names)) for pk, names in by_mailbox.items()))
    return ImapCursor.objects.filter(which, unread_since__isnull=True).filter(
        Q(read_through__isnull=True) | Q(read_through__lt=at)).update(read_through=at)
