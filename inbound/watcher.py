"""The IDLE watcher: one thread multiplexes every watched folder's connection (selectors), no thread per folder.

Connections are opened by a small pool (`OUTREACH_WATCHER_OPENERS` threads,
4 by default), so a server that accepts but never answers delays only its
own folders, never the others. Folders are handed to the pool one of each
mailbox in turn, so the logins in flight at once belong to different
mailboxes, not to one account's folders.

Each folder has one IMAP connection in IDLE. When the server pushes (EXISTS),
the watcher marks the folder unread (`inbound.ingest.view.folder_unread_mark`)
and only then asks for a poll of that mailbox (`on_new`): from the mark on, the
final check holds the mailbox's follow-ups until a poll has read the folder. It
does no ingestion itself. After `idle_seconds` in IDLE a folder is selected
again (the re-check) and what that SELECT says is compared with what the
watcher knew: a new UIDVALIDITY (a folder deleted and created again sends no
push), or a UIDNEXT or EXISTS that moved while no IDLE was listening (between
the DONE and the SELECT) beyond what was ingested, marks the folder and triggers
a poll; so does a connection opened on a folder whose UIDNEXT is beyond the
cursor's last UID (every new connection asks for a catch-up poll). A re-check
that finds no push and nothing beyond the cursor's last UID advances the
folder's read-through time to the database time taken before its own SELECT
(`folder_quiet_through`): one UPDATE per folder per round. A broken connection
is reopened with backoff and advances nothing; the periodic poll covers any
gap. A login the server refuses, here or on any other connection, marks the
mailbox's credentials refused (`sequences.services.imap_login`): a session that
logged in before a password change keeps its IDLE and its marks, but its quiet
re-checks no longer make the view trusted until a login is accepted again.
The mailbox list is read again at every lease round (every `refresh` seconds, at most a third of a
watch lease): added, changed and removed mailboxes are picked up without a restart. Any number of watcher
processes share the folders: each watches those whose lease it holds (inbound.leases).
The database failing costs a mark or an advance (logged), never the watcher or
a poll.
"""

from __future__ import annotations

import logging
import selectors
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connection

from db.clock import db_now
from mailboxes.imap.errors import ImapAuthError, ImapError
from mailboxes.imap.folders import FolderStatus
from mailboxes.imap.session import ImapSession
from mailboxes.models import ImapCursor, Mailbox
from mailboxes.selectors import imap_config_for

from .ingest.login import Connection, login_accepted, login_refused, login_wait
from .ingest.view import folder_quiet_through, folder_unread_mark
from .leases import LeaseKeeper, Round, account_of

log = logging.getLogger("outreach.ingest")
MAX_BACKOFF = 300.0
RECHECKS_PER_STEP = 8  # IDLE cycles renewed per turn of the loop, so pushes are read between them


@dataclass
class Watch:
    """One folder: its connection in IDLE, or when to try connecting again."""

    key: tuple
    mailbox: Mailbox
    folder: str
    session: ImapSession | None = None
    status: FolderStatus | None = None  # what the last SELECT said (UIDVALIDITY, UIDNEXT, EXISTS)
    idle_since: float = 0.0
    retry_at: float = 0.0
    backoff: float = 1.0
    opening: Future | None = None
    fd: int | None = None  # the registered socket (kept: a broken session may no longer report it)


