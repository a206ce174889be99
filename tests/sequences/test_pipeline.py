"""The guarded send pipeline end to end: real PostgreSQL, real SMTP server on loopback."""

from __future__ import annotations

import io

import pytest
from django.db import connection

from sequences import checkpoints
from sequences.models import Enrollment, SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.common import ServiceError
from sequences.services.doctor import enrollments_doctor
from sequences.services.sending import (
    dispatch_due,
    leases_sweep,
    send_job_authorize,
    send_job_claim,
    send_job_record_retry,
)
from sequences.services.stops import enrollment_stop, send_job_retry
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def queue_and_run(job_id: int, worker: str = "w1"):
    assert dispatch_due() and True
    return send_job_process(job_id=job_id, worker_id=worker)


def first_job(enrollment: Enrollment) -> SendJob:
    return enrollment.jobs.order_by("id").first()


def test_two_steps_are_sent_threaded_and_the_enrollment_completes(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=2)
    enrollment = enroll(sequence, "Ada@Example.com", first_name="Ada", company="Acme")

    for _ in range(2):
        (job_id,) = dispatch_due()
        assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED

    first, second = smtp_server.received
    assert first.recipients == ["ada@example.com"]
    assert first.message["Subject"] == "Hello Ada"
    assert "Step 1 for Ada at Acme." in first.message.get_payload()
    assert second.message["In-Reply-To"] == first.message_id
    assert second.message["References"] == first.message_id
    assert second.message["Subject"] == "Re: Hello Ada"
    assert "List-Unsubscribe=One-Click" == first.message["List-Unsubscribe-Post"]
    assert first.message["List-Unsubscribe"].startswith("<http://testserver/u/")
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.COMPLETED
    jobs = list(enrollment.jobs.order_by("step__position"))
    assert [j.state for j in jobs] == [S.SUBMITTED, S.SUBMITTED]
    assert [j.message_id for j in jobs] == [first.message_id, second.message_id]
    assert jobs[0].smtp_reply.startswith("250")
    kinds = list(TimelineEvent.objects.filter(job=jobs[0]).values_list("kind", flat=True))
    assert kinds == ["job_scheduled", "job_queued", "job_claimed", "job_authorized", "job_submitted"]


def test_no_transaction_is_open_at_the_hand_off(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "b@example.com")
    seen = []
    checkpoints.install("authorized", lambda job_id: seen.append(connection.in_atomic_block))
    dispatch_due()
    assert send_job_process(job_id=first_job(enrollment).pk, worker_id="w1").state == S.SUBMITTED
    assert seen == [False]


def test_a_duplicate_delivery_of_the_same_rq_job_sends_once(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "dup@example.com")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    assert send_job_process(job_id=job_id, worker_id="w2").state == "noop"
    assert len(smtp_server.received) == 1
    assert TimelineEvent.objects.filter(job_id=job_id, kind="claim_noop").count() == 1
    assert first_job(enrollment).worker_id == "w1"


def test_451_at_rcpt_is_retried_later_through_the_guard(mailbox, smtp_server, settings):
    settings.OUTREACH_RETRY_BASE_SECONDS = 0
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "later@example.com")
    smtp_server.behaviour.rcpt_reply = "451 4.3.0 try again later"
    (job_id,) = dispatch_due()
    outcome = send_job_process(job_id=job_id, worker_id="w1")
    assert outcome.state == S.SCHEDULED and "451" in outcome.detail
    assert smtp_server.received == []

    # The retry re-enters the guard: a stop committed meanwhile cancels it.
    enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    assert dispatch_due() == []
    job = SendJob.objects.get(pk=job_id)
    assert job.state == S.CANCELED and job.cancel_reason == "replied" and job.attempts == 1


