"""The IDLE watcher: one thread multiplexes every watched folder's connection (selectors), no thread per folder.

Connections are opened by a small pool (`OUTREACH_WATCHER_OPENERS` threads,
4 by default), so a server that accepts but never answers delays only its
own folders, never the others. At most one connection of a mailbox is being
opened at a time, the mailboxes in order: the logins in flight at once belong
to different accounts, an account sees its connections arrive one after
another (the pace of its own server's answers), and a mailbox's folders are
all open within moments of each other, so the catch-up polls they ask for
merge into a few passes of the mailbox (`enqueue_poll_merged`: a pass that
runs takes the asks of every folder standing when it begins, and those left
when it ends) instead of a pass per folder spread over the whole start.

Each folder has one IMAP connection in IDLE, driven without blocking once open (mailboxes.imap.idle_line): a
server that stops answering holds up only its own folder. When the server pushes (EXISTS), the watcher marks the
folder unread (`inbound.ingest.view.folder_unread_mark`) and only then asks for a poll of that folder
(`on_new(mailbox id, folder)`): from the mark on, the final check holds the mailbox's follow-ups until a poll has
read the folder. The poll reads that folder only, so a reply waits for one folder's pass, not its mailbox's; the
other folders' cursors and reply views are left to their own pushes, heartbeats and the periodic poll of every
folder. It does no ingestion itself.

The heartbeat: every `OUTREACH_WATCHER_HEARTBEAT_SECONDS` (5 s) each folder leaves IDLE for a NOOP and enters it
again, the commands sent in turn as each is answered while the thread serves the other folders. The database
time is read before the NOOP is sent; the NOOP makes the server sync the folder, so every message delivered
before that time is announced in its answer or was announced before. An answer that announces nothing, on a
folder whose connection has shown nothing beyond the cursor's last UID since it last looked (and a UID SEARCH
after the cursor, asked for with the NOOP whenever mail was announced since), advances the folder's
replies-read-through time to the time read (`folders_quiet_through`, one UPDATE for the folders of a round).
So the view trails real time by a heartbeat and a round trip, not an IDLE cycle. Only answers to commands move
it: a push never does, and a server that answers late gives a view as old as its answers.

After `idle_seconds` the heartbeat EXAMINEs the folder instead of the NOOP (the re-check): a new UIDVALIDITY (a
folder deleted and created again sends no push), or a UIDNEXT or EXISTS that moved beyond what was ingested
with no push, marks the folder and triggers a poll; so does a connection opened on a folder whose UIDNEXT is
beyond the cursor's last UID, or with no cursor yet (the catch-up poll). A connection whose SELECT shows nothing
beyond what was ingested, with no unread mark standing, asks for no poll: after a restart or a take-over only
the folders that received mail meanwhile are read, and the server sees no login of a poll for the others.
Heartbeats are sent oldest first, at most HEARTBEATS_PER_ROUND a round of the loop, after the pushes of that
turn: pushes never wait for them.

A broken connection, or an exchange not answered within the IMAP timeout, is reopened with backoff and advances
nothing; the periodic poll covers any gap. A login the server refuses, here or on any other connection, marks
the mailbox's credentials refused (`sequences.services.imap_login`): a session that logged in before a password
change keeps its IDLE and its marks, but its quiet heartbeats no longer make the view trusted until a login is
accepted again. The mailbox list is read again at every lease round (every `refresh` seconds, at most a third
of a watch lease): added, changed and removed mailboxes are picked up without a restart. Any number of watcher
processes share the folders: each watches those whose lease it holds (inbound.leases), within each server's
connection limit. The database failing costs a mark or an advance (logged), never the watcher or a poll.
"""

from __future__ import annotations

import logging
import selectors
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Q

from db.clock import db_now
from mailboxes.imap.errors import ImapAuthError, ImapConnectionError, ImapError
from mailboxes.imap.folders import FolderStatus
from mailboxes.imap.idle_line import Answer, IdleLine
from mailboxes.imap.session import ImapSession
from mailboxes.models import ImapCursor, Mailbox
from mailboxes.selectors import imap_config_for

from .ingest.login import Connection, login_accepted, login_refused, login_wait
from .ingest.view import folder_unread_mark, folders_quiet_through
from .leases import LeaseKeeper, Round, account_of, limits_setting_problem
from .tasks import enqueue_poll, poll_ask, poll_lock

