"""`manage.py watch_mailboxes`: the IDLE watcher (inbound.watcher). Run one or more, on any hosts: they share
the folders through watch leases in the database (inbound.leases), each folder watched by one of them."""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand

from inbound.tasks import poll_mailbox
from inbound.watcher import enqueue_poll_merged, run


class Command(BaseCommand):
    # The watcher serves no pages: Django's system checks would import every URL and view, 26 MiB held for the
    # process's life. The web process and `manage.py check` run them.
    requires_system_checks = []
    help = ("Watch IMAP folders with IDLE and trigger an immediate poll when new mail is pushed. One thread "
            "multiplexes every folder's connection; mailboxes added, changed or removed are picked up every "
            "--refresh seconds, without a restart. Any number may run: they share the folders through leases "
            "(OUTREACH_WATCHER_LEASE_SECONDS), each folder watched once; a stopped one gives its folders up.")

    def add_arguments(self, parser):
        parser.add_argument("--mailbox", help="only this mailbox (name)")
        parser.add_argument("--inline", action="store_true",
                            help="poll in this process instead of enqueueing on the `ingest` queue (a long poll "
                                 "delays the lease renewals: keep it for one watcher)")
        parser.add_argument("--refresh", type=float, default=30.0, help="seconds between looks at the mailbox list")
        parser.add_argument("--idle-seconds", type=float, default=300.0,
                            help="longest IDLE before the folder is selected again (UIDVALIDITY check)")

    def handle(self, *args, mailbox, inline, refresh, idle_seconds, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        run(stop, name=mailbox, on_new=poll_mailbox if inline else enqueue_poll_merged, refresh=refresh,
            idle_seconds=idle_seconds, say=self.stdout.write)