def test_a_stop_committed_between_a_4xx_and_the_retry_record_leaves_no_live_job(mailbox, smtp_server):
    """The transport refused (4xx) while a reply's stop committed: the retry is canceled, not left scheduled.

    The stop saw the job authorized (in flight) and could not cancel it; the
    record of the retry locks the enrollment as the stop did, sees the stop,
    and cancels the job it would otherwise schedule again.
    """
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "raced@example.com")
    (job_id,) = dispatch_due()
    job = send_job_claim(job_id=job_id, worker_id="w1")
    assert send_job_authorize(job_id=job_id, worker_id="w1", version=job.version).outcome == "authorized"
    # ... the transport answers 451 4.3.0 here; before the worker records it, the reply's stop commits:
    summary = enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    assert (summary.canceled, summary.in_flight) == (0, 1)

    state = send_job_record_retry(job_id=job_id, worker_id="w1", error="451 4.3.0 try again later")

    assert state == S.CANCELED
    job = SendJob.objects.get(pk=job_id)
    assert (job.state, job.cancel_reason) == (S.CANCELED, "replied")
    live = SendJob.objects.filter(enrollment=enrollment, state__in=(S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED))
    assert not live.exists()
    kinds = list(TimelineEvent.objects.filter(job=job).values_list("kind", flat=True))
    assert kinds[-2:] == ["job_retry_scheduled", "job_canceled"]
    assert dispatch_due() == [] and smtp_server.received == []


def test_retries_are_bounded(mailbox, smtp_server, settings):
    settings.OUTREACH_RETRY_BASE_SECONDS = 0
    settings.OUTREACH_MAX_ATTEMPTS = 2
    enroll(make_sequence(mailbox=mailbox, steps=1), "later@example.com")
    smtp_server.behaviour.rcpt_reply = "451 4.3.0 try again later"
    states = []
    for _ in range(2):
        (job_id,) = dispatch_due()
        states.append(send_job_process(job_id=job_id, worker_id="w1").state)
    assert states == [S.SCHEDULED, S.FAILED]
    assert "gave up after 2 attempts" in SendJob.objects.get(pk=job_id).error


def test_550_user_unknown_fails_and_suppresses_the_address(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=2)
    enrollment = enroll(sequence, "nobody@example.com")
    other = enroll(make_sequence(mailbox=mailbox, steps=1), "nobody@example.com")
    smtp_server.behaviour.rcpt_reply = "550 5.1.1 <nobody@example.com>: user unknown"
    job_ids = dispatch_due()
    outcome = send_job_process(job_id=first_job(enrollment).pk, worker_id="w1")
    assert outcome.state == S.FAILED
    assert smtp_server.received == []
    entry = Suppression.objects.get(value="nobody@example.com")
    assert entry.reason == Suppression.Reason.HARD_BOUNCE and "5.1.1" in entry.note
    enrollment.refresh_from_db()
    other.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "hard_bounce")
    assert (other.status, other.stop_reason) == ("stopped", "hard_bounce")
    assert SendJob.objects.get(pk=first_job(other).pk).state == S.CANCELED
    assert len(job_ids) == 2


def test_550_policy_refusal_fails_without_suppressing(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "policy@example.com")
    smtp_server.behaviour.rcpt_reply = "550 5.7.1 <policy@example.com>: Recipient address rejected: Access denied"
    dispatch_due()
    assert send_job_process(job_id=first_job(enrollment).pk, worker_id="w1").state == S.FAILED
    assert not Suppression.objects.exists()


def test_a_timeout_after_data_is_an_unknown_outcome_never_resent(mailbox, smtp_server, settings):
    settings.OUTREACH_SMTP_TIMEOUT = 0.5
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "slow@example.com")
    smtp_server.behaviour.data_delay = 1.5
    dispatch_due()
    outcome = send_job_process(job_id=first_job(enrollment).pk, worker_id="w1")
    assert outcome.state == S.UNKNOWN
    job = first_job(enrollment)
    assert "during DATA" in job.error
    # Nothing is scheduled after an unknown outcome, and nothing is retried.
    assert dispatch_due() == []
    assert enrollment.jobs.count() == 1


def test_a_dropped_connection_during_data_is_unknown(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "drop@example.com")
    smtp_server.behaviour.drop_in_data = True
    dispatch_due()
    assert send_job_process(job_id=first_job(enrollment).pk, worker_id="w1").state == S.UNKNOWN


def test_a_worker_lost_after_authorization_becomes_unknown_and_is_not_resent(mailbox, smtp_server, settings):
    enroll(make_sequence(mailbox=mailbox, steps=1), "lost@example.com")
    (job_id,) = dispatch_due()
    job = send_job_claim(job_id=job_id, worker_id="dead-worker")
    assert send_job_authorize(job_id=job_id, worker_id="dead-worker", version=job.version).outcome == "authorized"
    # The worker dies here. Its lease runs out:
    SendJob.objects.filter(pk=job_id).update(lease_until="2000-01-01T00:00:00Z")
    result = leases_sweep()
    assert result["unknown"] == 1
    job = SendJob.objects.get(pk=job_id)
    assert job.state == S.UNKNOWN and "dead-worker" in job.error
    event = TimelineEvent.objects.get(job=job, kind="worker_lost")
    assert event.data["message_id"] == job.message_id
    assert dispatch_due() == [] and smtp_server.received == []


