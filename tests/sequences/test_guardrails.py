"""Deliverability guardrails: a mailbox whose hard-bounce rate crosses its limit is paused, and the final check
stops its next message."""

from __future__ import annotations

import django_rq
import pytest
from rq.worker import SimpleWorker

from inbound.ingest.record import inbound_record
from mailboxes.models import Mailbox
from proving.harness import mails
from sequences.config.apply import config_apply
from sequences.config.parse import parse
from sequences.models import OperatorAction, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.guardrails import Figures, guardrail_crossed, guardrail_figures, guardrail_record
from sequences.services.sending import dispatch_due
from sequences.services.stops import mailbox_resume
from sequences.timeline import Event
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def sent_to(mailbox: Mailbox, count: int) -> list[SendJob]:
    """`count` people sent step 1; step 2 of each is due at once."""
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    for i in range(count):
        enroll(sequence, f"p{i}@example.com")
    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    return list(SendJob.objects.filter(enrollment__sequence=sequence, step__position=1).order_by("id"))


def bounce(job: SendJob, *, uid: int):
    raw = mails.dsn(
        original_message_id=job.message_id,
        recipient=job.enrollment.contact.email,
        ours=job.enrollment.sequence.mailbox.address,
    )
    return inbound_record(
        mailbox_id=job.enrollment.sequence.mailbox_id,
        folder="INBOX",
        uidvalidity=1,
        fetched=mails.fetched(raw, uid=uid),
    )


def work_default_queue() -> None:
    queue = django_rq.get_queue("default")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def test_a_bounce_rate_over_the_limit_pauses_the_mailbox_and_the_final_check_cancels_the_next_send(
    smtp_server, redis_conn
):
    mailbox = MailboxFactory(smtp_port=smtp_server.port, guardrail_bounce_min_sends=4)
    first = sent_to(mailbox, 4)
    assert len(smtp_server.received) == 4

    bounce(first[0], uid=1)  # 1 hard bounce of 4 sends: 25 % >= 3 %

    mailbox.refresh_from_db()
    assert mailbox.paused and mailbox.guardrail_paused_at is not None
    assert mailbox.guardrail_reason == (
        "hard-bounce rate 25.0 % (1 of 4 sends in the last 7 days) is at or above the limit of 3 %"
    )
    event = TimelineEvent.objects.get(kind=Event.MAILBOX_PAUSED_BY_GUARDRAIL)
    assert (event.data["sends"], event.data["hard_bounces"], event.data["bounce_rate"]) == (4, 1, 25.0)
    log = OperatorAction.objects.get(action="mailbox_paused_by_guardrail")
    assert log.target == f"mailbox {mailbox.name}" and log.result["reason"] == mailbox.guardrail_reason

    # The pause committed with the bounce: the next follow-up meets it in the final check.
    queued = dispatch_due()
    assert len(queued) == 3, "the three follow-ups still pending were due"
    outcome = send_job_process(job_id=queued[0], worker_id="w2")
    assert (outcome.state, outcome.detail) == ("canceled", "mailbox_paused")
    canceled = TimelineEvent.objects.get(job_id=queued[0], kind=Event.JOB_CANCELED)
    assert canceled.data["final_check"] is True
    assert len(smtp_server.received) == 4, "nothing left after the pause"

    # After commit, the pause's sweep cancels what else was pending, as an operator's pause does.
    work_default_queue()
    assert not SendJob.objects.filter(enrollment__sequence__mailbox=mailbox, state__in=(S.SCHEDULED, S.QUEUED)).exists()


