"""The two race fixtures (docs/architecture.md), for every kind of stop.

reply-first: the worker pauses after it claimed the job (or after preparing
it), the stop commits, the worker resumes -> the job is canceled and the SMTP
server receives nothing.
send-first: the message passes authorization first, then the stop commits ->
exactly one message leaves, it is labelled "already submitted — cannot
recall", and every later step is canceled.
"""

from __future__ import annotations

import pytest

from proving import variants
from sequences.labels import job_label, reason_sentence
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.stops import enrollment_pause, enrollment_stop, mailbox_pause, sequence_pause
from sequences.services.suppressions import suppression_add
from tests.factories import enroll, make_sequence
from tests.races.helpers import Gate, Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def stop_by(kind: str, enrollment: Enrollment):
    """Commit a stop of `kind` that reaches this enrollment; returns the expected cancel reason."""
    if kind == "stop":
        enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
        return "replied"
    if kind == "pause_enrollment":
        enrollment_pause(enrollment_id=enrollment.pk)
        return "enrollment_paused"
    if kind == "pause_sequence":
        sequence_pause(sequence_id=enrollment.sequence_id)
        return "sequence_paused"
    if kind == "pause_mailbox":
        mailbox_pause(mailbox_id=enrollment.sequence.mailbox_id)
        return "mailbox_paused"
    if kind == "suppress_address":
        suppression_add(value=enrollment.contact.email, reason="unsubscribe", source="test")
        return "unsubscribed"
    if kind == "suppress_domain":
        suppression_add(value="@" + enrollment.contact.domain, reason="manual", note="test")
        return "suppressed"
    raise AssertionError(kind)


def assert_stopped(kind: str, enrollment: Enrollment, reason: str) -> None:
    """The stop of `kind` is what the database says now: the enrollment, sequence or mailbox it changed."""
    enrollment = Enrollment.objects.select_related("sequence__mailbox").get(pk=enrollment.pk)
    if kind in ("stop", "suppress_address", "suppress_domain"):
        assert (enrollment.status, enrollment.stop_reason) == (Enrollment.Status.STOPPED, reason)
    elif kind == "pause_enrollment":
        assert enrollment.status == Enrollment.Status.PAUSED
    elif kind == "pause_sequence":
        assert enrollment.sequence.status == enrollment.sequence.Status.PAUSED
    else:
        assert enrollment.sequence.mailbox.paused


STOP_EVENTS = ["enrollment_stopped", "enrollment_paused", "sequence_paused", "mailbox_paused"]
STOPS = ["stop", "pause_enrollment", "pause_sequence", "pause_mailbox", "suppress_address", "suppress_domain"]


@pytest.mark.parametrize("checkpoint", ["claimed", "prepared"])
@pytest.mark.parametrize("kind", STOPS)
def test_reply_first_nothing_leaves(kind, checkpoint, mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "prospect@example.com")
    (job_id,) = dispatch_due()
    gate = Gate(checkpoint)
    worker = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1"))
    worker.start()
    gate.wait()
    reason = stop_by(kind, enrollment)
    gate.release()
    outcome = worker.outcome()

    assert smtp_server.received == []
    job = SendJob.objects.select_related("enrollment").get(pk=job_id)
    assert (job.state, job.cancel_reason) == (S.CANCELED, reason)
    assert outcome.state == "lost"
    why = reason_sentence(reason).rstrip(".")
    assert job_label(job).startswith(f"Canceled — never sent: {why[:1].lower()}{why[1:]} (")
    assert not SendJob.objects.filter(enrollment=enrollment).exclude(state=S.CANCELED).exists()
    assert_stopped(kind, enrollment, reason)


@pytest.mark.parametrize("kind", STOPS)
def test_send_first_one_message_labelled_cannot_recall(kind, mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=3), "prospect@example.com")
    (job_id,) = dispatch_due()
    gate = Gate("authorized")
    worker = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1"))
    worker.start()
    gate.wait()  # authorization committed; the hand-off is next
    reason = stop_by(kind, enrollment)
    gate.release()
    assert worker.outcome().state == S.SUBMITTED

    assert len(smtp_server.received) == 1
    job = SendJob.objects.select_related("enrollment").get(pk=job_id)
    assert job.state == S.SUBMITTED
    stop_event = TimelineEvent.objects.filter(kind__in=STOP_EVENTS).latest("at")
    assert job.authorized_at < stop_event.at, "authorization committed before the stop"
    assert job_label(job).startswith("Already submitted at ") and job_label(job).endswith("cannot recall")
    # No later step may follow, whatever the stop was: the record of the submission saw the stop.
    assert dispatch_due() == []
    assert not SendJob.objects.filter(enrollment=enrollment).exclude(pk=job_id).exists()
    assert_stopped(kind, enrollment, reason)


def test_send_first_after_submission_cancels_the_scheduled_follow_up(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=3, waits=(0, 3600, 3600)), "prospect@example.com")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    follow_up = SendJob.objects.get(enrollment=enrollment, state=S.SCHEDULED)

    summary = enrollment_stop(enrollment_id=enrollment.pk, reason="replied")

    assert (summary.canceled, summary.submitted, summary.in_flight) == (1, 1, 0)
    follow_up.refresh_from_db()
    assert (follow_up.state, follow_up.cancel_reason) == (S.CANCELED, "replied")
    first = SendJob.objects.select_related("enrollment").get(pk=job_id)
    assert job_label(first).startswith("Already submitted at ")
    assert len(smtp_server.received) == 1
    # Stopping twice changes nothing.
    again = enrollment_stop(enrollment_id=enrollment.pk, reason="unsubscribed")
    assert not again.changed
    enrollment.refresh_from_db()
    assert enrollment.stop_reason == "replied"


def test_the_stop_reports_a_job_in_flight_it_cannot_recall(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "prospect@example.com")
    (job_id,) = dispatch_due()
    gate = Gate("authorized")
    worker = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1"))
    worker.start()
    gate.wait()
    summary = enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    gate.release()
    worker.outcome()
    assert (summary.canceled, summary.in_flight) == (0, 1)
    assert len(smtp_server.received) == 1
    assert not SendJob.objects.filter(enrollment=enrollment).exclude(pk=job_id).exists()


def test_without_the_final_check_the_reply_first_race_sends(mailbox, smtp_server):
    """The same reply-first scenario with the guard bypassed: the message leaves after the stop."""
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "prospect@example.com")
    (job_id,) = dispatch_due()
    gate = Gate("claimed")
    worker = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1",
                                             authorize=variants.send_job_authorize_unchecked))
    worker.start()
    gate.wait()
    enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    gate.release()
    worker.outcome()
    assert len(smtp_server.received) == 1, "the bypassed guard should let the message leave"
