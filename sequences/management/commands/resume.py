from django.core.management.base import BaseCommand, CommandError

from sequences.services.common import ServiceError
from sequences.services.stops import enrollment_resume, mailbox_resume, sequence_resume
from workspaces.commands import in_named_workspace, workspace_argument

from ._target import add_target_arguments, resolve


class Command(BaseCommand):
    help = "Resume a sequence, an enrollment (EMAIL --sequence NAME) or a mailbox, scheduling next steps."

    def add_arguments(self, parser):
        workspace_argument(parser)
        add_target_arguments(parser)

    @in_named_workspace
    def handle(self, *args, kind, name, sequence, **options):
        target = resolve(kind, name, sequence)
        try:
            if kind == "enrollment":
                enrollment = enrollment_resume(enrollment_id=target.pk, actor="command")
                self.stdout.write(f"enrollment {name} is {enrollment.status}")
                return
            if kind == "sequence":
                scheduled = sequence_resume(sequence_id=target.pk, actor="command")
            else:
                scheduled = mailbox_resume(mailbox_id=target.pk, actor="command")
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"resumed {kind} {name}: {scheduled} jobs scheduled")
