"""First-start demo data, built through the real services so every page has something true to show.

- a demo admin (random password, printed once) when no admin exists yet, with an address whose mail the
  capture server receives (a "Send test to me" lands in var/captured);
- a mailbox whose SMTP goes to the local capture server (127.0.0.1:2525, or OUTREACH_CAPTURE_PORT),
  which must be running: the demo's messages are really sent to it, like everything else;
- a two-step sequence and contacts in varied states (alan's reply goes through
  the real ingestion, as if the poller had fetched it; folder "demo"):
  grace    active: step 1 scheduled (a running worker sends it to the capture server)
  alan     replied: step 1 already submitted when the reply stopped the enrollment
           ("Already submitted … cannot recall"); step 2 "Canceled — never sent"
  linus    paused by an operator: step 1 canceled
  margaret unsubscribed: suppressed, enrollment stopped, step 1 canceled
- ledger entries: a domain suppression, and one suppression lifted with a justification.
"""

from __future__ import annotations

import os
import socket
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from db.clock import db_now
from inbound.ingest.record import inbound_record
from mailboxes.imap.fetch import FetchedMessage
from mailboxes.models import Mailbox
from sequences.models import Enrollment, SendJob, Sequence, Step
from sequences.pipeline import send_job_process
from sequences.queues import enqueue_sends
from sequences.sending_mailbox import enrollment_mailbox, enrollment_mailbox_id
from sequences.services.enrollments import contact_upsert, enrollment_create
from sequences.services.sending import dispatch_due
from sequences.services.stops import enrollment_pause
from sequences.services.suppressions import suppression_add, suppression_lift

DEMO_WORKER = "setup_demo"
DEMO_ADMIN_EMAIL = "admin@demo.outreach.test"


CAPTURE_HOST = "127.0.0.1"
WAIT_FOR_SMTP_SECONDS = 10.0


def smtp_listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def capture_port() -> int:
    return int(os.environ.get("OUTREACH_CAPTURE_PORT", "2525"))


