"""Enroll a CSV: every row is validated completely before anything is written; a rejected row changes nothing.

The summary counts every row once, as the browser's upload does (`EnrollCounts`): enrolled, rejected, already
enrolled (a file enrolled again is not an error), suppressed. `--dry-run` checks every row and prints the same
counts without writing anything. The exit code is non-zero only when the input is unusable (no such sequence, a
file that cannot be read, a bad option) or no row could be enrolled although some were rejected or suppressed.
"""

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
from sequences.services.enrollments import (
    BatchResult,
    ContactRow,
    EnrollCounts,
    enrollments_create_batch,
    enrollments_dry_run_counts,
)
from workspaces.commands import in_named_workspace, one_named, workspace_argument


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
            "it is written; a rejected row changes nothing. Each row not enrolled is listed on stderr with its "
            "line; the summary counts enrolled, rejected, already enrolled and suppressed rows. Exits 0 when "
            "rows were enrolled (or all were enrolled already), non-zero when no row could be enrolled or the "
            "file or the options are unusable.")

    def add_arguments(self, parser):
        workspace_argument(parser)
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
        parser.add_argument("--dry-run", action="store_true",
                            help="check every row as enrolling would and print the same counts, writing nothing "
                                 "(the counts the browser's dry run shows for the same file)")
        parser.add_argument("file", help="CSV file (UTF-8)")

    @in_named_workspace
    def handle(self, *args, sequence, file, update_contacts, batch_size, progress_every, allow_missing,
               verify=False, dry_run=False, **options):
        seq = one_named(Sequence.objects, sequence, what="sequence")
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

        flagged: list[tuple[int, str]] = []
        if verify:
            verified = rows_verify(rows)  # DNS, once per domain, before anything is written
            rows = verified.kept
            errors.extend(verified.refused)
            flagged = verified.flagged

        if dry_run:
            counts, _ = enrollments_dry_run_counts(sequence_id=seq.pk, rows=rows, rejected=errors, flagged=flagged,
                                                   allow_missing=allow_missing, update_contacts=update_contacts)
            for line_no, note in sorted(counts.flagged):  # enrolled all the same, as the run says
                self.stdout.write(f"line {line_no}: {note}; not refused for this")
            self._rows_write(counts)
            self.stdout.write(f"dry run, nothing written: {counts.words(dry_run=True)}")
            self._exit(counts, dry_run=True)
            return

        for line_no, note in flagged:
            self.stdout.write(f"line {line_no}: {note}; not refused for this")
        progress = Progress(len(rows), self.stdout, self.stderr, tty=self.stdout.isatty(), every=progress_every)
        counts = EnrollCounts(rejected=errors, flagged=flagged)
        total = BatchResult()
        fields: Counter = Counter()
        for start in range(0, len(rows), batch_size):
            try:
                result = enrollments_create_batch(sequence_id=seq.pk, rows=rows[start:start + batch_size],
                                                  update_contacts=update_contacts, actor="command",
                                                  allow_missing=allow_missing)
            except ServiceError as exc:
                raise CommandError(f"{exc}; {counts.enrolled} enrolled before it") from None
            counts.add(result)
            total.contacts_created += result.contacts_created
            total.contacts_updated += result.contacts_updated
            total.contacts_kept += result.contacts_kept
            fields.update(result.fields_changed)
            progress.update(min(start + batch_size, len(rows)))
        progress.finish()

        self._rows_write(counts)
        self.stdout.write(counts.words())
        contacts = f"contacts: {total.contacts_created} created, {total.contacts_updated} updated"
        if fields:
            contacts += " (" + ", ".join(f"{name} on {n}" for name, n in sorted(fields.items())) + ")"
        if total.contacts_kept:
            contacts += (f", {total.contacts_kept} existing kept as they were although the file differs "
                         "(--update-contacts to change them)")
        self.stdout.write(contacts)
        self._exit(counts, dry_run=False)

    def _rows_write(self, counts: EnrollCounts) -> None:
        """Each row not enrolled, with its line and why, in line order (stderr)."""
        for line_no, reason in sorted(counts.rejected + counts.already + counts.suppressed):
            self.stderr.write(f"line {line_no}: {reason}")

    def _exit(self, counts: EnrollCounts, *, dry_run: bool) -> None:
        """Non-zero only when nothing could be enrolled: rows refused (rejected or suppressed) and none enrolled.
        A file whose every row is in the sequence already, or enrolled beside refused rows, ends well."""
        refused = len(counts.rejected) + len(counts.suppressed)
        if counts.enrolled or not refused:
            return
        parts = [f"{len(counts.rejected)} rejected"] + ([f"{len(counts.suppressed)} suppressed"]
                                                        if counts.suppressed else [])
        raise CommandError(f"nothing {'would be ' if dry_run else ''}enrolled: {' and '.join(parts)} (see the "
                           "lines above)")
