"""The ESP transport (django-anymail) in the guarded pipeline, against a local provider API."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from mailboxes.transports.base import OutcomeUnknown, TransientError
from mailboxes.transports.esp import EspConfig, EspTransport
from proving.harness.provider_api import API_KEY
from proving.harness.stack import free_port
from sequences import checkpoints
from sequences.labels import job_label
from sequences.models import SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.stops import enrollment_stop
from tests.factories import enroll, make_sequence
from tests.providers.helpers import esp_mailbox, send_next
from tests.races.helpers import Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def test_sendgrid_hand_off_records_the_message_and_request_ids(provider_api):
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "Ada@Example.com", first_name="Ada")

    job, outcome = send_next(enrollment)

    assert outcome.state == S.SUBMITTED
    (sent,) = provider_api.received("sendgrid.send")
    personalization = sent.body["personalizations"][0]
    assert personalization["to"] == [{"email": "ada@example.com", "name": "Ada"}]
    assert job.provider_message_id == personalization["custom_args"]["anymail_id"]
    assert job.provider_request_id == sent.answer_headers["X-Message-Id"]
    assert job.smtp_reply.startswith("202 sendgrid accepted")
    # Our headers travel unchanged: threading and RFC 8058 one-click unsubscribe.
    headers = sent.body["headers"]
    assert headers["Message-ID"] == job.message_id
    assert headers["List-Unsubscribe"].startswith("<http://testserver/u/")
    assert headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert sent.body["subject"] == "Hello Ada"
    assert sent.body["content"][0]["value"].startswith("Step 1 for Ada at Acme.")
    # Sent now: no batch, no send_at.
    assert "send_at" not in sent.body and provider_api.received("sendgrid.batch") == []
    event = TimelineEvent.objects.get(job=job, kind="job_submitted")
    assert event.data["provider_message_id"] == job.provider_message_id
    assert job.provider_schedule_id == "" and job.provider_send_at is None


def test_brevo_hand_off_records_the_message_id(provider_api):
    mailbox = esp_mailbox(provider_api, "brevo")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "grace@example.com")

    job, outcome = send_next(enrollment)

    assert outcome.state == S.SUBMITTED
    (sent,) = provider_api.received("brevo.send")
    assert sent.body["to"] == [{"email": "grace@example.com", "name": "Ada"}]
    assert sent.body["headers"]["Message-ID"] == job.message_id
    assert job.provider_message_id.startswith("<") and job.provider_message_id.endswith("@smtp-relay.mailin.fr>")
    assert "scheduledAt" not in sent.body


def test_the_api_url_comes_from_settings_never_from_the_mailbox(provider_api):
    # A mailbox row still carrying an API URL of its own is ignored: the key goes only to the settings' URL.
    mailbox = esp_mailbox(provider_api, "sendgrid", esp_api_url="http://127.0.0.1:9/elsewhere/")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "setting@example.com")

    assert send_next(enrollment)[1].state == S.SUBMITTED
    assert len(provider_api.received("sendgrid.send")) == 1


def test_a_slow_provider_holds_no_lock_a_stop_needs(provider_api):
    """The hand-off is stalled at the provider; a stop of the same enrollment commits meanwhile."""
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "slow@example.com")
    seen: list[bool] = []
    checkpoints.install("authorized", lambda job_id: seen.append(connection.in_atomic_block))
    answer = threading.Event()
    behaviour = provider_api.behave("sendgrid.send", hold=answer)
    (job_id,) = dispatch_due()
    sender = Worker(lambda: send_job_process(job_id=job_id, worker_id="w1"))
    sender.start()
    assert behaviour.arrived.wait(10), "the hand-off never reached the provider"

    stopper = Worker(lambda: enrollment_stop(enrollment_id=enrollment.pk, reason="replied"))
    stopper.start()
    summary = stopper.outcome(timeout=5)  # finishes while the provider still holds its answer
    answer.set()

    assert sender.outcome().state == S.SUBMITTED
    assert seen == [False]
    assert (summary.in_flight, summary.canceled) == (1, 0)
    job = SendJob.objects.select_related("enrollment__sequence__mailbox").get(pk=job_id)
    assert job_label(job).endswith("cannot recall")
    assert enrollment.jobs.count() == 1  # no step 2 after the stop


def test_a_timeout_of_the_hand_off_is_unknown_and_never_resent(provider_api, settings):
    settings.ANYMAIL = settings.ANYMAIL | {"REQUESTS_TIMEOUT": 0.5}
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "timeout@example.com")
    provider_api.behave("sendgrid.send", delay=3)

    job, outcome = send_next(enrollment)

    assert outcome.state == S.UNKNOWN
    (sent,) = provider_api.received("sendgrid.send")  # it reached the provider: it may go out
    anymail_id = sent.body["personalizations"][0]["custom_args"]["anymail_id"]
    assert "no answer to the hand-off" in job.error and anymail_id in job.error
    assert job_label(job).startswith("Outcome unknown — may have been sent")
    assert dispatch_due() == []
    assert enrollment.jobs.count() == 1
    assert len(provider_api.received("sendgrid.send")) == 1


def test_a_slow_answer_within_the_timeout_is_a_normal_submission(provider_api):
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "patient@example.com")
    provider_api.behave("sendgrid.send", delay=0.3)

    assert send_next(enrollment)[1].state == S.SUBMITTED


@pytest.mark.parametrize("status", [429, 500, 503])
def test_429_and_5xx_are_retried_later_through_the_guard(provider_api, settings, status):
    settings.OUTREACH_RETRY_BASE_SECONDS = 0
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "busy@example.com")
    provider_api.behave("sendgrid.send", status=status)

    job, outcome = send_next(enrollment)

    assert outcome.state == S.SCHEDULED and str(status) in outcome.detail
    # The retry re-enters the guard: a reply committed meanwhile cancels it.
    enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    assert dispatch_due() == []
    job.refresh_from_db()
    assert (job.state, job.cancel_reason) == (S.CANCELED, "replied")


def test_a_4xx_fails_the_job_without_suppressing(provider_api):
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "bad@example.com")
    provider_api.behave("sendgrid.send", status=400)

    job, outcome = send_next(enrollment)

    assert outcome.state == S.FAILED and "400" in job.error
    assert not Suppression.objects.exists()
    assert dispatch_due() == []


def test_a_wrong_api_key_blocks_the_mailbox_and_fails_no_job(provider_api, monkeypatch):
    monkeypatch.setenv("OUTREACH_SECRET_TEST_ESP_KEY", "not-the-key")
    mailbox = esp_mailbox(provider_api, "brevo")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "key@example.com")

    job, outcome = send_next(enrollment)

    # The key, not the message: the job waits for the mailbox, which is blocked until a check passes.
    assert outcome.state == S.SCHEDULED and "401" in job.error and "check the mailbox's API key" in job.error
    mailbox.refresh_from_db()
    assert mailbox.sending_status == "blocked" and "401" in mailbox.blocked_reason


def test_504_from_a_gateway_is_unknown(provider_api):
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "gateway@example.com")
    provider_api.behave("sendgrid.send", status=504)

    assert send_next(enrollment)[1].state == S.UNKNOWN


def test_connection_refused_is_transient_and_a_read_timeout_is_unknown(provider_api):
    """The transport alone: where the conversation stopped decides the error class."""
    message = b"From: a@outreach.test\r\nTo: b@example.com\r\nSubject: x\r\nMessage-ID: <x@y>\r\n\r\nbody\r\n"
    closed = EspTransport(EspConfig(esp="sendgrid", api_key=API_KEY,
                                    api_url=f"http://127.0.0.1:{free_port()}/sendgrid/v3/", timeout=1))
    with pytest.raises(TransientError, match="could not connect"):
        closed.send(sender="a@outreach.test", recipient="b@example.com", message=message)

    provider_api.behave("brevo.send", delay=2)
    stalled = EspTransport(EspConfig(esp="brevo", api_key=API_KEY, api_url=provider_api.url("brevo"), timeout=0.3))
    with pytest.raises(OutcomeUnknown, match="may have the message"):
        stalled.send(sender="a@outreach.test", recipient="b@example.com", message=message)
