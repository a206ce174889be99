from django.core.management.base import BaseCommand

from sequences.tasks import dispatch


class Command(BaseCommand):
    help = "One dispatcher pass: queue due jobs (and enqueue them on RQ), re-enqueue lost ones, sweep leases."

    def handle(self, *args, **options):
        result = dispatch()
        self.stdout.write(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in result.items()))
