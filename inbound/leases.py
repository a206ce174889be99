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
   IMMEDIATE transaction takes the write lock), then counts its live leases: the per-account limit holds
   across processes.

The per-account limit is the server's own connection limit less two connections left to the polls (a poll of
the mailbox, a connection check): Gmail allows 15 connections per account, Microsoft 365 20 per mailbox, and
any other server `OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT` (10 by default, Dovecot's
`mail_max_userip_connections`); `OUTREACH_IMAP_CONNECTION_LIMITS` names other figures by host. Folders beyond
it hold no lease: the periodic poll reads them, on one connection with the mailbox's other folders, and the
mailbox page says so (`folders_watching`).

A process that dies stops renewing: its leases and its `WatcherProcess` row expire together, and the next
round of any survivor takes the folders (within a lease and a third, 20 s by default). A survivor on the same
machine does not wait that long: each round looks whether the process of every other holder of this machine
(the same host name and PID namespace, `holder_gone`) still runs, and expires the rows and leases of one that
does not at once, so its folders are taken within a round (a third of a lease, 5 s by default). Its catch-up poll
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
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from db.clock import db_now
from mailboxes.models import Mailbox

from .models import WatcherProcess, WatchLease

log = logging.getLogger("outreach.ingest")
FolderKey = tuple[int, str]  # (mailbox id, folder)
POLL_ROOM = 2  # connections of an account the watchers leave to the polls (a poll, a connection check)
# Connections one account may hold at once, as the providers document them.
KNOWN_LIMITS = {
    "imap.gmail.com": 15,  # Gmail: 15 simultaneous IMAP connections per account
    "outlook.office365.com": 20,  # Microsoft 365 (Exchange Online): 20 per mailbox
}


def lease_seconds() -> float:
    return float(settings.OUTREACH_WATCHER_LEASE_SECONDS)


def account_of(mailbox: Mailbox) -> str:
    """The IMAP account a connection logs in to (host and login): what the per-account limit counts."""
    return f"{mailbox.imap_host.strip().lower()}:{mailbox.imap_port} {mailbox.imap_username.strip().lower()}"


def account_host(account: str) -> str:
    """The host of an account as `account_of` writes it ("host:port login")."""
    return account.split(" ", 1)[0].rpartition(":")[0]


@dataclass(frozen=True)
class Limit:
    """An IMAP server's connections per account, where the figure comes from, and how many the watchers use."""

    host: str
    connections: int
    source: str  # "known" (the provider's documented limit), "setting" (OUTREACH_IMAP_CONNECTION_LIMITS), "default"

    @property
    def idle(self) -> int:
        return max(self.connections - POLL_ROOM, 0)


def connection_limit(host: str) -> Limit:
    """The connection limit of `host` per account: OUTREACH_IMAP_CONNECTION_LIMITS names it, else the provider's
    documented one, else OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT."""
    host = host.strip().lower()
    named = _limits_setting()
    if host in named:
        return Limit(host, named[host], "setting")
    if host in KNOWN_LIMITS:
        return Limit(host, KNOWN_LIMITS[host], "known")
    return Limit(host, settings.OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT, "default")


def _limits_setting() -> dict[str, int]:
    """OUTREACH_IMAP_CONNECTION_LIMITS ("host=N,host=N"); an entry that is not host=number is left out (the
    watcher says so when it starts: `limits_setting_problem`)."""
    out = {}
    for entry in _entries():
        host, _, number = entry.partition("=")
        if host.strip() and number.strip().isdigit():
            out[host.strip().lower()] = int(number)
    return out


def limits_setting_problem() -> str:
    """What is wrong with OUTREACH_IMAP_CONNECTION_LIMITS, in words ("" when nothing)."""
    bad = [entry for entry in _entries() if not (entry.partition("=")[0].strip()
                                                  and entry.partition("=")[2].strip().isdigit())]
    return (f"OUTREACH_IMAP_CONNECTION_LIMITS: {', '.join(repr(b) for b in bad)} not host=number (e.g. "
            "imap.example.com=20): left out, those servers get the default limit") if bad else ""


def _entries() -> list[str]:
    return [part.strip() for part in settings.OUTREACH_IMAP_CONNECTION_LIMITS.split(",") if part.strip()]


def holder_name() -> str:
    """host:pid:space.random: `space` names this process's PID namespace (`pid_space`), so that another watcher
    of the same machine can tell whether the process still runs (`holder_gone`)."""
    return f"{socket.gethostname()}:{os.getpid()}:{pid_space()}.{secrets.token_hex(3)}"


