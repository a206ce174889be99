"""Webhook events stand alone, act only on the contact of the job they name, and never on a domain."""

from __future__ import annotations

import json
import time

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client

from mailboxes.models import ProviderEvent
from sequences.models import SendJob, Suppression
from tests.factories import enroll, make_sequence
from tests.providers.helpers import basic_auth, esp_mailbox, send_next

pytestmark = pytest.mark.filterwarnings("ignore::anymail.exceptions.AnymailNotSupportedWarning")
SENDGRID = "/webhooks/anymail/sendgrid/tracking/"


def event(job: SendJob, kind: str, event_id: str, email: str | None = None) -> dict:
    return {"email": job.enrollment.contact.email if email is None else email, "timestamp": int(time.time()),
            "event": kind, "sg_event_id": event_id, "anymail_id": job.provider_message_id}


def post(events: list[dict]):
    return Client(raise_request_exception=False).post(SENDGRID, data=json.dumps(events),
                                                      content_type="application/json",
                                                      HTTP_AUTHORIZATION=basic_auth())


@pytest.fixture
def jobs(provider_api):
    mailbox = esp_mailbox(provider_api, "sendgrid")
    sequence = make_sequence(mailbox=mailbox, steps=1)
    made = []
    for email in ("ann@example.net", "ben@example.net", "cat@example.net"):
        job, outcome = send_next(enroll(sequence, email))
        assert outcome.state == SendJob.State.SUBMITTED
        made.append(SendJob.objects.select_related("enrollment__contact").get(pk=job.pk))
    return made


@pytest.mark.django_db(transaction=True)
def test_a_malformed_event_is_recorded_as_rejected_and_the_rest_of_the_batch_applies(jobs):
    ann, ben, cat = jobs
    batch = [event(ann, "spamreport", "ev-a"), event(ben, "delivered", "ev-nul", email="ben\x00@example.net"),
             event(cat, "spamreport", "ev-b")]

    response = post(batch)
    assert response.status_code == 200, response.content
    assert post(batch).status_code == 200  # the ESP's retry changes nothing

    assert set(Suppression.objects.values_list("value", flat=True)) == {"ann@example.net", "cat@example.net"}
    rejected = ProviderEvent.objects.get(event_type="malformed")
    assert rejected.effect.startswith("rejected:") and "\x00" not in json.dumps(rejected.raw)
    assert ProviderEvent.objects.count() == 3
    ben.refresh_from_db()
    assert ben.state == SendJob.State.SUBMITTED


@pytest.mark.django_db(transaction=True)
def test_a_domain_recipient_suppresses_nothing(jobs):
    ann, _, _ = jobs
    assert post([event(ann, "spamreport", "ev-dom", email="@example.net")]).status_code == 200
    assert not Suppression.objects.exists()
    assert ProviderEvent.objects.get().effect.startswith("rejected:")


@pytest.mark.django_db(transaction=True)
def test_an_event_naming_a_job_but_another_address_does_nothing(jobs):
    ann, _, _ = jobs
    assert post([event(ann, "spamreport", "ev-x1", email="victim@example.org"),
                 event(ann, "bounce", "ev-x2", email="victim@example.org")]).status_code == 200
    assert not Suppression.objects.exists()
    ann.refresh_from_db()
    assert ann.state == SendJob.State.SUBMITTED
    effects = list(ProviderEvent.objects.values_list("effect", flat=True))
    assert all("is not the contact of job" in e for e in effects), effects


@pytest.mark.django_db(transaction=True)
def test_an_event_naming_no_job_does_nothing(jobs):
    ann, _, _ = jobs
    stray = event(ann, "spamreport", "ev-stray") | {"anymail_id": "not-ours"}
    assert post([stray]).status_code == 200
    assert not Suppression.objects.exists()


@pytest.mark.django_db  # Django's model checks ask SQLite whether it has JSON support
def test_an_esp_missing_a_setting_is_refused_at_start_up(settings):
    settings.OUTREACH_WEBHOOK_ESPS = ["sendgrid", "mailgun"]
    with pytest.raises(SystemCheckError, match="MAILGUN_WEBHOOK_SIGNING_KEY"):
        call_command("check")
    settings.ANYMAIL = settings.ANYMAIL | {"MAILGUN_WEBHOOK_SIGNING_KEY": "key"}
    call_command("check")
