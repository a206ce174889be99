from __future__ import annotations

import logging
import signal
import threading
import time

from django.core.management.base import BaseCommand
from django.db import connection

from mailboxes.imap import ImapError, ImapSession
from mailboxes.ingest.poll import imap_config_for
from mailboxes.models import Mailbox
from mailboxes.tasks import enqueue_poll, poll_mailbox

log = logging.getLogger("outreach.ingest")


def watch(mailbox: Mailbox, folder: str, stop: threading.Event, on_new, idle_seconds: float = 300) -> None:
    """IDLE on one folder; on EXISTS, trigger a poll. Reconnects with backoff; the periodic poll covers gaps.

    After every IDLE cycle the folder is selected again and its UIDVALIDITY compared: a folder deleted and
    created again (a new UIDVALIDITY) sends no push, but the poll it triggers here rescans it.
    """
    backoff = 1.0
    while not stop.is_set():
        try:
            with ImapSession(imap_config_for(mailbox)) as session:
                uidvalidity = session.select(folder).uidvalidity
                backoff = 1.0
                on_new(mailbox.pk)  # catch up on anything that arrived while we were not watching
                while not stop.is_set():
                    pushed = session.idle_wait(min(idle_seconds, 29 * 60))
                    now = session.select(folder).uidvalidity
                    if pushed or now != uidvalidity:
                        uidvalidity = now
                        on_new(mailbox.pk)
        except ImapError as exc:
            log.warning("IDLE on %s/%s: %s; retrying in %.0fs (periodic polling continues)",
                        mailbox.name, folder, exc, backoff)
            stop.wait(backoff)
            backoff = min(backoff * 2, 300)
        finally:
            connection.close()


class Command(BaseCommand):
    help = ("Watch IMAP folders with IDLE and trigger an immediate poll when new mail is pushed. Mailboxes "
            "added, changed or removed are picked up every --refresh seconds, without a restart.")

    def add_arguments(self, parser):
        parser.add_argument("--mailbox", help="only this mailbox (name)")
        parser.add_argument("--inline", action="store_true",
                            help="poll in this process instead of enqueueing on the `ingest` queue")
        parser.add_argument("--refresh", type=float, default=30.0, help="seconds between looks at the mailbox list")
        parser.add_argument("--idle-seconds", type=float, default=300.0,
                            help="longest IDLE before the folder is selected again (UIDVALIDITY check)")

    def handle(self, *args, mailbox, inline, refresh, idle_seconds, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        run(stop, name=mailbox, on_new=poll_mailbox if inline else enqueue_poll, refresh=refresh,
            idle_seconds=idle_seconds, say=self.stdout.write)


def run(stop: threading.Event, *, name: str | None, on_new, refresh: float, idle_seconds: float, say) -> None:
    """Keep one watcher per configured folder until `stop`: start new ones, stop those removed or changed."""
    watchers: dict[tuple, tuple[threading.Thread, threading.Event]] = {}
    shown = None
    while not stop.is_set():
        wanted = {_key(box, folder): (box, folder) for box in _watched(name)
                  for folder in (box.imap_folders or ["INBOX"])}
        for key in set(watchers) - set(wanted):  # removed, or its settings changed
            watchers.pop(key)[1].set()
        for key in set(wanted) - set(watchers):
            box, folder = wanted[key]
            own_stop = threading.Event()
            thread = threading.Thread(target=watch, args=(box, folder, _either(stop, own_stop), on_new,
                                                          idle_seconds), daemon=True)
            thread.start()
            watchers[key] = (thread, own_stop)
        if len(watchers) != shown:
            shown = len(watchers)
            say(f"watching {shown} folders with IDLE" if shown else
                f"no IMAP mailbox configured yet: looking again every {refresh:.0f}s")
        connection.close()
        stop.wait(refresh)
    for _, own_stop in watchers.values():
        own_stop.set()


def _watched(name: str | None) -> list[Mailbox]:
    return list(Mailbox.objects.exclude(imap_host="").filter(**({"name": name} if name else {})).order_by("pk"))


def _key(box: Mailbox, folder: str) -> tuple:
    """What a watcher was started with: a change to any of it starts a new one."""
    return (box.pk, folder, box.imap_host, box.imap_port, box.imap_username, box.imap_password_env,
            box.imap_security, box.ca_file)


class _either:
    """Set when either event is: the command's stop, or this watcher's own."""

    def __init__(self, a: threading.Event, b: threading.Event):
        self.a, self.b = a, b

    def is_set(self) -> bool:
        return self.a.is_set() or self.b.is_set()

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.is_set() and time.monotonic() < deadline:
            self.b.wait(min(0.5, max(deadline - time.monotonic(), 0)))
        return self.is_set()
