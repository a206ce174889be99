from django.core.management.base import BaseCommand, CommandError

from sequences.services.common import ServiceError
from sequences.services.suppressions import suppression_lift
from workspaces.commands import ledger_arguments, ledger_part_named


class Command(BaseCommand):
    help = ("Lift a suppression (a new ledger entry; history stays) in one workspace's ledger or the agency's "
            "(--everywhere). Enrollments are not resumed.")

    def add_arguments(self, parser):
        parser.add_argument("value", help="address@example.com or @example.com")
        parser.add_argument("--note", required=True, help="why it is lifted")
        ledger_arguments(parser)

    def handle(self, *args, value, note, workspace, everywhere, **options):
        part = ledger_part_named(workspace=workspace, everywhere=everywhere)
        try:
            entry = suppression_lift(value=value, note=note, actor="command", source="command", workspace_id=part)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{entry.value} lifted (entry {entry.pk})")
