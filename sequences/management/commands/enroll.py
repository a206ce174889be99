"""Enroll a CSV: every row is validated completely before anything is written; a rejected row changes nothing."""

from __future__ import annotations

import csv
import io
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

from django.core.management.base import BaseCommand, CommandError

from mailboxes.address_check import rows_verify
from sequences.contact_rows import FileRefused, decode, header_columns, row_check
from sequences.models import Sequence
from sequences.services.common import ServiceError
from sequences.services.enrollments import BatchResult, ContactRow, enrollments_create_batch


class Progress:
    """rows/s and ETA: one updating line on a terminal, else a line to stderr every `every` rows."""

    def __init__(self, total: int, out: TextIO, err: TextIO, *, tty: bool, every: int):
        self.total, self.out, self.err, self.tty, self.every = total, out, err, tty, every
        self.started = time.monotonic()
        self.last_shown = 0.0
        self.next_line = every

    def text(self, done: int) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate else 0.0
        return f"{done:,}/{self.total:,} rows  {rate:,.0f} rows/s  ETA {eta:,.0f}s"

    def update(self, done: int) -> None:
        if self.tty:
            now = time.monotonic()
            if now - self.last_shown >= 0.5 or done == self.total:
                self.last_shown = now
                self.out.write("\r" + self.text(done) + "\x1b[K")
                self.out.flush()
        elif self.every and done >= self.next_line:
            self.next_line = (done // self.every + 1) * self.every
            self.err.write(self.text(done) + "\n")

    def finish(self) -> None:
        if self.tty:
            self.out.write("\n")


class Command(BaseCommand):
    help = ("Enroll the contacts of a CSV file (header row with `email`, optional first_name, last_name, "
            "company, timezone; other columns are kept as fields) in a sequence. Every row is checked before "
            "it is written; a rejected row changes nothing. Exits non-zero when any row was rejected.")

    def add_arguments(self, parser):
        parser.add_argument("--sequence", required=True, help="sequence name")
        parser.add_argument("--update-contacts", action="store_true",
                            help="update existing contacts with the file's non-empty values (default: keep them)")
        parser.add_argument("--allow-missing", action="store_true",
                            help="enroll rows that lack a value some step uses without a fallback (default: refuse "
                                 "them; such a person stops at that step, failed)")
        parser.add_argument("--batch-size", type=int, default=1000, help="rows per transaction (default 1000)")
        parser.add_argument("--progress-every", type=int, default=10000,
                            help="when stdout is not a terminal, a progress line to stderr every N rows (0: none)")
        parser.add_argument("--verify", action="store_true",
                            help="check each address first: a domain that does not exist (or takes no mail) is "
                                 "refused with its line; role accounts (info@, sales@ …) and domains that could "
                                 "not be looked up are enrolled and listed")
        parser.add_argument("file", help="CSV file (UTF-8)")

    def handle(self, *args, sequence, file, update_contacts, batch_size, progress_every, allow_missing,
               verify=False, **options):
        seq = Sequence.objects.filter(name=sequence).first()
        if seq is None:
            raise CommandError(f"no sequence named {sequence!r}")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        try:
            reader = csv.reader(io.StringIO(decode(path.read_bytes(), file), newline=""))
        except FileRefused as exc:
            raise CommandError(str(exc)) from None
        try:
            header = next(reader)
        except StopIteration:
            raise CommandError(f"{file}: the header row must have an `email` column") from None
        except csv.Error as exc:
            raise CommandError(f"{file}: line 1: {exc}") from None
        try:
            names = header_columns(header, file)
        except FileRefused as exc:
            raise CommandError(str(exc)) from None

        rows: list[ContactRow] = []
        errors: list[tuple[int, str]] = []
        seen: dict[str, int] = {}
        line = reader.line_num + 1
        while True:
            try:
                values = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise CommandError(f"{file}: line {line}: {exc}; nothing was enrolled") from None
            if not any(v.strip() for v in values):
                line = reader.line_num + 1
                continue
            cells = {n: v.strip() for n, v in zip(names, values, strict=False) if n}
            row, reason = row_check(line, cells, extra=len(values) > len(names))
            if row is None:
                errors.append((line, reason))
            elif row.email in seen:
                errors.append((line, f"{row.email} duplicates line {seen[row.email]}"))
            else:
                seen[row.email] = line
                rows.append(row)
            line = reader.line_num + 1

        if verify:
            verified = rows_verify(rows)  # DNS, once per domain, before anything is written
            rows = verified.kept
            errors.extend(verified.refused)
            for line_no, note in verified.flagged:
                self.stdout.write(f"line {line_no}: {note}; not refused for this")

        progress = Progress(len(rows), self.stdout, self.stderr, tty=self.stdout.isatty(), every=progress_every)
        total = BatchResult()
        fields: Counter = Counter()
        for start in range(0, len(rows), batch_size):
            try:
                result = enrollments_create_batch(sequence_id=seq.pk, rows=rows[start:start + batch_size],
                                                  update_contacts=update_contacts, actor="command",
                                                  allow_missing=allow_missing)
            except ServiceError as exc:
                raise CommandError(str(exc)) from None
            total.enrolled += result.enrolled
            total.contacts_created += result.contacts_created
            total.contacts_updated += result.contacts_updated
            total.contacts_kept += result.contacts_kept
            fields.update(result.fields_changed)
            errors.extend(result.rejected)
            progress.update(min(start + batch_size, len(rows)))
        progress.finish()

        for line_no, reason in sorted(errors):
            self.stderr.write(f"line {line_no}: {reason}")
        self.stdout.write(f"{total.enrolled} enrolled, {len(errors)} rejected")
        contacts = f"contacts: {total.contacts_created} created, {total.contacts_updated} updated"
        if fields:
            contacts += " (" + ", ".join(f"{name} on {n}" for name, n in sorted(fields.items())) + ")"
        if total.contacts_kept:
            contacts += (f", {total.contacts_kept} existing kept as they were although the file differs "
                         "(--update-contacts to change them)")
        self.stdout.write(contacts)
        if errors:
            raise CommandError(f"{len(errors)} row{'s' if len(errors) != 1 else ''} rejected (see above); "
                               f"{total.enrolled} enrolled")