class Watcher:
    def __init__(self, *, on_new: Callable[[int], None], idle_seconds: float = 300.0):
        self.on_new = on_new
        self.idle_seconds = idle_seconds
        self.selector = selectors.DefaultSelector()
        self.watches: dict[tuple, Watch] = {}
        self.openers = ThreadPoolExecutor(openers(), thread_name_prefix="imap-open")

    # --- the set of folders ----------------------------------------------------------------

    def reconcile(self, wanted: dict[tuple, tuple[Mailbox, str]]) -> None:
        for key in set(self.watches) - set(wanted):  # removed, its settings changed, or its lease given up
            watch = self.watches.pop(key)
            self._close(watch)
            if watch.opening is not None:  # a connection on its way: dropped when it arrives, never left open
                watch.opening.add_done_callback(_drop_opened)
                watch.opening = None
        for key in set(wanted) - set(self.watches):
            box, folder = wanted[key]
            self.watches[key] = Watch(key, box, folder)

    # --- one turn of the loop -----------------------------------------------------------------

    def step(self, timeout: float) -> None:
        """Open what is due, read what was pushed, re-check what idled long enough."""
        now = time.monotonic()
        to_open = []
        for watch in self.watches.values():
            if watch.opening is not None and watch.opening.done():
                self._opened(watch)
            elif watch.session is None and watch.opening is None and now >= watch.retry_at:
                to_open.append(watch)
        for watch in _one_of_each_mailbox_in_turn(to_open):
            watch.opening = self.openers.submit(_connect, watch.mailbox, watch.folder)
        for key, _ in self.selector.select(timeout=timeout):
            watch = key.data
            try:
                if watch.session is not None and watch.session.idle_poll():
                    self._new_mail(watch)
            except ImapError as exc:
                self._fail(watch, exc)
        now = time.monotonic()
        due = [w for w in self.watches.values() if w.session is not None and now - w.idle_since >= self.idle_seconds]
        # A few per turn, oldest first: folders opened together come due together, and re-checking a thousand
        # in one turn held every push behind them (`bench watcher`: 36 s at 1,000 folders).
        begun = _database("read the database clock", db_now) if due else None
        for watch in sorted(due, key=lambda w: w.idle_since)[:RECHECKS_PER_STEP]:
            self._recheck(watch, begun)

    def close(self) -> None:
        for watch in self.watches.values():
            self._close(watch)
        self.openers.shutdown(wait=False, cancel_futures=True)
        self.watches.clear()
        self.selector.close()

    # --- connections ----------------------------------------------------------------------------

    def _opened(self, watch: Watch) -> None:
        future, watch.opening = watch.opening, None
        try:
            session, status, pending = future.result()
        except ImapError as exc:
            self._fail(watch, exc)
            return
        if self.watches.get(watch.key) is not watch:  # removed while it was connecting
            session.drop()
            return
        watch.session, watch.status, watch.idle_since, watch.backoff = session, status, time.monotonic(), 1.0
        watch.fd = session.fileno()
        self.selector.register(watch.fd, selectors.EVENT_READ, watch)
        if pending or not _read_up_to(_cursor(watch), status):
            self._new_mail(watch)  # mail announced, or beyond what was ingested: marked before the poll
        else:
            self.on_new(watch.mailbox.pk)  # catch up on anything that arrived while we were not watching

    def _recheck(self, watch: Watch, begun: datetime | None) -> None:
        """DONE, SELECT again, IDLE again. Mail that arrives between the DONE and the SELECT is announced by
        neither IDLE; the SELECT's UIDNEXT and EXISTS show it, compared with what the watcher knew."""
        session = watch.session
        try:
            pushed = session.idle_done()
            status = session.select(watch.folder)
            read = _read_up_to(_cursor(watch), status, session)  # before IDLE: it may search the folder
            pushed = session.idle_start() or pushed
        except ImapError as exc:
            self._fail(watch, exc)
            return
        watch.idle_since = time.monotonic()
        known, watch.status = watch.status, status
        renewed = status.uidvalidity != known.uidvalidity
        moved = renewed or status.uidnext > known.uidnext or status.exists > known.exists
        if pushed or renewed or (moved and not read):
            self._new_mail(watch)
        elif read and begun is not None:
            # Every message that reached the folder before `begun` (read before this SELECT) got a UID below the
            # SELECT's UIDNEXT, and the folder holds nothing beyond the cursor: all of them were ingested (or
            # left the folder unread, which a poll could not tell either).
            _database(f"advance the reply view of {watch.mailbox.name}/{watch.folder}",
                      lambda: folder_quiet_through(mailbox_id=watch.mailbox.pk, folder=watch.folder, at=begun))

    def _new_mail(self, watch: Watch) -> None:
        """Mark the folder unread, then ask for the poll: the final check holds follow-ups from the mark on, so
        none leaves in the time the poll takes to read the reply. No mark (the database failing) still polls."""
        _database(f"mark {watch.mailbox.name}/{watch.folder} unread",
                  lambda: folder_unread_mark(mailbox_id=watch.mailbox.pk, folder=watch.folder))
        self.on_new(watch.mailbox.pk)

    def _fail(self, watch: Watch, exc: ImapError) -> None:
        log.warning("IDLE on %s/%s: %s; retrying in %.0fs (periodic polling continues)",
                    watch.mailbox.name, watch.folder, exc, watch.backoff)
        self._close(watch)
        watch.retry_at = time.monotonic() + watch.backoff
        watch.backoff = min(watch.backoff * 2, MAX_BACKOFF)

    def _close(self, watch: Watch) -> None:
        if watch.session is None:
            return
        if watch.fd is not None:
            try:
                self.selector.unregister(watch.fd)
            except (KeyError, ValueError, OSError):
                pass
            watch.fd = None
        watch.session.drop()  # it is in IDLE: no LOGOUT, the server drops it with the socket
        watch.session = None


