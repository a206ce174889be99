"""Scheduled send at the provider, then a stop: the provider is asked to cancel, and the label says what it answered."""

from __future__ import annotations

from datetime import timedelta

import django_rq
import pytest
from django.urls import reverse

from sequences.labels import job_label, stamp
from sequences.models import SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.stops import (
    enrollment_pause,
    enrollment_resume,
    enrollment_stop,
    mailbox_pause,
    sequence_pause,
    sequence_resume,
)
from sequences.services.suppressions import suppression_add
from sequences.tasks import provider_cancel
from tests.factories import enroll, make_sequence
from tests.providers.helpers import esp_mailbox, run_default_queue, send_next
from tests.races.helpers import Gate, Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def label(job: SendJob) -> str:
    return job_label(SendJob.objects.select_related("enrollment__sequence__mailbox").get(pk=job.pk))


def scheduled_at_provider(provider_api, *, esp="sendgrid", wait_minutes=30, email="ada@example.com", steps=2):
    """Step 1 sent now; step 2 (due in `wait_minutes`) handed to the provider early, for later delivery."""
    mailbox = esp_mailbox(provider_api, esp, ahead_minutes=60)
    waits = (0, wait_minutes * 60) + (3 * 86400,) * (steps - 2)
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=steps, waits=waits), email)
    first, outcome = send_next(enrollment)
    assert outcome.state == S.SUBMITTED and first.provider_send_at is None  # due now: sent now
    second, outcome = send_next(enrollment)  # queued an hour ahead of its time by the dispatcher
    assert outcome.state == S.SUBMITTED
    return enrollment, second


def kinds(job: SendJob) -> list[str]:
    return list(TimelineEvent.objects.filter(job=job).values_list("kind", flat=True))


def test_a_sendgrid_scheduled_send_records_batch_send_at_and_cancelable_until(provider_api):
    enrollment, job = scheduled_at_provider(provider_api)

    (batch,) = provider_api.received("sendgrid.batch")  # one batch, for the scheduled message only
    assert batch.status == 201
    scheduled = provider_api.received("sendgrid.send")[1].body
    assert scheduled["batch_id"] == job.provider_schedule_id != ""
    assert scheduled["send_at"] == int(job.provider_send_at.timestamp())
    assert job.provider_send_at == job.scheduled_at.replace(microsecond=0)
    assert job.cancelable_until == job.provider_send_at - timedelta(minutes=10)
    assert job.submitted_at < job.provider_send_at
    assert label(job) == (f"Scheduled at provider for {stamp(job.provider_send_at)}; "
                          f"cancelable until {stamp(job.cancelable_until)}")
    event = TimelineEvent.objects.get(job=job, kind="job_submitted")
    assert event.data["provider_schedule_id"] == job.provider_schedule_id
    assert event.data["cancelable_until"] == job.cancelable_until.isoformat()
    assert dispatch_due() == []  # the step after it waits for its own time


def test_stop_then_sendgrid_confirms_the_cancel(provider_api):
    enrollment, job = scheduled_at_provider(provider_api)

    summary = enrollment_stop(enrollment_id=enrollment.pk, reason="replied")

    assert summary.submitted == 2  # counted as submitted until the provider confirms
    job.refresh_from_db()
    assert job.provider_cancel_status == "requested"
    assert label(job).endswith("; cancellation requested")
    assert django_rq.get_queue("default").count == 1  # enqueued after commit, on "default"
    assert provider_api.received("sendgrid.cancel") == []  # nothing called inside the stop

    run_default_queue()

    (cancel,) = provider_api.received("sendgrid.cancel")
    assert cancel.body == {"batch_id": job.provider_schedule_id, "status": "cancel"}
    job.refresh_from_db()
    assert (job.state, job.provider_cancel_status) == (S.SUBMITTED, "confirmed")
    assert label(job) == f"Scheduled at provider for {stamp(job.provider_send_at)}; cancellation confirmed"
    assert kinds(job)[-2:] == ["provider_cancel_requested", "provider_cancel_confirmed"]
    requested = TimelineEvent.objects.get(job=job, kind="provider_cancel_requested")
    assert requested.data["reason"] == "replied"


