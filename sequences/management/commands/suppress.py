from django.core.management.base import BaseCommand, CommandError

from sequences.labels import stop_summary_text
from sequences.models import GIVEN_REASONS
from sequences.services.common import ServiceError
from sequences.services.suppressions import suppression_add
from workspaces.commands import ledger_arguments, ledger_part_named


class Command(BaseCommand):
    help = ("Suppress an address or a whole @domain and stop its enrollments: in one workspace (--workspace, or the "
            "install's only one), or in every workspace (--everywhere: the agency's list).")

    def add_arguments(self, parser):
        parser.add_argument("value", help="address@example.com or @example.com")
        parser.add_argument("--reason", required=True, choices=GIVEN_REASONS)
        parser.add_argument("--note", default="")
        ledger_arguments(parser)

    def handle(self, *args, value, reason, note, workspace, everywhere, **options):
        part = ledger_part_named(workspace=workspace, everywhere=everywhere)
        try:
            entry, summary = suppression_add(value=value, reason=reason, note=note, source="command",
                                             actor="command", workspace_id=part)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        where = " in every workspace" if part is None else ""
        what = f"{entry.value} suppressed{where} ({entry.reason}, entry {entry.pk})"
        self.stdout.write(stop_summary_text(summary, what=what))
