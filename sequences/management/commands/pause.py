from django.core.management.base import BaseCommand

from sequences.labels import stop_summary_text
from sequences.services.stops import enrollment_pause, mailbox_pause, sequence_pause
from workspaces.commands import in_named_workspace, workspace_argument

from ._target import add_target_arguments, resolve


class Command(BaseCommand):
    help = "Pause a sequence, an enrollment (EMAIL --sequence NAME) or a mailbox. Jobs not yet authorized are canceled."

    def add_arguments(self, parser):
        workspace_argument(parser)
        add_target_arguments(parser)

    @in_named_workspace
    def handle(self, *args, kind, name, sequence, **options):
        target = resolve(kind, name, sequence)
        action = {"sequence": lambda: sequence_pause(sequence_id=target.pk, actor="command"),
                  "enrollment": lambda: enrollment_pause(enrollment_id=target.pk, actor="command"),
                  "mailbox": lambda: mailbox_pause(mailbox_id=target.pk, actor="command")}[kind]
        summary = action()
        if not summary.changed:
            self.stdout.write(f"{kind} {name} was already paused (or stopped); nothing changed")
            return
        self.stdout.write(stop_summary_text(summary, what=f"paused {kind} {name}"))