log = logging.getLogger("outreach.ingest")
MAX_BACKOFF = 300.0
ROUND_SECONDS = 0.25  # heartbeats due are sent together, a round at most this often: one clock read, one UPDATE
HEARTBEATS_PER_ROUND = 200  # oldest first; the rest wait for the next round


@dataclass(frozen=True)
class Cursor:
    """What was ingested from a folder, read before an exchange is sent."""

    uidvalidity: int | None
    last_uid: int
    unread: bool  # an unread mark stands: a poll has been asked for


@dataclass(eq=False)
class Watch:
    """One folder: its connection in IDLE, or when to try connecting again."""

    key: tuple
    mailbox: Mailbox
    folder: str
    session: ImapSession | None = None
    line: IdleLine | None = None
    status: FolderStatus | None = None  # what the last SELECT or EXAMINE said (UIDVALIDITY, UIDNEXT, EXISTS)
    # The connection has shown nothing beyond the cursor since it last looked: a heartbeat needs no search.
    verified: bool = False
    beat_at: float = 0.0  # when the next heartbeat is due (monotonic)
    examine_at: float = 0.0  # when the next re-check (EXAMINE) is due
    asked_at: datetime | None = None  # the database time read before the exchange in flight was sent
    asked_cursor: Cursor | None = None  # the cursor read with it
    retry_at: float = 0.0
    backoff: float = 1.0
    opening: Future | None = None
    opening_cursor: Cursor | None = None  # read with `opening`, before its SELECT (missing: never polled)
    fd: int | None = None  # the registered socket (kept: a broken session may no longer report it)