def pid_space() -> str:
    """This process's PID namespace: the inode of /proc/self/ns/pid ("-" where there is none to read). Two
    containers may share a host name; they do not share a PID namespace."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def holder_gone(holder: str) -> bool:
    """Whether `holder` (a `holder_name`) is a process of this machine that no longer runs: the same host name and
    PID namespace as this process, and its PID names no process, or a zombie (killed, not yet reaped).

    Anything else is not known gone, and its leases expire in their own time: a holder on another host, or in
    another PID namespace, or of an older form; and a PID that runs, even when it is some other process's now."""
    host, _, rest = holder.partition(":")
    pid, _, token = rest.partition(":")
    space = token.partition(".")[0]
    if host != socket.gethostname() or space in ("-", "") or space != pid_space() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # a process of another user runs under that PID
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except OSError:  # it ended between the two looks
        return True


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
        """`per_account`: IDLE connections per account for every server (else each server's, `connection_limit`)."""
        self.holder = holder or holder_name()
        self.seconds = lease_seconds() if seconds is None else seconds
        self.per_account = per_account
        self.every = self.seconds / 3  # rounds per lease: a renewal may miss twice before the lease expires

    def round(self, folders: dict[FolderKey, str], *, every_mailbox: bool = True) -> Round:
        """Renew, rebalance and take, for `folders` (each with its account); the folders held afterwards.

        `every_mailbox`: `folders` are all the configured ones, so lease rows of any other folder are removed
        (a process started with --mailbox sees one mailbox and leaves the other rows alone)."""
        now = db_now()
        until = now + timedelta(seconds=self.seconds)
        self._expire_gone(now)
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

    def _expire_gone(self, now: datetime) -> None:
        """The row and leases of every other watcher of this machine whose process no longer runs (`holder_gone`)
        expire now: this round counts it out of the watchers and takes its folders, as it would after its
        leases ran out."""
        names = set(WatcherProcess.objects.filter(expires_at__gt=now).values_list("name", flat=True))
        names |= set(WatchLease.objects.filter(expires_at__gt=now).exclude(holder="").values_list(
            "holder", flat=True).distinct())
        for name in sorted(names - {self.holder}):
            if holder_gone(name):
                log.warning("IDLE watcher %s no longer runs: its folders are taken over now", name)
                WatcherProcess.objects.filter(name=name, expires_at__gt=now).update(expires_at=now)
                WatchLease.objects.filter(holder=name, expires_at__gt=now).update(expires_at=now)

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
            cap = self.per_account if self.per_account is not None else connection_limit(account_host(account)).idle
            room = min(wanted, cap - live)
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


class Watching(StrEnum):
    """How a reply folder is read now, for the mailbox page."""

    IDLE = "idle"  # a live watcher holds its lease: pushes at once, a heartbeat every few seconds
    OVER_LIMIT = "over_limit"  # the account's connections for IDLE are all in use: read by the periodic poll only
    NO_WATCHER = "no_watcher"  # no watcher process runs: read by the periodic poll only
    WAITING = "waiting"  # a watcher runs and has not taken it yet: its next lease round does


@dataclass(frozen=True)
class FolderWatching:
    state: Watching
    words: str


def folders_watching(mailboxes: list[Mailbox]) -> dict[FolderKey, FolderWatching]:
    """Each reply folder of `mailboxes` (those with IMAP): watched with IDLE, or read by the periodic poll only and
    why (three queries)."""
    now = db_now()
    boxes = [box for box in mailboxes if box.has_imap]
    live = Q(expires_at__gt=now) & ~Q(holder="")
    held = set(WatchLease.objects.filter(live, mailbox_id__in=[b.pk for b in boxes]).values_list("mailbox_id",
                                                                                              "folder"))
    accounts = {account_of(box) for box in boxes}
    in_use = Counter(WatchLease.objects.filter(live, account__in=accounts).values_list("account", flat=True))
    watchers = WatcherProcess.objects.filter(expires_at__gt=now).exists()
    every = f"every {settings.OUTREACH_POLL_INTERVAL} s"
    out = {}
    for box in boxes:
        account = account_of(box)
        limit = connection_limit(account_host(account))
        for folder in box.reply_folders:
            if (box.pk, folder) in held:
                out[box.pk, folder] = FolderWatching(Watching.IDLE, "watched with IDLE")
            elif not watchers:
                out[box.pk, folder] = FolderWatching(Watching.NO_WATCHER,
                                                     f"read by polling only ({every}): no IDLE watcher is running")
            elif in_use[account] >= limit.idle:
                out[box.pk, folder] = FolderWatching(Watching.OVER_LIMIT, (
                    f"read by polling only ({every}), over the connection limit: {limit.host} allows "
                    f"{limit.connections} connections per account, {limit.idle} for IDLE (all in use) and "
                    f"{limit.connections - limit.idle} for polls"))
            else:
                out[box.pk, folder] = FolderWatching(Watching.WAITING,
                                                     "not watched yet: a watcher takes it at its next lease round")
    return out
