from django.core.management.base import BaseCommand, CommandError

from sequences.models import Sequence
from sequences.services.common import ServiceError
from sequences.services.stops import sequence_launch
from workspaces.commands import in_named_workspace, one_named, workspace_argument


class Command(BaseCommand):
    help = "Launch a draft sequence: from now on its people's emails are sent, each through the final check."

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("name", help="the sequence's name")

    @in_named_workspace
    def handle(self, *args, name, **options):
        sequence = one_named(Sequence.objects, name, what="sequence")
        if sequence is None:
            raise CommandError(f"no sequence {name!r}")
        try:
            waiting = sequence_launch(sequence_id=sequence.pk, actor="command")
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"launched sequence {name}: {waiting} email{'' if waiting == 1 else 's'} waiting to be "
                          "sent (each goes through the final check)")