class Watcher:
    def __init__(self, *, on_new: Callable[[int, str], None], idle_seconds: float = 300.0,
                 heartbeat_seconds: float | None = None):
        self.on_new = on_new
        self.idle_seconds = idle_seconds
        self.heartbeat_seconds = heartbeat() if heartbeat_seconds is None else heartbeat_seconds
        self.selector = selectors.DefaultSelector()
        self.watches: dict[tuple, Watch] = {}
        self.slots = openers()
        self.openers = ThreadPoolExecutor(self.slots, thread_name_prefix="imap-open")
        self.next_round = 0.0
        # An opener that finishes wakes the loop (a byte on this pair), so the next folder is handed over at once.
        self.wake_r, self.wake_w = socket.socketpair()
        for end in (self.wake_r, self.wake_w):
            end.setblocking(False)
        self.selector.register(self.wake_r, selectors.EVENT_READ, None)
        self.quiet: dict[datetime, list[tuple[int, str]]] = defaultdict(list)  # read through, by the time read

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
        """Open what is due, read what was pushed and answered, send the heartbeats due."""
        now = time.monotonic()
        due, opening = [], set()  # folders to open now; mailboxes with a connection being opened
        for watch in self.watches.values():
            if watch.opening is not None and watch.opening.done():
                self._opened(watch)
            if watch.opening is not None:
                opening.add(watch.mailbox.pk)
            elif watch.session is None and now >= watch.retry_at:
                due.append(watch)
        if due:
            self._open(due, opening)
        wait = max(min(timeout, self.next_round - time.monotonic()), 0.0)
        for key, _ in self.selector.select(timeout=wait):
            if key.data is None:
                self._woken()
            else:
                self._read(key.data)
        now = time.monotonic()
        if now >= self.next_round:
            self.next_round = now + ROUND_SECONDS
            for watch in [w for w in self.watches.values() if w.line is not None and w.line.overdue(now)]:
                self._fail(watch, ImapConnectionError(f"IMAP on {watch.mailbox.imap_host}: no answer within "
                                                      f"{watch.line.timeout:.0f}s"))
            self._beat(now)
        self._advance()

    def close(self) -> None:
        for watch in self.watches.values():
            self._close(watch)
        self.openers.shutdown(wait=False, cancel_futures=True)
        self.watches.clear()
        self.selector.close()
        self.wake_r.close()
        self.wake_w.close()

    # --- pushes and answers -----------------------------------------------------------------------

    def _read(self, watch: Watch) -> None:
        if watch.line is None:
            return
        try:
            got = watch.line.read()
        except ImapError as exc:
            self._fail(watch, exc)
            return
        if got.pushed:
            self._new_mail(watch)
        if got.answer is not None:
            self._answered(watch, got.answer)

    def _answered(self, watch: Watch, answer: Answer) -> None:
        """An exchange was answered: advance the folder's view to the time read before it was sent when the answer
        shows nothing beyond the cursor; mail it shows that no poll was asked for is marked and polled."""
        at, cursor = watch.asked_at, watch.asked_cursor
        watch.asked_at = watch.asked_cursor = None
        moved = renewed = False
        if answer.status is not None:  # the re-check's EXAMINE
            known, watch.status = watch.status, answer.status
            renewed = known is None or answer.status.uidvalidity != known.uidvalidity
            moved = renewed or answer.status.uidnext > known.uidnext or answer.status.exists > known.exists
        if answer.pushed:  # new mail announced meanwhile: marked and polled when it was read
            return
        if answer.status is not None:  # a fresh UIDNEXT, or the search after it
            watch.verified = _nothing_beyond(cursor, answer.status.uidvalidity, answer.status.uidnext, answer)
        elif answer.after is not None:  # the search after the NOOP's sync: the UIDNEXT known is no longer news
            watch.verified = _nothing_beyond(cursor, watch.status.uidvalidity, 0, answer)
        if renewed or (not watch.verified and (moved or (cursor is not None and not cursor.unread))):
            # A new UIDVALIDITY, or mail beyond the cursor that no push announced or no poll is reading now.
            self._new_mail(watch)
        elif watch.verified and at is not None:
            self.quiet[at].append((watch.mailbox.pk, watch.folder))

    def _beat(self, now: float) -> None:
        """Send the heartbeats (and re-checks) due, oldest first, with the database time read before them."""
        due = [w for w in self.watches.values() if w.line is not None and not w.line.busy and now >= w.beat_at]
        if not due:
            return
        due = sorted(due, key=lambda w: w.beat_at)[:HEARTBEATS_PER_ROUND]
        at = _database("read the database clock", db_now)
        looking = {w for w in due if now >= w.examine_at or not w.verified}  # a search after the cursor, too
        cursors = (_database("read the cursors", lambda: _cursors(list(looking))) if looking else None) or {}
        for watch in due:
            examine = now >= watch.examine_at
            cursor = cursors.get((watch.mailbox.pk, watch.folder)) if watch in looking else None
            after = cursor.last_uid if cursor is not None and cursor.uidvalidity is not None else None
            try:
                watch.line.begin(examine=examine, after=after)
            except ImapError as exc:
                self._fail(watch, exc)
                continue
            watch.asked_at, watch.asked_cursor = at, cursor
            if examine:
                watch.examine_at = now + self.idle_seconds
            watch.beat_at = now + self.heartbeat_seconds if self.heartbeat_seconds > 0 else watch.examine_at

    def _advance(self) -> None:
        """The folders whose answers showed nothing new: read through the time read before each was asked."""
        quiet, self.quiet = self.quiet, defaultdict(list)
        for at, folders in quiet.items():
            _database(f"advance the reply view of {len(folders)} folders",
                      lambda at=at, folders=folders: folders_quiet_through(folders=folders, at=at))

    # --- connections ----------------------------------------------------------------------------

    def _open(self, due: list[Watch], opening: set[int]) -> None:
        """Hand folders due to open to the openers: one of a mailbox at a time (`opening`: the mailboxes with one
        on its way), `openers()` logging in at a time and up to as many again waiting their turn, handed over in
        batches, the first mailboxes first. Their mailboxes are read here, for the login gate as it is now, with
        their folders' cursors (read before the SELECT, so never newer than what it shows), in one round a batch:
        the openers need no database connection of their own, and the loop no query per folder opened."""
        room = 2 * self.slots - len(opening)
        if room < self.slots:  # a batch still waits for the openers: the next is read when they reach it
            return
        chosen: list[Watch] = []
        for watch in _one_of_each_mailbox_in_turn(sorted(due, key=lambda w: (w.mailbox.pk, w.folder))):
            if len(chosen) >= room:
                break
            if watch.mailbox.pk not in opening:
                opening.add(watch.mailbox.pk)
                chosen.append(watch)
        if not chosen:
            return
        read = _database("read the mailboxes to open", lambda: (db_now(), {
            box.pk: box for box in Mailbox.objects.filter(pk__in=[w.mailbox.pk for w in chosen])}, _cursors(chosen)))
        for watch in chosen:
            mailbox = read[1].get(watch.mailbox.pk) if read is not None else None
            if mailbox is None:  # the database failing, or the mailbox removed (the next lease round drops it)
                self._fail(watch, ImapError("not opened: its mailbox could not be read"))
                continue
            watch.opening_cursor = read[2].get((watch.mailbox.pk, watch.folder))
            watch.opening = self.openers.submit(_connect, mailbox, watch.folder, read_at=read[0])
            watch.opening.add_done_callback(self._wake)

    def _wake(self, _future: Future | None = None) -> None:
        """In an opener thread: make the loop's select return (the pair is full: it is awake already)."""
        try:
            self.wake_w.send(b"\0")
        except OSError:
            pass

    def _woken(self) -> None:
        try:
            while self.wake_r.recv(4096):
                pass
        except OSError:
            pass

    def _opened(self, watch: Watch) -> None:
        future, watch.opening = watch.opening, None
        cursor, watch.opening_cursor = watch.opening_cursor, None
        try:
            session, status, pending = future.result()
        except ImapError as exc:
            self._fail(watch, exc)
            return
        if self.watches.get(watch.key) is not watch:  # removed while it was connecting
            session.drop()
            return
        try:
            line = session.hand_over(watch.folder)
        except ImapError as exc:
            session.drop()
            self._fail(watch, exc)
            return
        now = time.monotonic()
        watch.session, watch.line, watch.status, watch.backoff = session, line, status, 1.0
        watch.beat_at = now + (self.heartbeat_seconds if self.heartbeat_seconds > 0 else self.idle_seconds)
        watch.examine_at = now + self.idle_seconds
        watch.fd = line.fileno()
        self.selector.register(watch.fd, selectors.EVENT_READ, watch)
        watch.verified = _nothing_beyond(cursor, status.uidvalidity, status.uidnext, None)
        if pending or not watch.verified:
            self._new_mail(watch)  # mail announced, or beyond what was ingested: marked before the poll
        elif cursor.unread:
            self.on_new(watch.mailbox.pk, watch.folder)  # a mark stands: the poll it asked for reads and lifts it
        # Otherwise the SELECT shows nothing beyond what was ingested: nothing to catch up on, and no login of a
        # poll on the server. The first quiet heartbeat moves the folder's view (till then it only ages).
        if line.buffered:  # the server spoke right after IDLE began: read it now, the selector will not say
            self._read(watch)

    def _new_mail(self, watch: Watch) -> None:
        """Mark the folder unread, then ask for the poll: the final check holds follow-ups from the mark on, so
        none leaves in the time the poll takes to read the reply. No mark (the database failing) still polls."""
        watch.verified = False
        _database(f"mark {watch.mailbox.name}/{watch.folder} unread",
                  lambda: folder_unread_mark(mailbox_id=watch.mailbox.pk, folder=watch.folder))
        self.on_new(watch.mailbox.pk, watch.folder)

    def _fail(self, watch: Watch, exc: ImapError) -> None:
        log.warning("IDLE on %s/%s: %s; retrying in %.0fs (periodic polling continues)",
                    watch.mailbox.name, watch.folder, exc, watch.backoff)
        self._close(watch)
        watch.retry_at = time.monotonic() + watch.backoff
        watch.backoff = min(watch.backoff * 2, MAX_BACKOFF)

    def _close(self, watch: Watch) -> None:
        watch.asked_at = watch.asked_cursor = None
        watch.verified = False
        watch.line = None
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


