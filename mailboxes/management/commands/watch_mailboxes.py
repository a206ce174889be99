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
    """IDLE on one folder; on EXISTS, trigger a poll. Reconnects with backoff; the periodic poll covers gaps."""
    backoff = 1.0
    while not stop.is_set():
        try:
            with ImapSession(imap_config_for(mailbox)) as session:
                session.select(folder)
                backoff = 1.0
                on_new(mailbox.pk)  # catch up on anything that arrived while we were not watching
                while not stop.is_set():
                    if session.idle_wait(min(idle_seconds, 29 * 60)):
                        on_new(mailbox.pk)
        except ImapError as exc:
            log.warning("IDLE on %s/%s: %s; retrying in %.0fs (periodic polling continues)",
                        mailbox.name, folder, exc, backoff)
            stop.wait(backoff)
            backoff = min(backoff * 2, 300)
        finally:
            connection.close()


class Command(BaseCommand):
    help = "Watch IMAP folders with IDLE and trigger an immediate poll when new mail is pushed."

    def add_arguments(self, parser):
        parser.add_argument("--mailbox", help="only this mailbox (name)")
        parser.add_argument("--inline", action="store_true",
                            help="poll in this process instead of enqueueing on the `ingest` queue")

    def handle(self, *args, mailbox, inline, **options):
        boxes = list(Mailbox.objects.exclude(imap_host="").filter(**({"name": mailbox} if mailbox else {})))
        if not boxes:
            self.stdout.write("no IMAP mailbox configured: nothing to watch")
            return
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        on_new = poll_mailbox if inline else enqueue_poll
        threads = [
            threading.Thread(target=watch, args=(box, folder, stop, on_new), daemon=True)
            for box in boxes for folder in (box.imap_folders or ["INBOX"])
        ]
        for thread in threads:
            thread.start()
        self.stdout.write(f"watching {len(threads)} folders with IDLE")
        while not stop.is_set():
            time.sleep(0.5)