def test_an_operators_resume_silences_the_guardrail_for_the_stated_period(smtp_server, redis_conn):
    mailbox = MailboxFactory(smtp_port=smtp_server.port, guardrail_bounce_min_sends=4, guardrail_silence_seconds=3600)
    first = sent_to(mailbox, 4)
    bounce(first[0], uid=1)
    mailbox_resume(mailbox_id=mailbox.pk, actor="ops")
    mailbox.refresh_from_db()
    assert not mailbox.paused and mailbox.guardrail_paused_at is None
    assert mailbox.guardrail_silenced_until is not None
    silenced = TimelineEvent.objects.get(kind=Event.GUARDRAIL_SILENCED)
    assert silenced.data["actor"] == "ops" and "25.0 %" in silenced.data["paused_because"]

    bounce(first[1], uid=2)  # 2 of 4 now, but silenced
    mailbox.refresh_from_db()
    assert not mailbox.paused


def test_below_the_minimum_sample_nothing_pauses(smtp_server, redis_conn):
    mailbox = MailboxFactory(smtp_port=smtp_server.port)  # defaults: 3 % after at least 50 sends
    first = sent_to(mailbox, 4)
    bounce(first[0], uid=1)
    mailbox.refresh_from_db()
    assert not mailbox.paused
    figures = guardrail_figures(mailbox)
    assert (figures.sends, figures.hard_bounces) == (4, 1)


def test_the_same_bounce_reported_twice_counts_once(smtp_server, redis_conn):
    mailbox = MailboxFactory(smtp_port=smtp_server.port)
    first = sent_to(mailbox, 2)
    bounce(first[0], uid=1)
    guardrail_record(email=first[0].enrollment.contact.email, kind="hard_bounce")
    assert guardrail_figures(mailbox).hard_bounces == 1


def test_complaint_rate_and_thresholds_are_toml_keys(db):
    plan = parse("""
[[mailbox]]
name = "sales"
address = "sales@acme.test"

[mailbox.guardrail]
window = "14d"
bounce_rate = 2.5
bounce_min_sends = 100
complaint_rate = 0.3
complaint_min_deliveries = 500
silence_after_resume = "12h"
""")
    config_apply(plan)
    mailbox = Mailbox.objects.get(name="sales")
    assert (
        mailbox.guardrail_window_days,
        mailbox.guardrail_bounce_rate,
        mailbox.guardrail_bounce_min_sends,
        mailbox.guardrail_complaint_rate,
        mailbox.guardrail_complaint_min_deliveries,
        mailbox.guardrail_silence_seconds,
    ) == (14, 2.5, 100, 0.3, 500, 43200)
    figures = Figures(window_days=7, sends=1000, deliveries=1000, hard_bounces=0, complaints=3)
    assert guardrail_crossed(mailbox, figures) == (
        "complaint rate 0.30 % (3 of 1000 deliveries in the last 7 days) is at or above the limit of 0.3 %"
    )


def test_the_dashboard_shows_the_guardrail_banner_with_the_figures(smtp_server, redis_conn, client, django_user_model):
    mailbox = MailboxFactory(smtp_port=smtp_server.port, guardrail_bounce_min_sends=4)
    bounce(sent_to(mailbox, 4)[0], uid=1)
    client.force_login(django_user_model.objects.create_superuser("boss", "boss@outreach.test", "pw-0123456789"))
    page = client.get("/").content.decode()
    assert f"Sending from <strong>{mailbox.name}</strong> was paused by the deliverability guardrail" in page
    assert "hard-bounce rate 25.0 % (1 of 4 sends in the last 7 days)" in page
    assert "silences the guardrail for 1 day" in page


def test_the_mailbox_admin_shows_the_guardrail_thresholds_and_why_it_paused(
    smtp_server, redis_conn, client, django_user_model
):
    mailbox = MailboxFactory(smtp_port=smtp_server.port, guardrail_bounce_min_sends=4)
    bounce(sent_to(mailbox, 4)[0], uid=1)
    client.force_login(django_user_model.objects.create_superuser("root", "root@outreach.test", "pw-0123456789"))
    page = client.get(f"/admin/mailboxes/mailbox/{mailbox.pk}/change/").content.decode()
    assert "Deliverability guardrail" in page and "hard-bounce rate 25.0 %" in page