def heartbeat() -> float:
    """Seconds between heartbeats on each folder (`OUTREACH_WATCHER_HEARTBEAT_SECONDS`; 0: none, the view then
    moves only at the re-check, every `idle_seconds`)."""
    return max(0.0, float(settings.OUTREACH_WATCHER_HEARTBEAT_SECONDS))


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


def enqueue_poll_merged(mailbox_id: int, folder: str | None = None) -> None:
    """The watcher's `on_new` in `watch_mailboxes`: a poll of the folder (None: of every reply folder) on the
    `ingest` queue, merged with one asked for before that has not begun reading: at most one poll of a mailbox's
    folder waits in the queue, however often it asks (a start asks once per folder opened, a burst of replies once
    per push), and none when a poll of every folder of the mailbox waits. A poll of every folder is asked for on
    its own even while polls of some folders wait: it reads them all.

    The asks are those a poll asked for while another runs leaves (`inbound.tasks.poll_ask`): one stands from the
    ask until the next pass that covers it begins, and a running poll that finds one when done reads the mailbox
    again. So when one that covers this ask stands, or a poll of the mailbox is running, a pass that begins after
    this ask is already due and nothing is enqueued. A lost job leaves its ask standing until the next pass of the
    mailbox that takes it (any folder's, or the periodic poll's), or LOCK_TIMEOUT: asks meanwhile are merged into
    it, the folders stay marked unread and their mailbox's follow-ups wait rather than leave unread."""
    if not poll_ask(mailbox_id, folder):
        return
    if poll_lock(mailbox_id).locked():
        return
    enqueue_poll(mailbox_id, folder)


