from __future__ import annotations

import csv
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email

from sequences import services
from sequences.models import Sequence
from sequences.selectors import normalize_email

NAMED = ("email", "first_name", "last_name", "company", "timezone")


class Command(BaseCommand):
    help = ("Enroll the contacts of a CSV file (header row with `email`, optional first_name, last_name, "
            "company, timezone; other columns are kept as fields) in a sequence.")

    def add_arguments(self, parser):
        parser.add_argument("--sequence", required=True, help="sequence name")
        parser.add_argument("file", help="CSV file")

    def handle(self, *args, sequence, file, **options):
        seq = Sequence.objects.filter(name=sequence).first()
        if seq is None:
            raise CommandError(f"no sequence named {sequence!r}")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames or "email" not in [f.strip().lower() for f in reader.fieldnames]:
                raise CommandError(f"{file}: the header row must have an `email` column")
            enrolled, errors, seen = 0, [], {}
            for row in reader:
                line = reader.line_num
                row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items() if k}
                email = normalize_email(row.get("email", ""))
                try:
                    validate_email(email)
                except ValidationError:
                    errors.append(f"line {line}: {row.get('email', '')!r} is not a valid address")
                    continue
                if email in seen:
                    errors.append(f"line {line}: {email} duplicates line {seen[email]}")
                    continue
                seen[email] = line
                contact = services.contact_upsert(
                    email=email, first_name=row.get("first_name", ""), last_name=row.get("last_name", ""),
                    company=row.get("company", ""), timezone_name=row.get("timezone", ""),
                    fields={k: v for k, v in row.items() if k not in NAMED},
                )
                try:
                    services.enrollment_create(sequence_id=seq.pk, contact_id=contact.pk, actor="command")
                except services.ServiceError as exc:
                    errors.append(f"line {line}: {exc}")
                    continue
                enrolled += 1
        for error in errors:
            self.stderr.write(error)
        self.stdout.write(f"{enrolled} enrolled, {len(errors)} rejected")
        if errors and not enrolled:
            raise CommandError("no row was enrolled")
