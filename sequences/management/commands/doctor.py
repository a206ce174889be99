"""`manage.py doctor`: every active enrollment has a live job or a recorded reason to wait; repair the rest."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from sequences.services.doctor import enrollments_doctor


class Command(BaseCommand):
    help = ("List active enrollments that have no live job and say why; repair those that have no reason to wait "
            "(a failed step stops the enrollment with reason 'failed'; otherwise the next step is scheduled). "
            "The scheduler runs it every 5 minutes.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="only report; change nothing")

    def handle(self, *args, dry_run, **options):
        findings = enrollments_doctor(repair=not dry_run)
        for f in findings:
            if not f.action:
                action = " (a reason to wait: nothing to repair)"
            else:
                action = f" -> {f.action}" if f.done else f" -> would {f.action}"
            self.stdout.write(f"enrollment {f.enrollment_id} {f.email}: {f.finding}{action}")
        repaired = sum(bool(f.action) for f in findings)
        self.stdout.write(f"{len(findings)} active enrollment(s) without a live job; "
                          f"{repaired} {'would be ' if dry_run else ''}repaired")
