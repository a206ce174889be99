import json
import sys

from django.core.management.base import BaseCommand, CommandError

from inbound.erasure import contact_export
from sequences.selectors import contact_workspace_names
from sequences.services.common import ServiceError
from workspaces.commands import in_named_workspace, one_person_refused, workspace_argument


class Command(BaseCommand):
    help = "Write everything held about a person as JSON (GDPR art. 15): to stdout, or to --output FILE."

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("email", help="the person's address")
        parser.add_argument("--output", default="-", help="a file to write (default: stdout)")

    @in_named_workspace
    def handle(self, *args, email, output, **options):
        one_person_refused(email, contact_workspace_names(email))
        try:
            data = contact_export(email=email)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        text = json.dumps(data, indent=2, ensure_ascii=False)
        if output == "-":
            sys.stdout.write(text + "\n")
        else:
            with open(output, "w", encoding="utf-8") as out:
                out.write(text + "\n")
            self.stderr.write(f"wrote {output}")
