"""First-start demo data: a mailbox that sends to the local capture server, a sequence, contacts."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from mailboxes.models import Mailbox
from sequences import services
from sequences.models import Sequence, Step


class Command(BaseCommand):
    help = "Create the demo mailbox, sequence and contacts once (does nothing when they exist)."

    def handle(self, *args, **options):
        if Mailbox.objects.filter(name="demo").exists():
            self.stdout.write("demo data already present")
            return
        mailbox = Mailbox.objects.create(
            name="demo", address="sales@demo.outreach.test", display_name="Demo Sales",
            smtp_host="127.0.0.1", smtp_port=2525, daily_cap=500, is_drill_target=True,
        )
        sequence = Sequence.objects.create(name="Demo intro", mailbox=mailbox)
        Step.objects.create(sequence=sequence, position=1, subject="Quick question, {{ first_name }}",
                            body="Hi {{ first_name }},\n\nIs {{ company }} looking at outreach tools?\n", wait_seconds=0)
        Step.objects.create(sequence=sequence, position=2, subject="", thread=True, wait_seconds=120,
                            body="Hi {{ first_name }}, just bumping this up.\n")
        for email, name, company in [("grace@example.com", "Grace", "Navy"), ("alan@example.org", "Alan", "Bletchley"),
                                     ("linus@example.net", "Linus", "Kernel")]:
            contact = services.contact_upsert(email=email, first_name=name, company=company)
            services.enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk, actor="demo")
        self.stdout.write(self.style.SUCCESS("demo mailbox, sequence and 3 enrollments created"))
