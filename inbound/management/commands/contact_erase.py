from django.core.management.base import BaseCommand, CommandError

from inbound.erasure import contact_erase
from sequences.services.common import ServiceError
from workspaces.commands import in_named_workspace, workspace_argument


class Command(BaseCommand):
    help = (
        "Erase a person (GDPR art. 17): stop every enrollment, remove their data everywhere, and keep only a "
        "keyed hash of the address so that it is never imported or mailed again."
    )

    def add_arguments(self, parser):
        workspace_argument(parser)
        parser.add_argument("email", help="the person's address")

    @in_named_workspace
    def handle(self, *args, email, **options):
        try:
            result = contact_erase(email=email, actor="command")
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        contact = f"contact #{result['contact']}" if result["contact"] else "no contact on record"
        self.stdout.write(
            f"Erased ({contact}): {result['enrollments_stopped']} of {result['enrollments']} "
            f"enrollments stopped, {result['inbound_blanked']} inbound messages blanked, "
            f"{result['mentions_replaced']} other mentions removed; the address is kept only as a "
            f"keyed hash ({result['digest']}…)."
        )