def openers() -> int:
    """Connections opened at once (`OUTREACH_WATCHER_OPENERS`). Each waits on its server for the greeting,
    login, SELECT and IDLE: against distant servers more of them put many folders in IDLE sooner. Against
    the local Dovecot of `bench watcher` the server's own pace decides (16 opened 200 folders no faster
    than 4)."""
    return max(1, settings.OUTREACH_WATCHER_OPENERS)


def _one_of_each_mailbox_in_turn(watches: list[Watch]) -> list[Watch]:
    """The first folder of every mailbox, then the second of every mailbox, and so on (mailboxes in the order
    they come: the sort is stable)."""
    turn: dict[int, int] = {}
    ranked = []
    for watch in watches:
        turn[watch.mailbox.pk] = turn.get(watch.mailbox.pk, -1) + 1
        ranked.append((turn[watch.mailbox.pk], watch))
    return [watch for _, watch in sorted(ranked, key=lambda r: r[0])]


def _drop_opened(future: Future) -> None:
    """A connection opened for a folder no longer watched: log out of it (in the opener thread)."""
    if not future.cancelled() and future.exception() is None:
        future.result()[0].drop()


def _cursor(watch: Watch) -> ImapCursor | None:
    """What was ingested from the folder (None: never polled, or the database did not answer)."""
    return _database(f"read the cursor of {watch.mailbox.name}/{watch.folder}", lambda: ImapCursor.objects.filter(
        mailbox_id=watch.mailbox.pk, folder=watch.folder).only("uidvalidity", "last_uid").first())


def _read_up_to(cursor: ImapCursor | None, status: FolderStatus, session: ImapSession | None = None) -> bool:
    """Whether the folder holds nothing beyond what was ingested. UIDNEXT says so when the cursor has passed
    it; when the newest mail left the folder before it was read, UIDNEXT stays ahead of the cursor for good,
    and a search after the cursor's last UID (with the folder selected in `session`) decides, as for a poll."""
    if cursor is None or cursor.uidvalidity != status.uidvalidity:
        return False
    if status.uidnext - 1 <= cursor.last_uid:
        return True
    return session is not None and not session.uids_after(cursor.last_uid)


def _database[T](what: str, read_or_write: Callable[[], T]) -> T | None:
    """One statement of the watcher's; the database failing is logged and costs that statement (None), never
    the watcher: marks and advances are missed, polls are still asked for."""
    try:
        return read_or_write()
    except DatabaseError as exc:
        log.warning("IDLE watcher could not %s: %s", what, exc)
        connection.close_if_unusable_or_obsolete()  # a dropped connection is opened again on next use
        return None


