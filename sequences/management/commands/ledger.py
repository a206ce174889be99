"""`manage.py ledger`: the send ledger of a person, a sequence or a date range, as CSV or JSON (sequences.ledger)."""

from __future__ import annotations

from argparse import RawDescriptionHelpFormatter
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta

from django.core.management.base import BaseCommand, CommandError, DjangoHelpFormatter
from django.utils.dateparse import parse_date, parse_datetime

from sequences.ledger import LedgerRow, ledger_csv_lines, ledger_json_chunks, send_ledger_rows
from sequences.models import Contact, Sequence
from sequences.selectors import contact_workspace_names, normalize_email
from workspaces.commands import in_named_workspace, one_named, one_person_refused, workspace_argument

EXAMPLES = """examples:
  manage.py ledger --contact jane@acme.test --format csv --output jane.csv
  manage.py ledger --sequence "Q3 outreach" --format json
  manage.py ledger --since 2026-03-01 --until 2026-03-07 --output week.csv
"""


class _Help(DjangoHelpFormatter, RawDescriptionHelpFormatter):
    """Django's order of the options; the description and the examples as written."""


class Command(BaseCommand):
    help = ("The send ledger: one row per message that was due, with what left (hand-off time,\n"
            "Message-ID, the server's reply) or what held it back (the final check's reason, who,\n"
            "when), for a person, a sequence or a date range. Times are the database clock's, UTC.")

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, formatter_class=_Help, **kwargs)
        parser.epilog = EXAMPLES
        return parser

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("--contact", metavar="EMAIL", help="the person's address")
        parser.add_argument("--sequence", metavar="NAME", help="the sequence's name")
        parser.add_argument("--since", metavar="DATE",
                            help="from this day (YYYY-MM-DD, its start in UTC) or time (ISO 8601)")
        parser.add_argument("--until", metavar="DATE",
                            help="to this day (YYYY-MM-DD, to its end in UTC) or before this time (ISO 8601)")
        parser.add_argument("--format", choices=("csv", "json"), default="csv", help="csv (default) or json")
        parser.add_argument("--output", metavar="FILE", default="-", help="a file to write (default: stdout)")

    @in_named_workspace
    def handle(self, *args, contact, sequence, since, until, format, output, **options):
        if not (contact or sequence or since or until):
            raise CommandError("say whose ledger: --contact EMAIL, --sequence NAME, or a date range "
                               "(--since DATE --until DATE)")
        since_at, until_at = _moment(since, "--since"), _moment(until, "--until", end_of_day=True)
        if since_at and until_at and since_at >= until_at:
            raise CommandError(f"--since {since} is not before --until {until}")
        rows = _counted(send_ledger_rows(contact_id=_contact_id(contact), sequence_id=_sequence_id(sequence),
                                         since=since_at, until=until_at))
        chunks = ledger_csv_lines(rows) if format == "csv" else ledger_json_chunks(rows)
        if output == "-":
            for chunk in chunks:
                self.stdout.write(chunk, ending="")
            return
        with open(output, "w", encoding="utf-8", newline="") as out:
            if format == "csv":
                out.write("\ufeff")  # spreadsheets read the file as UTF-8
            for chunk in chunks:
                out.write(chunk)
        self.stderr.write(f"wrote {rows.count} row{'' if rows.count == 1 else 's'} to {output}")


class _counted:
    """The rows, counted as they are written."""

    def __init__(self, rows: Iterator[LedgerRow]):
        self.rows, self.count = rows, 0

    def __iter__(self) -> Iterator[LedgerRow]:
        for row in self.rows:
            self.count += 1
            yield row


def _contact_id(email: str | None) -> int | None:
    if not email:
        return None
    one_person_refused(normalize_email(email), contact_workspace_names(email))
    found = Contact.objects.filter(email=normalize_email(email)).values_list("pk", flat=True).first()
    if found is None:
        raise CommandError(f"no contact {normalize_email(email)}: nobody with this address was imported or enrolled "
                           "(or the person was erased)")
    return found


def _sequence_id(name: str | None) -> int | None:
    if not name:
        return None
    found = one_named(Sequence.objects, name, what="sequence")
    if found is None:
        raise CommandError(f"no sequence named {name!r} (the names are listed on the Sequences page)")
    return found.pk


def _moment(value: str | None, option: str, *, end_of_day: bool = False) -> datetime | None:
    """A day (its start, or with `end_of_day` the start of the next one: the range ends before it) or a time;
    a time without a zone is UTC."""
    if not value:
        return None
    try:
        day = parse_date(value.strip()) if len(value.strip()) <= 10 else None
        moment = None if day is not None else parse_datetime(value.strip())
    except ValueError:  # well formed, but no such day or time
        day = moment = None
    if day is not None:
        return datetime.combine(day + timedelta(days=1 if end_of_day else 0), time(0), tzinfo=UTC)
    if moment is None:
        raise CommandError(f"{option} {value!r} is neither a day (2026-03-01) nor a time (2026-03-01T09:30:00Z)")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
