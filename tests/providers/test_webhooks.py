"""anymail tracking webhooks -> the provider-event ledger, the suppression ledger and job states."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from mailboxes.models import ProviderEvent
from sequences.models import Enrollment, SendJob, Suppression, TimelineEvent
from tests.factories import enroll, make_sequence
from tests.providers.helpers import basic_auth, esp_mailbox, send_next

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # anymail warns that SendGrid support is community-maintained; the webhook format is what it parses.
    pytest.mark.filterwarnings("ignore::anymail.exceptions.AnymailNotSupportedWarning"),
]
S = SendJob.State
SENDGRID = "/webhooks/anymail/sendgrid/tracking/"
BREVO = "/webhooks/anymail/brevo/tracking/"


def post(path: str, payload, auth: str | None = None):
    extra = {"HTTP_AUTHORIZATION": auth} if auth else {}
    return Client().post(path, data=json.dumps(payload), content_type="application/json", **extra)


def sendgrid_event(job: SendJob, event: str, event_id: str, **fields) -> dict:
    return {"email": job.enrollment.contact.email, "timestamp": int(time.time()), "event": event,
            "sg_event_id": event_id, "sg_message_id": "sg.x.filter", "anymail_id": job.provider_message_id,
            **fields}


def deliver(events: list[dict], path: str = SENDGRID):
    response = post(path, events, basic_auth())
    assert response.status_code == 200, response.content
    return response


@pytest.fixture
def sent(provider_api):
    """A step-1 message handed to SendGrid, the enrollment's step 2 scheduled, and the same address in a
    second sequence."""
    mailbox = esp_mailbox(provider_api, "sendgrid")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)), "ada@example.com")
    job, outcome = send_next(enrollment)
    assert outcome.state == S.SUBMITTED and job.provider_message_id
    other = enroll(make_sequence(mailbox=mailbox, steps=1, waits=(3600,)), "ada@example.com")
    return SendJob.objects.select_related("enrollment__contact").get(pk=job.pk), other


def test_webhooks_require_basic_auth(sent):
    job, _ = sent
    payload = [sendgrid_event(job, "delivered", "ev-auth")]

    for auth in (None, basic_auth("outreach-hooks:wrong"), "Bearer something"):
        response = post(SENDGRID, payload, auth)
        assert response.status_code == 401
        assert response["WWW-Authenticate"].startswith("Basic ")
    assert Client().head(SENDGRID).status_code == 200  # ESPs probe the URL; it does nothing
    assert not ProviderEvent.objects.exists()
    job.refresh_from_db()
    assert job.state == S.SUBMITTED

    deliver(payload)
    assert ProviderEvent.objects.count() == 1


def test_without_a_configured_secret_every_webhook_is_refused(sent, settings):
    job, _ = sent
    settings.ANYMAIL = {"WEBHOOK_SECRET": ""}

    assert post(SENDGRID, [sendgrid_event(job, "delivered", "x")], basic_auth(":")).status_code == 401
    assert not ProviderEvent.objects.exists()


def test_delivered_moves_submitted_to_accepted_with_delivered_at(sent):
    job, _ = sent
    occurred = int(time.time()) - 5

    deliver([sendgrid_event(job, "delivered", "ev-1", timestamp=occurred, response="250 2.0.0 OK")])

    job.refresh_from_db()
    assert job.state == S.ACCEPTED
    assert int(job.delivered_at.timestamp()) == occurred
    row = ProviderEvent.objects.get()
    assert (row.provider, row.event_id, row.event_type, row.job_id) == ("sendgrid", "ev-1", "delivered", job.pk)
    assert row.effect == f"job {job.pk} accepted (delivered)"
    events = TimelineEvent.objects.filter(job=job, kind__in=("job_delivered", "provider_event"))
    assert list(events.values_list("kind", flat=True)) == ["job_delivered", "provider_event"]


def test_the_same_event_twice_acts_once(sent):
    job, _ = sent
    event = sendgrid_event(job, "spamreport", "ev-dup")

    deliver([event])
    deliver([event, event])

    assert ProviderEvent.objects.count() == 1
    assert Suppression.objects.filter(value="ada@example.com").count() == 1
    assert TimelineEvent.objects.filter(kind="provider_event").count() == 1


def test_a_hard_bounce_suppresses_the_address_stops_its_enrollments_and_fails_the_job(sent):
    job, other = sent

    deliver([sendgrid_event(job, "bounce", "ev-b", type="bounce", status="5.1.1",
                            reason="550 5.1.1 The email account that you tried to reach does not exist")])

    entry = Suppression.objects.get(value="ada@example.com")
    assert (entry.reason, entry.source) == ("hard_bounce", "webhook:sendgrid:ev-b")
    assert "5.1.1" in entry.note
    job.refresh_from_db()
    assert job.state == S.FAILED and "hard bounce" in job.error
    for enrollment in (job.enrollment, other):
        enrollment.refresh_from_db()
        assert (enrollment.status, enrollment.stop_reason) == ("stopped", "hard_bounce")
    assert other.jobs.get().state == S.CANCELED
    assert job.enrollment.jobs.get(step__position=2).state == S.CANCELED
    effect = ProviderEvent.objects.get().effect
    assert "hard_bounce suppression added; 2 enrollment(s) stopped, 2 job(s) canceled" in effect


def test_a_blocked_bounce_is_soft_and_suppresses_nothing(sent):
    job, _ = sent

    deliver([sendgrid_event(job, "bounce", "ev-soft", type="blocked", reason="421 try again later")])

    assert not Suppression.objects.exists()
    job.refresh_from_db()
    assert job.state == S.SUBMITTED
    assert ProviderEvent.objects.get().effect == "soft bounce: recorded, no suppression"


def test_a_complaint_suppresses_and_stops_every_enrollment_of_the_address(sent):
    job, other = sent

    deliver([sendgrid_event(job, "spamreport", "ev-c")])

    assert Suppression.objects.get(value="ada@example.com").reason == "complaint"
    assert set(Enrollment.objects.filter(contact__email="ada@example.com").values_list("status", "stop_reason")) == {
        ("stopped", "complained")}
    assert other.jobs.get().state == S.CANCELED
    job.refresh_from_db()
    assert job.state == S.SUBMITTED  # it was sent; a complaint does not unsend it


def test_an_unsubscribe_event_suppresses_the_address(sent):
    job, _ = sent

    deliver([sendgrid_event(job, "unsubscribe", "ev-u")])

    assert Suppression.objects.get(value="ada@example.com").reason == "unsubscribe"
    job.enrollment.refresh_from_db()
    assert job.enrollment.stop_reason == "unsubscribed"


def test_a_rejected_message_fails_its_job(sent):
    job, _ = sent

    deliver([sendgrid_event(job, "dropped", "ev-r", reason="Bounced Address")])

    job.refresh_from_db()
    assert job.state == S.FAILED
    # Dropped for a previous bounce says the address is bad.
    assert Suppression.objects.get(value="ada@example.com").reason == "hard_bounce"


def test_out_of_order_events_never_move_a_job_backwards(sent):
    job, _ = sent

    deliver([sendgrid_event(job, "bounce", "ev-1", type="bounce", reason="550 5.1.1 no such user")])
    deliver([sendgrid_event(job, "delivered", "ev-0"), sendgrid_event(job, "processed", "ev-00")])

    job.refresh_from_db()
    assert job.state == S.FAILED and job.delivered_at is None
    late = ProviderEvent.objects.get(event_id="ev-0")
    assert late.effect == f"job {job.pk} is failed: not moved (the state machine never goes back)"
    assert ProviderEvent.objects.get(event_id="ev-00").effect == "recorded; no effect"
    assert ProviderEvent.objects.count() == 3


def test_delivered_after_a_complaint_still_records_delivery(sent):
    job, _ = sent

    deliver([sendgrid_event(job, "spamreport", "ev-2")])
    deliver([sendgrid_event(job, "delivered", "ev-1")])

    job.refresh_from_db()
    assert job.state == S.ACCEPTED  # submitted -> accepted is forward, whatever arrived first


def brevo_event(job: SendJob, event: str, **fields) -> dict:
    return {"event": event, "email": job.enrollment.contact.email, "id": 1234, "message-id": job.provider_message_id,
            "ts_epoch": int(time.time() * 1000), "date": "2026-11-29 20:00:00", "subject": "Hello", **fields}


def test_brevo_events_without_ids_are_deduplicated_and_soft_bounces_are_soft(provider_api):
    mailbox = esp_mailbox(provider_api, "brevo")
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "grace@example.com")
    job, _ = send_next(enrollment)
    job = SendJob.objects.select_related("enrollment__contact").get(pk=job.pk)
    delivered = brevo_event(job, "delivered")

    deliver(delivered, BREVO)
    deliver(delivered, BREVO)
    deliver(brevo_event(job, "soft_bounce", reason="mailbox full"), BREVO)

    assert ProviderEvent.objects.filter(provider="brevo").count() == 2
    assert ProviderEvent.objects.get(event_type="delivered").event_id.startswith("sha256:")
    job.refresh_from_db()
    assert job.state == S.ACCEPTED
    assert not Suppression.objects.exists()

    deliver(brevo_event(job, "hard_bounce", reason="unknown user"), BREVO)
    assert Suppression.objects.get(value="grace@example.com").reason == "hard_bounce"
    job.refresh_from_db()
    assert job.state == S.FAILED  # accepted -> failed: a bounce after delivery is forward
