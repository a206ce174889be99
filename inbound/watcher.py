"""The IDLE watcher: one thread multiplexes every watched folder's connection (selectors), no thread per folder.

Connections are opened by a small pool (`OUTREACH_WATCHER_OPENERS` threads,
4 by default), so a server that accepts but never answers delays only its
own folders, never the others. Folders are handed to the pool one of each
mailbox in turn, so the logins in flight at once belong to different
mailboxes, not to one account's folders.

Each folder has one IMAP connection in IDLE. When the server pushes (EXISTS),
the watcher asks for a poll of that mailbox (`on_new`); it does no ingestion
itself. After `idle_seconds` in IDLE a folder is selected again and its
UIDVALIDITY compared (a folder deleted and created again sends no push, but
its new UIDVALIDITY triggers a poll, which rescans it). A broken connection is
reopened with backoff; the periodic poll covers any gap. The mailbox list is
read again every `refresh` seconds: added, changed and removed mailboxes are
picked up without a restart.
"""

from __future__ import annotations

import logging
import selectors
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from mailboxes.imap.errors import ImapError
from mailboxes.imap.session import ImapSession
from mailboxes.models import Mailbox
from mailboxes.selectors import imap_config_for

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
    uidvalidity: int | None = None
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
        for key in set(self.watches) - set(wanted):  # removed, or its settings changed
            watch = self.watches.pop(key)
            self._close(watch)
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
        for watch in sorted(due, key=lambda w: w.idle_since)[:RECHECKS_PER_STEP]:
            self._recheck(watch)

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
            session, uidvalidity, pending = future.result()
        except ImapError as exc:
            self._fail(watch, exc)
            return
        if self.watches.get(watch.key) is not watch:  # removed while it was connecting
            session.drop()
            return
        watch.session, watch.uidvalidity, watch.idle_since, watch.backoff = session, uidvalidity, time.monotonic(), 1.0
        watch.fd = session.fileno()
        self.selector.register(watch.fd, selectors.EVENT_READ, watch)
        # Catch up on anything that arrived while we were not watching.
        self.on_new(watch.mailbox.pk)
        if pending:
            self._new_mail(watch)

    def _recheck(self, watch: Watch) -> None:
        session = watch.session
        try:
            pushed = session.idle_done()
            uidvalidity = session.select(watch.folder).uidvalidity
            pushed = session.idle_start() or pushed
        except ImapError as exc:
            self._fail(watch, exc)
            return
        watch.idle_since = time.monotonic()
        if pushed or uidvalidity != watch.uidvalidity:
            watch.uidvalidity = uidvalidity
            self._new_mail(watch)

    def _new_mail(self, watch: Watch) -> None:
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


def _connect(mailbox: Mailbox, folder: str) -> tuple[ImapSession, int, bool]:
    """In an opener thread: log in, select, enter IDLE. (session, UIDVALIDITY, mail already announced)."""
    session = ImapSession(imap_config_for(mailbox))
    try:
        session.open()
        uidvalidity = session.select(folder).uidvalidity
        return session, uidvalidity, session.idle_start()
    except ImapError:
        session.drop()
        raise
    finally:
        connection.close()  # imap_config_for read nothing, but an opener thread never keeps a connection


def run(stop: threading.Event, *, name: str | None, on_new: Callable[[int], None], refresh: float,
        idle_seconds: float, say: Callable[[str], None]) -> None:
    """Watch every configured folder until `stop`, in this thread."""
    watcher = Watcher(on_new=on_new, idle_seconds=idle_seconds)
    shown = None
    next_refresh = 0.0
    try:
        while not stop.is_set():
            if time.monotonic() >= next_refresh:
                watcher.reconcile({key(box, folder): (box, folder) for box in watched(name)
                                   for folder in (box.imap_folders or ["INBOX"])})
                connection.close()
                next_refresh = time.monotonic() + refresh
                if len(watcher.watches) != shown:
                    shown = len(watcher.watches)
                    say(f"watching {shown} folders with IDLE" if shown else
                        f"no IMAP mailbox configured yet: looking again every {refresh:.0f}s")
            watcher.step(timeout=0.2)
    finally:
        watcher.close()
        connection.close()


def watched(name: str | None) -> list[Mailbox]:
    return list(Mailbox.objects.exclude(imap_host="").filter(**({"name": name} if name else {})).order_by("pk"))


def key(box: Mailbox, folder: str) -> tuple:
    """What a watch was opened with: a change to any of it opens a new one."""
    return (box.pk, folder, box.imap_host, box.imap_port, box.imap_username, box.imap_password_env,
            box.imap_security, box.ca_file)
