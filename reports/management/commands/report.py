"""manage.py report: a report table (the reports page's, with the same columns) as CSV or XLSX.

    manage.py report --sequence "Q3 outreach" --by step --format csv --output q3-steps.csv
    manage.py report --by week --since 2026-01-05 --until 2026-02-01 --format xlsx --output weeks.xlsx
    manage.py report --by mailbox                  # CSV on standard output, every sequence, all time

It rolls up first (reports.rollup: only what changed since the scheduler's last run), so the file is current.
"""

from __future__ import annotations

from datetime import date

from django.core.management.base import BaseCommand, CommandError

from sequences.models import Sequence
from workspaces.commands import in_named_workspace, one_named, workspace_argument

from ...exports import report_csv, report_xlsx
from ...figures import BY, report
from ...rollup import rollup


def _day(option: str, value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{option} {value!r} is not a date: write it as YYYY-MM-DD, e.g. 2026-01-31") from None


class Command(BaseCommand):
    help = "Write a report table (sent, replies, bounces, complaints, rates) as CSV or XLSX."

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("--sequence", metavar="NAME", help="one sequence, by its name (default: all)")
        parser.add_argument("--by", choices=list(BY), default="sequence", help="how the rows are grouped")
        parser.add_argument("--format", choices=("csv", "xlsx"), default="csv")
        parser.add_argument("--output", metavar="FILE", help="the file to write (default for CSV: standard output)")
        parser.add_argument("--since", metavar="YYYY-MM-DD", help="first day of hand-off counted (UTC)")
        parser.add_argument("--until", metavar="YYYY-MM-DD", help="last day of hand-off counted (UTC), inclusive")
        parser.add_argument("--no-rollup", action="store_true",
                            help="read the rollup as the scheduler last left it, without bringing it up to date")

    @in_named_workspace
    def handle(self, *args, **options):
        since, until = _day("--since", options["since"]), _day("--until", options["until"])
        if since and until and since > until:
            raise CommandError(f"--since {since} is after --until {until}: nothing could be counted")
        sequence = None
        if options["sequence"] is not None:
            sequence = one_named(Sequence.objects, options["sequence"], what="sequence")
            if sequence is None:
                names = list(Sequence.objects.order_by("name").values_list("name", flat=True)[:10])
                known = ", ".join(repr(n) for n in names) if names else "there are none yet"
                raise CommandError(f"no sequence is named {options['sequence']!r} (names are exact; sequences: "
                                   f"{known})")
        if options["format"] == "xlsx" and not options["output"]:
            raise CommandError("--format xlsx needs --output FILE: a workbook is not written to the terminal")
        if not options["no_rollup"]:
            rollup()
        found = report(by=options["by"], sequence=sequence, since=since, until=until)
        if options["format"] == "xlsx":
            content: bytes | str = report_xlsx(found)
        else:
            content = report_csv(found)
        if not options["output"]:
            self.stdout.write(content, ending="")
            return
        try:
            if isinstance(content, bytes):
                with open(options["output"], "wb") as out:
                    out.write(content)
            else:
                with open(options["output"], "w", encoding="utf-8", newline="") as out:
                    out.write(content)
        except OSError as error:
            raise CommandError(f"cannot write {options['output']}: {error.strerror}") from None
        what = f"sequence {sequence.name!r}" if sequence else "every sequence"
        self.stderr.write(f"report by {options['by']} of {what}, {found.range_words}: {len(found.lines)} rows and "
                         f"the total written to {options['output']}")
