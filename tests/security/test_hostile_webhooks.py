"""ESP tracking webhooks under hostile input: each event stands alone, a body that is no batch is a 400 with words,
and wrong passwords are throttled (issue 34, item 3)."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from mailboxes.models import ProviderEvent
from sequences.models import SendJob, Suppression
from tests.providers.helpers import basic_auth
from tests.security import test_webhooks

pytestmark = pytest.mark.filterwarnings("ignore::anymail.exceptions.AnymailNotSupportedWarning")
SENDGRID = "/webhooks/anymail/sendgrid/tracking/"
BREVO = "/webhooks/anymail/brevo/tracking/"
jobs = test_webhooks.jobs  # three jobs submitted through the ESP fake


def event(job: SendJob, kind: str, event_id: str, **changes) -> dict:
    return {"email": job.enrollment.contact.email, "timestamp": int(time.time()), "event": kind,
            "sg_event_id": event_id, "anymail_id": job.provider_message_id} | changes


def post(url: str, body: str, *, content_type: str = "application/json", auth: str | None = None,
         address: str = "203.0.113.7"):
    return Client(raise_request_exception=False).post(
        url, data=body, content_type=content_type, HTTP_AUTHORIZATION=auth or basic_auth(), REMOTE_ADDR=address)


@pytest.mark.django_db(transaction=True)
def test_bad_events_are_recorded_as_malformed_and_the_good_ones_of_the_batch_apply(jobs):
    ann, ben, _ = jobs
    bad = [
        "not an object",
        ["a", "list"],
        42,
        event(ann, "delivered", "ev-ts-text", timestamp="yesterday"),
        event(ann, "delivered", "ev-ts-list", timestamp=[1]),
        event(ann, "bounce", "ev-surrogate", email="ann\ud800@example.net"),
        event(ann, "bounce", "ev-surrogate-key") | {"note\udfff": "x"},
    ]
    batch = [event(ann, "spamreport", "ev-good-1"), *bad, event(ben, "spamreport", "ev-good-2")]
    body = json.dumps(batch)  # lone surrogates are written as \\ud800 escapes, as a hostile sender would

    response = post(SENDGRID, body)
    assert response.status_code == 200, response.content
    assert post(SENDGRID, body).status_code == 200  # the ESP's retry changes nothing

    assert set(Suppression.objects.values_list("value", flat=True)) == {"ann@example.net", "ben@example.net"}
    malformed = ProviderEvent.objects.filter(event_type="malformed")
    assert malformed.count() == len(bad), list(malformed.values_list("effect", flat=True))
    for row in malformed:
        assert row.effect.startswith("rejected:")
        json.dumps(row.raw).encode("utf-8")  # what is stored can be shown: no lone surrogate survives
    assert ProviderEvent.objects.exclude(event_type="malformed").count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("url", "body", "content_type", "words"), [
    (SENDGRID, "[{not json", "application/json", "not JSON"),
    (SENDGRID, b"[\"\xff\xfe\"]", "application/json", "not UTF-8"),
    (SENDGRID, "event=bounce&email=a@example.net", "application/x-www-form-urlencoded", "application/json"),
    (SENDGRID, "[]", "text/plain", "application/json"),
    (SENDGRID, '{"event": "bounce"}', "application/json", "array"),
    (SENDGRID, "7", "application/json", "array"),
    (BREVO, '[{"event": "hard_bounce"}]', "application/json", "object"),
])
def test_a_body_that_is_no_batch_is_a_400_in_words(provider_api, url, body, content_type, words):
    response = post(url, body, content_type=content_type)
    assert response.status_code == 400, (response.status_code, response.content)
    assert response["Content-Type"].startswith("text/plain")
    assert words in response.content.decode()
    assert not ProviderEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_wrong_passwords_are_throttled_per_address_and_the_right_one_still_works_elsewhere(provider_api, settings):
    settings.OUTREACH_WEBHOOK_AUTH_FAILURE_LIMIT = 5
    wrong = basic_auth("outreach-hooks:guess")
    statuses = [post(SENDGRID, "[]", auth=wrong, address="198.51.100.9").status_code for _ in range(8)]
    assert statuses == [401] * 5 + [429] * 3
    throttled = post(SENDGRID, "[]", address="198.51.100.9")  # even the right password, from that address
    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert post(SENDGRID, "[]", address="203.0.113.7").status_code == 200  # the ESP elsewhere is not locked out