def test_stop_past_cancelable_until_is_refused_without_claiming_a_cancel(provider_api):
    # Due in 5 minutes: SendGrid's 10-minute window closed before the stop.
    enrollment, job = scheduled_at_provider(provider_api, wait_minutes=5)
    assert job.cancelable_until < job.submitted_at

    enrollment_stop(enrollment_id=enrollment.pk, reason="unsubscribed")
    run_default_queue()

    job.refresh_from_db()
    assert job.provider_cancel_status == "refused"
    assert "past cancelable_until" in job.provider_cancel_detail
    assert label(job).endswith("; cancellation refused: past cancelable_until")
    # SendGrid may answer 201 this late without honouring it, so it is not even asked.
    assert provider_api.received("sendgrid.cancel") == []
    assert kinds(job)[-1] == "provider_cancel_refused"


def test_a_provider_500_is_a_failed_cancel(provider_api):
    enrollment, job = scheduled_at_provider(provider_api)
    provider_api.behave("sendgrid.cancel", status=500)

    enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    run_default_queue()

    job.refresh_from_db()
    assert job.provider_cancel_status == "failed" and "500" in job.provider_cancel_detail
    assert label(job).endswith("; cancellation failed: provider error")
    assert len(provider_api.received("sendgrid.cancel")) == 1


def test_a_cancel_that_times_out_is_failed_never_confirmed(provider_api, settings):
    enrollment, job = scheduled_at_provider(provider_api)
    settings.ANYMAIL = settings.ANYMAIL | {"REQUESTS_TIMEOUT": 0.3}
    provider_api.behave("sendgrid.cancel", delay=2)

    enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    run_default_queue()

    job.refresh_from_db()
    assert job.provider_cancel_status == "failed"
    assert "may or may not have canceled" in job.provider_cancel_detail


def test_brevo_scheduled_send_is_deleted_by_message_id(provider_api):
    enrollment, job = scheduled_at_provider(provider_api, esp="brevo")
    scheduled = provider_api.received("brevo.send")[1].body
    assert scheduled["scheduledAt"].startswith(job.provider_send_at.strftime("%Y-%m-%dT%H:%M:%S"))
    assert job.provider_schedule_id == job.provider_message_id
    assert job.cancelable_until == job.provider_send_at  # no lead time documented

    suppression_add(value="ada@example.com", reason="complaint", source="test")
    run_default_queue()

    (delete,) = provider_api.received("brevo.cancel")
    assert delete.method == "DELETE" and delete.status == 204
    job.refresh_from_db()
    assert job.provider_cancel_status == "confirmed"
    assert label(job).endswith("; cancellation confirmed")


def test_brevo_not_finding_the_scheduled_message_is_a_failed_cancel(provider_api):
    enrollment, job = scheduled_at_provider(provider_api, esp="brevo")
    provider_api.scheduled.clear()  # as if Brevo had already sent it

    enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    run_default_queue()

    job.refresh_from_db()
    assert job.provider_cancel_status == "failed" and "404" in job.provider_cancel_detail


def test_a_second_stop_and_a_duplicate_rq_job_ask_the_provider_once(provider_api):
    enrollment, job = scheduled_at_provider(provider_api)
    enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    suppression_add(value="ada@example.com", reason="unsubscribe", source="test")
    mailbox_pause(mailbox_id=enrollment.sequence.mailbox_id)

    run_default_queue()
    assert provider_cancel(job.pk) == "confirmed"  # Redis delivered it twice: the database decides

    assert len(provider_api.received("sendgrid.cancel")) == 1
    assert kinds(job).count("provider_cancel_requested") == 1


def test_a_stop_during_the_scheduled_hand_off_still_asks_the_provider(provider_api):
    """The stop commits while the job is authorized (in flight); the hand-off then lands as scheduled."""
    mailbox = esp_mailbox(provider_api, "sendgrid", ahead_minutes=60)
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 1800)), "race@example.com")
    send_next(enrollment)
    gate = Gate("authorized")
    (job_id,) = dispatch_due()
    sender = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1"))
    sender.start()
    gate.wait()

    summary = enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    gate.release()

    assert summary.in_flight == 1
    assert sender.outcome().state == S.SUBMITTED
    job = SendJob.objects.get(pk=job_id)
    assert job.provider_cancel_status == "requested"
    assert TimelineEvent.objects.get(job=job, kind="provider_cancel_requested").data["reason"] == \
        "stopped_during_hand_off"
    run_default_queue()
    job.refresh_from_db()
    assert job.provider_cancel_status == "confirmed"


def test_no_early_hand_off_to_a_provider_without_a_cancel_api(provider_api):
    mailbox = esp_mailbox(provider_api, "postmark", ahead_minutes=60)
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1, waits=(1800,)), "later@example.com")

    assert dispatch_due() == []
    assert enrollment.jobs.get().state == S.SCHEDULED