def smtp_wait(host: str, port: int, seconds: float) -> bool:
    """True once something listens on host:port (the capture server `scripts/run` has just started)."""
    deadline = time.monotonic() + seconds
    while not smtp_listening(host, port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class Command(BaseCommand):
    help = "Create the demo admin, mailbox, sequence and contacts once (does nothing when they exist)."

    def handle(self, *args, **options):
        if Mailbox.objects.filter(name="demo").exists():
            self._demo_admin()
            self.stdout.write("demo data already present")
            return
        port = capture_port()
        if not smtp_wait(CAPTURE_HOST, port, WAIT_FOR_SMTP_SECONDS):
            # Nothing is created: the demo's messages are sent for real, so they need the server.
            raise CommandError(f"the demo sends its messages to the local capture server on {CAPTURE_HOST}:{port}, "
                               "and nothing listens there; start it with `.venv/bin/python manage.py capture_smtp "
                               f"--port {port}` (scripts/run does) and run setup_demo again")
        self._demo_admin()
        mailbox = Mailbox.objects.create(
            name="demo", address="sales@demo.outreach.test", display_name="Demo Sales",
            smtp_host=CAPTURE_HOST, smtp_port=port, smtp_security="none", daily_cap=500, is_drill_target=True,
            # The capture server keeps what it is sent and no inbox answers: follow-ups go without a reply view.
            follow_ups_without_reply_view=True,
        )
        sequence = Sequence.objects.create(name="Demo intro", mailbox=mailbox)
        Step.objects.create(sequence=sequence, position=1, subject="Quick question, {{ first_name }}",
                            body="Hi {{ first_name }},\n\nIs {{ company }} looking at outreach tools?\n",
                            wait_seconds=0)
        Step.objects.create(sequence=sequence, position=2, subject="", thread=True, wait_seconds=120,
                            body="Hi {{ first_name }}, just bumping this up.\n")

        # alan first, so that his step-1 job is the one the dispatcher picks up now.
        alan = self._enroll(sequence, "alan@example.org", "Alan", "Bletchley")
        first = self._submit_step_one(alan)
        reply = self._demo_reply(alan, first)
        self.stdout.write(f"  alan: replied after step 1 (inbound #{reply.inbound_id}): {reply.effect}")

        linus = self._enroll(sequence, "linus@example.net", "Linus", "Kernel")
        enrollment_pause(enrollment_id=linus.pk, actor="demo")
        self.stdout.write("  linus: paused by an operator")

        margaret = self._enroll(sequence, "margaret@example.com", "Margaret", "Apollo")
        suppression_add(value=margaret.contact.email, reason="unsubscribe", actor="demo",
                                 source="demo: unsubscribe link", note="demo data")
        self.stdout.write("  margaret: unsubscribed (suppressed, enrollment stopped)")

        self._enroll(sequence, "grace@example.com", "Grace", "Navy")
        self.stdout.write("  grace: active, step 1 scheduled (a running worker sends it to the capture server)")

        suppression_add(value="@competitor.example", reason="manual", actor="demo", source="command",
                                 note="demo: a competitor's domain")
        suppression_add(value="old-customer@example.com", reason="complaint", actor="demo",
                                 source="command", note="demo: marked as spam in 2024")
        suppression_lift(value="old-customer@example.com", actor="demo", source="command",
                                  note="demo: customer asked to hear from us again")
        self.stdout.write(self.style.SUCCESS("demo mailbox, sequence, 4 enrollments and ledger entries created"))

    def _demo_admin(self) -> None:
        User = get_user_model()
        # The demo admin's mail goes where the demo mailbox sends: to the capture server, which takes every
        # address. So "Send test to me" works from the first minute, and an older demo admin gets the address too.
        User.objects.filter(username="admin", email="").update(email=DEMO_ADMIN_EMAIL)
        if User.objects.filter(is_superuser=True).exists() or User.objects.filter(groups__name="admins").exists():
            return
        call_command("add_user", "admin", "--role", "admin", "--email", DEMO_ADMIN_EMAIL, stdout=self.stdout)
        login = settings.OUTREACH_PUBLIC_URL.rstrip("/") + "/login/"
        self.stdout.write(f"log in at {login} with the username admin and the password above; forgot it? "
                          "`.venv/bin/python manage.py changepassword admin`; add more people with "
                          "`.venv/bin/python manage.py add_user NAME --role operator|staff|admin`")

    def _enroll(self, sequence: Sequence, email: str, first_name: str, company: str) -> Enrollment:
        contact = contact_upsert(email=email, first_name=first_name, company=company)
        return enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk, actor="demo")

    def _submit_step_one(self, enrollment: Enrollment) -> SendJob:
        job = SendJob.objects.get(enrollment=enrollment, state=SendJob.State.SCHEDULED)
        due = dispatch_due()
        others = [pk for pk in due if pk != job.pk]
        if others:  # jobs that were already in the database: hand them to the workers as the dispatcher would
            try:
                enqueue_sends(others)
            except Exception as exc:  # noqa: BLE001 - Redis down: the dispatcher re-enqueues stale queued jobs
                self.stderr.write(f"could not enqueue {len(others)} other due job(s) ({exc}); the dispatcher will")
        if job.pk not in due:
            raise RuntimeError(f"demo job {job.pk} was not dispatched")
        mailbox = enrollment_mailbox(enrollment)
        outcome = send_job_process(job_id=job.pk, worker_id=DEMO_WORKER)
        if outcome.state != SendJob.State.SUBMITTED:
            raise CommandError(f"the demo's first message was not sent to {mailbox.smtp_host}:{mailbox.smtp_port}: "
                               f"{outcome.state} {outcome.detail}")
        self.stdout.write(f"  sent step 1 to the SMTP server on {mailbox.smtp_host}:{mailbox.smtp_port}: "
                          f"{outcome.state} {outcome.detail}")
        job.refresh_from_db()
        return job

    def _demo_reply(self, enrollment: Enrollment, job: SendJob):
        """Alan's reply to step 1, through the real ingestion (as if the poller had fetched it over IMAP)."""
        contact = enrollment.contact
        raw = (
            f"From: {contact.first_name} <{contact.email}>\r\nTo: {enrollment_mailbox(enrollment).address}\r\n"
            f"Subject: Re: Quick question, {contact.first_name}\r\nMessage-ID: <demo-reply-{job.pk}@example.org>\r\n"
            f"In-Reply-To: {job.message_id}\r\nReferences: {job.message_id}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n\r\n"
            "Thanks, not right now. Maybe next quarter.\r\n\r\n> Is Bletchley looking at outreach tools?\r\n"
        ).encode()
        fetched = FetchedMessage(uid=1, internaldate=db_now(), raw=raw, size=len(raw), flags=())
        return inbound_record(mailbox_id=enrollment_mailbox_id(enrollment), folder="demo", uidvalidity=1,
                              fetched=fetched)
