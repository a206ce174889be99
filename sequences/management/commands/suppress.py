from django.core.management.base import BaseCommand, CommandError

from sequences.labels import stop_summary_text
from sequences.models import GIVEN_REASONS
from sequences.services.common import ServiceError
from sequences.services.suppressions import suppression_add


class Command(BaseCommand):
    help = "Suppress an address or a whole @domain and stop its enrollments."

    def add_arguments(self, parser):
        parser.add_argument("value", help="address@example.com or @example.com")
        parser.add_argument("--reason", required=True, choices=GIVEN_REASONS)
        parser.add_argument("--note", default="")

    def handle(self, *args, value, reason, note, **options):
        try:
            entry, summary = suppression_add(value=value, reason=reason, note=note, source="command",
                                                      actor="command")
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        what = f"{entry.value} suppressed ({entry.reason}, entry {entry.pk})"
        self.stdout.write(stop_summary_text(summary, what=what))