def test_a_lost_claim_is_handed_out_again_and_the_stale_worker_cannot_authorize(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "claim@example.com")
    (job_id,) = dispatch_due()
    stale = send_job_claim(job_id=job_id, worker_id="slow-worker")
    SendJob.objects.filter(pk=job_id).update(lease_until="2000-01-01T00:00:00Z")
    assert leases_sweep()["requeued"] == 1
    assert send_job_process(job_id=job_id, worker_id="w2").state == S.SUBMITTED
    late = send_job_authorize(job_id=job_id, worker_id="slow-worker", version=stale.version)
    assert late.outcome == "lost"
    assert len(smtp_server.received) == 1
    assert first_job(enrollment).worker_id == "w2"


def test_outside_the_sending_window_the_job_waits(mailbox, smtp_server):
    from datetime import time

    mailbox.window_start, mailbox.window_end = time(0, 0), time(0, 0, 1)
    mailbox.save(update_fields=["window_start", "window_end"])
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "window@example.com")
    dispatch_due()
    outcome = send_job_process(job_id=first_job(enrollment).pk, worker_id="w1")
    assert (outcome.state, outcome.detail) == ("deferred", "outside_sending_window")
    job = first_job(enrollment)
    assert job.state == S.SCHEDULED and job.scheduled_at.hour == 0
    assert smtp_server.received == []


def test_daily_cap_defers_the_job_past_the_cap(mailbox, smtp_server):
    mailbox.daily_cap = 1
    mailbox.save(update_fields=["daily_cap"])
    sequence = make_sequence(mailbox=mailbox, steps=1)
    enroll(sequence, "one@example.com")
    enroll(sequence, "two@example.com")
    outcomes = [send_job_process(job_id=j, worker_id="w1") for j in dispatch_due()]
    assert [o.state for o in outcomes] == [S.SUBMITTED, "deferred"]
    assert outcomes[1].detail == "daily_cap_reached"
    assert len(smtp_server.received) == 1


def test_a_failed_step_stops_the_enrollment_and_a_retry_sends_it_and_continues(mailbox, smtp_server):
    from django.core.management import call_command

    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "content@example.com")
    smtp_server.behaviour.data_reply = "554 5.6.0 message content rejected"
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == S.FAILED
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == (Enrollment.Status.STOPPED, "failed")

    smtp_server.behaviour.data_reply = None
    out = io.StringIO()
    call_command("retry", str(job_id), stdout=out)
    assert f"job {job_id}: retried as job" in out.getvalue()
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.ACTIVE
    for _ in range(2):
        (due,) = dispatch_due()
        assert send_job_process(job_id=due, worker_id="w1").state == S.SUBMITTED
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.COMPLETED
    assert len(smtp_server.received) == 2
    with pytest.raises(ServiceError, match="retried already"):
        send_job_retry(job_id=job_id)


def test_doctor_leaves_no_active_enrollment_without_a_job_or_a_reason(mailbox, smtp_server):
    from django.core.management import call_command

    failed = enroll(make_sequence(mailbox=mailbox, steps=1), "failed@example.com")
    idle = enroll(make_sequence(mailbox=mailbox, steps=2), "idle@example.com")
    # Rows as an earlier version left them: a failed job under an active enrollment, and an active
    # enrollment whose only job was canceled (bare updates stand in for that history).
    SendJob.objects.filter(enrollment=failed).update(state=S.FAILED, error="535 authentication failed")
    SendJob.objects.filter(enrollment=idle).update(state=S.CANCELED, cancel_reason="legacy")

    out = io.StringIO()
    call_command("doctor", "--dry-run", stdout=out)
    assert "2 active enrollment(s) without a live job; 2 would be repaired" in out.getvalue()
    call_command("doctor", stdout=out)
    failed.refresh_from_db()
    assert (failed.status, failed.stop_reason) == (Enrollment.Status.STOPPED, "failed")
    assert SendJob.objects.filter(enrollment=idle, state=S.SCHEDULED).count() == 1
    assert enrollments_doctor(repair=False) == []
