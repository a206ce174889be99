"""manage.py reports_rollup: bring the reports' rollup up to date now (the scheduler does it once a minute).

    manage.py reports_rollup             # what changed since the last run
    manage.py reports_rollup --rebuild   # forget every count and count everything again
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from ...rollup import rollup, rollup_rebuild


class Command(BaseCommand):
    help = "Roll up the reports' counts now: what changed since the last run, or everything with --rebuild."

    def add_arguments(self, parser):
        parser.add_argument("--rebuild", action="store_true", help="count every message again from nothing")

    def handle(self, *args, **options):
        run = rollup_rebuild() if options["rebuild"] else rollup()
        self.stdout.write(run.words())
