"""Out-of-office holds: an auto-reply with a return date holds the person's live jobs until the day after it."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest
from django.utils import timezone

from inbound.ingest.record import inbound_record
from proving.harness import mails
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.timeline import Event
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def first_sent(mailbox, email="ada@example.com") -> SendJob:
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), email)
    job = enrollment.jobs.get()
    dispatch_due()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == S.SUBMITTED
    return SendJob.objects.select_related("enrollment__sequence").get(pk=job.pk)


def auto_reply(job: SendJob, text: str, *, uid: int = 1, to_message_id: str = ""):
    raw = mails.out_of_office(
        to_message_id=to_message_id or job.message_id, sender=job.enrollment.contact.email, text=text
    )
    return inbound_record(
        mailbox_id=job.enrollment.sequence.mailbox_id,
        folder="INBOX",
        uidvalidity=1,
        fetched=mails.fetched(raw, uid=uid),
    )


def follow_up(job: SendJob) -> SendJob:
    return SendJob.objects.get(enrollment=job.enrollment, step__position=2)


def day_after(day) -> datetime:
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=UTC)


def test_back_on_a_date_holds_every_live_job_of_the_person_until_the_day_after(mailbox, smtp_server):
    sent = first_sent(mailbox)
    other_mailbox = MailboxFactory(smtp_port=smtp_server.port)
    elsewhere = enroll(make_sequence(mailbox=other_mailbox, steps=1), "ada@example.com")
    back = timezone.now().date() + timedelta(days=20)
    sentence = f"I am out of the office and back on {back.day} {back:%B %Y}."

    result = auto_reply(sent, f"Thank you for your message.\n{sentence} For urgent matters call Bob.")

    for job in (follow_up(sent), elsewhere.jobs.get()):
        assert (job.state, job.scheduled_at) == (S.SCHEDULED, day_after(back))
        assert TimelineEvent.objects.filter(job=job, kind=Event.JOB_HELD_OUT_OF_OFFICE).exists()
    hold = TimelineEvent.objects.filter(kind=Event.OUT_OF_OFFICE_HOLD, enrollment=sent.enrollment).get()
    assert hold.data["return_date"] == back.isoformat() and hold.data["sentence"] == sentence
    assert result.effect.startswith(f"auto-reply: back on {back.isoformat()} (“{sentence}”); 2 jobs held until ")
    assert dispatch_due() == [], "nothing is due before the person is back"
    assert Enrollment.objects.filter(status=Enrollment.Status.ACTIVE).count() == 2, "held, never paused forever"


def test_without_a_date_the_hold_is_the_default_period(mailbox, smtp_server, settings):
    settings.OUTREACH_OOO_HOLD_DAYS = 7
    sent = first_sent(mailbox)
    auto_reply(sent, "I am currently out of the office with limited access to email.")
    expected = datetime.combine(timezone.now().date() + timedelta(days=7), time(0), tzinfo=UTC)
    assert follow_up(sent).scheduled_at == expected
    hold = TimelineEvent.objects.get(kind=Event.OUT_OF_OFFICE_HOLD)
    assert hold.data["return_date"] == "" and hold.data["sentence"] == ""


def test_a_date_far_out_is_held_for_the_maximum_only(mailbox, smtp_server, settings):
    settings.OUTREACH_OOO_MAX_HOLD_DAYS = 30
    sent = first_sent(mailbox)
    auto_reply(sent, f"I am on parental leave until 1 March {timezone.now().year + 2}.")
    expected = datetime.combine(timezone.now().date() + timedelta(days=30), time(0), tzinfo=UTC)
    assert follow_up(sent).scheduled_at == expected


def test_an_auto_reply_without_evidence_that_we_sent_holds_nothing(mailbox, smtp_server):
    sent = first_sent(mailbox)
    before = follow_up(sent).scheduled_at
    stranger = enroll(make_sequence(mailbox=mailbox, steps=1, waits=(3600,)), "eve@example.com")
    job = stranger.jobs.get()
    job.enrollment = stranger
    auto_reply(job, "I am away, back on Monday.", to_message_id="<not-ours@elsewhere.example>")
    assert follow_up(sent).scheduled_at == before
    assert stranger.jobs.get().scheduled_at == job.scheduled_at
    assert not TimelineEvent.objects.filter(kind=Event.OUT_OF_OFFICE_HOLD).exists()
