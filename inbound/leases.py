"""Several IDLE watcher processes, each folder watched once: leases in the database.

Every `watch_mailboxes` process, on any host, runs a `LeaseKeeper` next to its watcher. Each reply folder
has one `WatchLease` row: who holds it (host:pid:random) and until when, on the database clock. A process
watches exactly the folders whose lease it holds. Every third of a lease (OUTREACH_WATCHER_LEASE_SECONDS,
15 s by default) each process runs one round:

1. it renews its own row in `WatcherProcess` (so every process knows how many watchers share the folders)
   and the leases it holds (`holder = me`: a lease another process took is no longer renewed);
2. its fair share is the folders divided by the live watchers, rounded up. Holding more, it gives up the
   surplus (a new process gets folders within a round); holding fewer, it takes free or expired leases;
3. a round takes for at most a third of a lease (then the next round goes on), each take with a lease
   counted from its own moment: a first round over hundreds of accounts would otherwise outlast the leases
   it took at its start, and other processes would take them while this one still watches them;
4. a take is a guarded compare-and-set, `update(holder=me)` filtered on "nobody holds it, or its lease
   expired, or it is mine", so two processes never both win a folder. Takes for one IMAP account run in
   one transaction that first locks that account's lease rows (`select_for_update`; on SQLite the
   IMMEDIATE transaction takes the write lock), then counts its live leases: the per-account limit
   (OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT) holds across processes.

A process that dies stops renewing: its leases and its `WatcherProcess` row expire together, and the next
round of any survivor takes the folders (within a lease and a third, 20 s by default). Its catch-up poll
(inbound.watcher, every new connection asks for one) reads what arrived meanwhile and advances the
folder's reply view; until then the view only ages, so follow-ups are held rather than sent blind. A
process that stops (SIGTERM) gives its leases up at once. One that cannot reach the database keeps
watching only until its leases would have expired, then closes every connection: by then another process
may hold them. A paused process (SIGSTOP) may still hold connections when it wakes after a take-over; its
next round finds the leases gone and closes them, so a folder is briefly watched twice, never unwatched.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import socket
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from db.clock import db_now
from mailboxes.models import Mailbox

from .models import WatcherProcess, WatchLease

log = logging.getLogger("outreach.ingest")
FolderKey = tuple[int, str]  # (mailbox id, folder)


def lease_seconds() -> float:
    return float(settings.OUTREACH_WATCHER_LEASE_SECONDS)


def account_of(mailbox: Mailbox) -> str:
    """The IMAP account a connection logs in to (host and login): what the per-account limit counts."""
    return f"{mailbox.imap_host.strip().lower()}:{mailbox.imap_port} {mailbox.imap_username.strip().lower()}"


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclass(frozen=True)
class Round:
    """What one round decided: the folders this process holds now, and the counts for its log line."""

    mine: frozenset[FolderKey]
    watchers: int
    share: int
    taken: int
    released: int


class LeaseKeeper:
    """This process's side of the watch leases."""

    def __init__(self, *, holder: str | None = None, seconds: float | None = None, per_account: int | None = None):
        self.holder = holder or holder_name()
        self.seconds = lease_seconds() if seconds is None else seconds
        self.per_account = settings.OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT if per_account is None else per_account
        self.every = self.seconds / 3  # rounds per lease: a renewal may miss twice before the lease expires

    def round(self, folders: dict[FolderKey, str], *, every_mailbox: bool = True) -> Round:
        """Renew, rebalance and take, for `folders` (each with its account); the folders held afterwards.

        `every_mailbox`: `folders` are all the configured ones, so lease rows of any other folder are removed
        (a process started with --mailbox sees one mailbox and leaves the other rows alone)."""
        now = db_now()
        until = now + timedelta(seconds=self.seconds)
        WatcherProcess.objects.update_or_create(name=self.holder, defaults={"expires_at": until})
        WatcherProcess.objects.filter(expires_at__lt=now - timedelta(hours=1)).delete()
        watchers = WatcherProcess.objects.filter(expires_at__gt=now).count()
        WatchLease.objects.filter(holder=self.holder).update(expires_at=until)
        rows = self._rows(folders, prune=every_mailbox)
        share = math.ceil(len(folders) / max(watchers, 1))
        mine = [r for r in rows if r.holder == self.holder]
        released = taken = 0
        if len(mine) > share:
            surplus = sorted(mine, key=lambda r: (r.taken_at or now, r.pk))[share:]  # the newest go
            released = self._release([r.pk for r in surplus])
        elif len(mine) < share:
            taken = self._take(rows, wanted=share - len(mine))
        held = frozenset((m, f) for m, f in WatchLease.objects.filter(holder=self.holder).values_list(
            "mailbox_id", "folder") if (m, f) in folders)
        WatcherProcess.objects.filter(name=self.holder).update(folders=len(held))
        return Round(held, watchers, share, taken, released)

    def release_all(self) -> None:
        """Give every lease up and leave the watchers (a stop): the others take the folders at their next round."""
        WatchLease.objects.filter(holder=self.holder).update(holder="", expires_at=None)
        WatcherProcess.objects.filter(name=self.holder).delete()

    # --- the rows ----------------------------------------------------------------------------------------

    def _rows(self, folders: dict[FolderKey, str], *, prune: bool) -> list[WatchLease]:
        """The lease rows of `folders`, made when missing, their account kept current. Rows of folders no
        longer configured, held by nobody live, are removed."""
        rows = {(r.mailbox_id, r.folder): r for r in WatchLease.objects.all()}
        missing = [WatchLease(mailbox_id=m, folder=f, account=a) for (m, f), a in folders.items()
                   if (m, f) not in rows]
        if missing:
            WatchLease.objects.bulk_create(missing, ignore_conflicts=True)  # another process may make them too
            rows = {(r.mailbox_id, r.folder): r for r in WatchLease.objects.all()}
        for key, row in rows.items():
            if key in folders and row.account != folders[key]:  # the mailbox now logs in elsewhere
                WatchLease.objects.filter(pk=row.pk).update(account=folders[key])
                row.account = folders[key]
        gone = [r.pk for k, r in rows.items() if k not in folders and r.holder in ("", self.holder)]
        if gone and prune:
            WatchLease.objects.filter(pk__in=gone).filter(Q(holder="") | Q(holder=self.holder)).delete()
        return [r for k, r in rows.items() if k in folders]

    def _release(self, pks: list[int]) -> int:
        return WatchLease.objects.filter(pk__in=pks, holder=self.holder).update(holder="", expires_at=None)

    def _take(self, rows: list[WatchLease], *, wanted: int) -> int:
        """Take up to `wanted` free or expired leases, one transaction per account, under its limit, for at most
        a third of a lease (`every`): the next round takes the rest, after renewing what this one took."""
        now = db_now()
        free = defaultdict(list)
        for row in rows:
            if row.holder != self.holder and (not row.holder or row.expires_at is None or row.expires_at <= now):
                free[row.account].append(row.pk)
        taken = 0
        stop_at = time.monotonic() + self.every
        # Accounts in turn, fewest free first: a share spreads over accounts rather than filling one.
        for account, pks in sorted(free.items(), key=lambda item: len(item[1])):
            if taken >= wanted or time.monotonic() >= stop_at:
                break
            taken += self._take_in(account, pks, wanted=wanted - taken)
        return taken

    def _take_in(self, account: str, pks: list[int], *, wanted: int) -> int:
        now = db_now()  # this take's own moment: its lease runs a whole lease from here
        until = now + timedelta(seconds=self.seconds)
        with transaction.atomic(durable=True):
            # The account's rows, locked: two processes taking leases of one account count one after the other.
            held = list(WatchLease.objects.select_for_update().filter(account=account).values_list(
                "holder", "expires_at"))
            live = sum(1 for holder, expires in held if holder and expires is not None and expires > now)
            room = min(wanted, self.per_account - live)
            if room <= 0:
                return 0
            expired = Q(holder="") | Q(expires_at__isnull=True) | Q(expires_at__lte=now)
            chosen = list(WatchLease.objects.filter(pk__in=pks, account=account).filter(expired).values_list(
                "pk", flat=True)[:room])
            return WatchLease.objects.filter(pk__in=chosen).filter(expired).update(
                holder=self.holder, expires_at=until, taken_at=now, term=F("term") + 1)


def watchers_live() -> list[WatcherProcess]:
    """The watcher processes whose row has not expired (for /healthz and the tests)."""
    return list(WatcherProcess.objects.filter(expires_at__gt=db_now()).order_by("name"))