def test_by_default_an_esp_mailbox_hands_off_at_send_time(provider_api):
    mailbox = esp_mailbox(provider_api, "sendgrid")  # esp_schedule_ahead_minutes = 0
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 1800)), "default@example.com")
    send_next(enrollment)

    assert dispatch_due() == []
    assert enrollment.jobs.get(step__position=2).state == S.SCHEDULED


def test_resume_after_a_confirmed_cancel_schedules_that_step_again(provider_api):
    """The provider never sent the canceled message: a resume must not count it as sent."""
    enrollment, job = scheduled_at_provider(provider_api, steps=3)
    enrollment_pause(enrollment_id=enrollment.pk)
    run_default_queue()
    job.refresh_from_db()
    assert job.provider_cancel_status == "confirmed"

    resumed = enrollment_resume(enrollment_id=enrollment.pk)

    assert resumed.status == "active"
    again = SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED).get()
    assert again.step_id == job.step_id and again.pk != job.pk  # step 2 again, not step 3


def test_resume_after_a_refused_cancel_counts_the_message_as_sent(provider_api):
    enrollment, job = scheduled_at_provider(provider_api, wait_minutes=5, steps=3)  # past cancelable_until
    enrollment_pause(enrollment_id=enrollment.pk)
    run_default_queue()
    job.refresh_from_db()
    assert job.provider_cancel_status == "refused"

    enrollment_resume(enrollment_id=enrollment.pk)

    (after,) = SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED)
    assert after.step.position == 3  # step 2 may still leave: it counts as sent


def test_resume_while_the_cancel_is_pending_waits_for_the_providers_answer(provider_api):
    """Resumed before the provider answered: nothing is scheduled until the answer says what happened."""
    enrollment, job = scheduled_at_provider(provider_api, steps=3)
    enrollment_pause(enrollment_id=enrollment.pk)
    enrollment_resume(enrollment_id=enrollment.pk)  # the cancel request is still in the queue

    assert not SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED).exists()

    run_default_queue()  # the provider confirms

    again = SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED).get()
    assert again.step_id == job.step_id  # step 2 again: the canceled one never left
    assert TimelineEvent.objects.filter(job=again, kind="job_scheduled").get().data["reason"] == (
        "provider_cancel_confirmed")


def test_resume_while_the_cancel_is_pending_then_refused_goes_on_to_the_next_step(provider_api):
    enrollment, job = scheduled_at_provider(provider_api, wait_minutes=5, steps=3)  # past cancelable_until
    enrollment_pause(enrollment_id=enrollment.pk)
    enrollment_resume(enrollment_id=enrollment.pk)
    assert not SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED).exists()

    run_default_queue()  # refused: step 2 may still leave at its send time

    (after,) = SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED)
    assert after.step.position == 3
    assert after.scheduled_at >= job.provider_send_at  # after the message it follows


def test_a_sequence_pause_that_cancels_the_last_message_reopens_the_completed_enrollment(provider_api):
    """Two steps, the second at the provider: the enrollment is completed until that message is canceled."""
    enrollment, job = scheduled_at_provider(provider_api)
    assert enrollment.__class__.objects.get(pk=enrollment.pk).status == "completed"
    sequence_pause(sequence_id=enrollment.sequence_id)
    run_default_queue()  # confirmed

    enrollment.refresh_from_db()
    assert enrollment.status == "active"  # in a paused sequence: nothing scheduled yet
    assert not SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED).exists()

    sequence_resume(sequence_id=enrollment.sequence_id)

    again = SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED).get()
    assert again.step_id == job.step_id


def test_a_sequence_pause_past_cancelable_until_leaves_the_enrollment_completed(provider_api):
    enrollment, job = scheduled_at_provider(provider_api, wait_minutes=5)
    sequence_pause(sequence_id=enrollment.sequence_id)
    run_default_queue()  # refused: the message may still leave

    enrollment.refresh_from_db()
    assert enrollment.status == "completed"


def test_the_resume_page_says_the_next_step_waits_for_the_providers_answer(provider_api, client, django_user_model):
    enrollment, job = scheduled_at_provider(provider_api, steps=3)
    enrollment_pause(enrollment_id=enrollment.pk)
    client.force_login(django_user_model.objects.create_superuser("op", password="x"))

    page = client.post(reverse("enrollment_resume", args=[enrollment.pk]), follow=True).content.decode()

    result = page.split('id="result"')[1].split("</div>")[0]
    assert f"the provider has not answered the request to cancel email {job.pk}." in result