def _drop_opened(future: Future) -> None:
    """A connection opened for a folder no longer watched: log out of it (in the opener thread)."""
    if not future.cancelled() and future.exception() is None:
        future.result()[0].drop()


def _cursors(watches: list[Watch]) -> dict[tuple[int, str], Cursor]:
    """What was ingested from each folder (missing: never polled), one query."""
    if not watches:
        return {}
    which = Q()
    for watch in watches:
        which |= Q(mailbox_id=watch.mailbox.pk, folder=watch.folder)
    return {(m, f): Cursor(v, last, unread is not None) for m, f, v, last, unread in ImapCursor.objects.filter(
        which).values_list("mailbox_id", "folder", "uidvalidity", "last_uid", "unread_since")}


def _nothing_beyond(cursor: Cursor | None, uidvalidity: int, uidnext: int, answer: Answer | None) -> bool:
    """Whether the folder holds nothing beyond what was ingested. A UIDNEXT just read (0: none) says so when the
    cursor has passed it; when the newest mail left the folder before it was read, UIDNEXT stays ahead of the
    cursor for good, and a search after the cursor's last UID decides, as for a poll."""
    if cursor is None or cursor.uidvalidity != uidvalidity:
        return False
    if uidnext and uidnext - 1 <= cursor.last_uid:
        return True
    return answer is not None and answer.after == cursor.last_uid and not answer.beyond


def _database[T](what: str, read_or_write: Callable[[], T]) -> T | None:
    """One statement of the watcher's; the database failing is logged and costs that statement (None), never
    the watcher: marks and advances are missed, polls are still asked for."""
    try:
        return read_or_write()
    except DatabaseError as exc:
        log.warning("IDLE watcher could not %s: %s", what, exc)
        connection.close_if_unusable_or_obsolete()  # a dropped connection is opened again on next use
        return None


def _connect(mailbox: Mailbox, folder: str, *, read_at: datetime | None = None
             ) -> tuple[ImapSession, FolderStatus, bool]:
    """In an opener thread: log in, select, enter IDLE. (session, what the SELECT said, mail already announced).

    The login gate is the poller's (`inbound.ingest.login`): no login without a password, and after a refusal
    none before the next interval of the ladder. It is read as it is now, not as the list was: `mailbox` as the
    caller read it at `read_at` (the database clock), or read here."""
    try:
        if read_at is None:
            mailbox = Mailbox.objects.get(pk=mailbox.pk)
            read_at = db_now()
        now = read_at
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
        connection.close()  # an opener thread never keeps a database connection (it opens one only to record)


def run(stop: threading.Event, *, name: str | None, on_new: Callable[[int, str], None], refresh: float,
        idle_seconds: float, say: Callable[[str], None], keeper: LeaseKeeper | None = None) -> None:
    """Watch, until `stop` and in this thread, the configured folders whose watch lease this process holds
    (inbound.leases: any number of watcher processes share the folders, each watched once)."""
    watcher = Watcher(on_new=on_new, idle_seconds=idle_seconds)
    keeper = keeper or LeaseKeeper()
    if problem := limits_setting_problem():
        say(problem)
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