def _connect(mailbox: Mailbox, folder: str) -> tuple[ImapSession, FolderStatus, bool]:
    """In an opener thread: log in, select, enter IDLE. (session, what the SELECT said, mail already announced).

    The login gate is the poller's (`inbound.ingest.login`): no login without a password, and after a refusal
    none before the next interval of the ladder."""
    try:
        mailbox = Mailbox.objects.get(pk=mailbox.pk)  # the gate as it is now, not as the list was read
        now = db_now()
        wait = login_wait(mailbox, now=now)
        if wait:
            raise ImapAuthError(wait)
        session = ImapSession(imap_config_for(mailbox))
        try:
            session.open()
        except ImapAuthError as exc:
            login_refused(mailbox, now=now, error=str(exc), connection=Connection.IDLE)
            session.drop()
            raise
        login_accepted(mailbox)
        try:
            status = session.select(folder)
            return session, status, session.idle_start()
        except ImapError:
            session.drop()
            raise
    finally:
        connection.close()  # an opener thread never keeps a database connection


def run(stop: threading.Event, *, name: str | None, on_new: Callable[[int], None], refresh: float,
        idle_seconds: float, say: Callable[[str], None], keeper: LeaseKeeper | None = None) -> None:
    """Watch, until `stop` and in this thread, the configured folders whose watch lease this process holds
    (inbound.leases: any number of watcher processes share the folders, each watched once)."""
    watcher = Watcher(on_new=on_new, idle_seconds=idle_seconds)
    keeper = keeper or LeaseKeeper()
    shown = None
    next_round = 0.0
    held_until: float | None = None  # when the leases held at the last round expire (this process's clock)
    try:
        while not stop.is_set():
            if time.monotonic() >= next_round:
                began = time.monotonic()
                outcome = _database("renew the watch leases", lambda: _lease_round(keeper, name))
                connection.close()
                if outcome is not None:
                    held, wanted = outcome
                    watcher.reconcile(wanted)
                    held_until = began + keeper.seconds
                    said = (held.watchers, len(wanted))
                    if said != shown:
                        shown = said
                        shared = f" ({held.watchers} watcher processes share the folders)" if held.watchers > 1 else ""
                        n = len(wanted)
                        say(f"watching {n} folder{'s' if n != 1 else ''} with IDLE{shared}" if wanted or held.share else
                            f"no IMAP mailbox configured yet: looking again every {keeper.every:.0f}s")
                elif held_until is not None and time.monotonic() >= held_until and watcher.watches:
                    # Leases not renewed in time: another process may hold them now. Close, never watch twice.
                    log.warning("IDLE watcher could not renew its watch leases: closing its %d connections",
                                len(watcher.watches))
                    watcher.reconcile({})
                    shown = None
                next_round = time.monotonic() + min(refresh, keeper.every)
            watcher.step(timeout=0.2)
    finally:
        watcher.close()
        _database("give the watch leases up", keeper.release_all)
        connection.close()


def _lease_round(keeper: LeaseKeeper, name: str | None) -> tuple[Round, dict[tuple, tuple[Mailbox, str]]]:
    boxes = {box.pk: box for box in watched(name)}
    folders = {(box.pk, folder): account_of(box) for box in boxes.values() for folder in box.reply_folders}
    held = keeper.round(folders, every_mailbox=name is None)
    return held, {key(boxes[pk], folder): (boxes[pk], folder) for pk, folder in held.mine}


def watched(name: str | None) -> list[Mailbox]:
    return list(Mailbox.objects.exclude(imap_host="").filter(**({"name": name} if name else {})).order_by("pk"))


def key(box: Mailbox, folder: str) -> tuple:
    """What a watch was opened with: a change to any of it opens a new one."""
    return (box.pk, folder, box.imap_host, box.imap_port, box.imap_username, box.imap_password_env,
            box.imap_password_sealed, box.imap_security, box.ca_file, box.auth, box.oauth2_refresh_token_sealed)
