from __future__ import annotations

import argparse
import sys
import time
from datetime import date

from django.core.management.base import BaseCommand, CommandError

from inbound.ingest.poll import mailbox_poll
from mailboxes.imap.errors import ImapError
from mailboxes.models import Mailbox


class Command(BaseCommand):
    help = "Poll IMAP mailboxes now: record new messages, stop what must stop. Shows progress on a large first sync."

    def add_arguments(self, parser):
        parser.add_argument("--mailbox", help="only this mailbox (name)")
        parser.add_argument("--once", action="store_true", help="one pass, then exit (default: every --interval s)")
        parser.add_argument("--interval", type=float, default=30.0)
        parser.add_argument("--batch-size", type=int, default=200)
        parser.add_argument("--since", type=_day, metavar="YYYY-MM-DD",
                            help="also read mail that arrived on this day or later, older than what was read so far "
                                 "(by default a folder is read from the mailbox's first submission on)")

    def handle(self, *args, mailbox, once, interval, batch_size, since, **options):
        boxes = Mailbox.objects.exclude(imap_host="")
        if mailbox:
            boxes = boxes.filter(name=mailbox)
            if not boxes.exists():
                raise CommandError(f"no mailbox {mailbox!r} with IMAP settings")
        if not boxes.exists():
            self.stdout.write("no IMAP mailbox configured: nothing to poll")
            return
        failures = 0
        while True:
            for box in boxes:
                started = time.monotonic()

                def progress(folder: str, done: int, total: int, name=box.name) -> None:
                    sys.stderr.write(f"\r{name}/{folder}: {done}/{total} messages")
                    sys.stderr.flush()

                try:
                    result = mailbox_poll(mailbox_id=box.pk, batch_size=batch_size, progress=progress, since=since)
                except ImapError as exc:
                    failures += 1
                    self.stderr.write(f"{box.name}: poll failed: {exc}")
                    continue
                if result.fetched:
                    sys.stderr.write("\n")
                summary = ", ".join(f"{folder}: {c['recorded']} new, {c['duplicates']} duplicates"
                                    for folder, c in result.folders.items())
                self.stdout.write(f"{box.name}: {summary} ({time.monotonic() - started:.1f}s)")
            if once:
                if failures:
                    raise CommandError(f"{failures} mailbox polls failed")
                return
            since = None  # history is re-read once; later passes go on from the cursor
            time.sleep(interval)


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"a date as YYYY-MM-DD, not {value!r}") from exc
