"""One-click unsubscribe (RFC 2369 / RFC 8058) through the URL every prepared message carries."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest
from django.test import Client

from sequences.labels import job_label
from sequences.models import Enrollment, SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.tokens import unsubscribe_url
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
ONE_CLICK = "List-Unsubscribe=One-Click"


def path_of(url: str) -> str:
    return urlsplit(url).path


def token_of(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[1]


def one_click(client: Client, path: str):
    # What a mail client's unsubscribe button sends: a bare form POST, no cookies, no CSRF token.
    return client.post(path, data=ONE_CLICK, content_type="application/x-www-form-urlencoded")


def snapshot():
    return (
        list(Suppression.objects.values_list("id", flat=True)),
        list(Enrollment.objects.order_by("id").values_list("status", "version")),
        list(SendJob.objects.order_by("id").values_list("state", "version")),
        TimelineEvent.objects.count(),
    )


def sent_job(mailbox, email: str) -> SendJob:
    """The first job of a new enrollment of EMAIL, submitted to the test SMTP server: what a token names."""
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), email)
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    return SendJob.objects.get(pk=job_id, enrollment=enrollment)


def test_the_button_in_a_sent_message_unsubscribes_stops_every_enrollment_and_cancels(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600))
    enrollment = enroll(sequence, "ada@example.com")
    other_sequence = enroll(make_sequence(mailbox=mailbox, steps=1, waits=(3600,)), "ada@example.com")
    bystander = enroll(make_sequence(mailbox=mailbox, steps=1), "bob@example.com")
    dispatch_due()
    first = enrollment.jobs.get(step__position=1)
    assert send_job_process(job_id=first.pk, worker_id="w1").state == S.SUBMITTED

    (received,) = smtp_server.received
    header = received.message["List-Unsubscribe"]
    url = header.split(",")[0].strip().strip("<>")
    assert received.message["List-Unsubscribe-Post"] == ONE_CLICK

    response = one_click(Client(enforce_csrf_checks=True), path_of(url))

    assert response.status_code == 200
    assert b"You are unsubscribed" in response.content
    entry = Suppression.objects.get(value="ada@example.com")
    assert (entry.action, entry.reason, entry.source) == ("add", "unsubscribe", f"unsubscribe-link:job {first.pk}")
    assert "RFC 8058" in entry.note
    for e in (enrollment, other_sequence):
        e.refresh_from_db()
        assert (e.status, e.stop_reason) == ("stopped", "unsubscribed")
    second = enrollment.jobs.get(step__position=2)
    assert (second.state, second.cancel_reason) == (S.CANCELED, "unsubscribed")
    assert job_label(second).startswith("Canceled — never sent: the person unsubscribed (")
    assert other_sequence.jobs.get().state == S.CANCELED
    first.refresh_from_db()
    assert job_label(first).startswith("Already submitted at ") and job_label(first).endswith("cannot recall")
    bystander.refresh_from_db()
    assert bystander.status == "active" and bystander.jobs.get().state == S.QUEUED

    # In commit order (the id): SQLite's clock has milliseconds, so two events of one transaction can share one.
    kinds = list(TimelineEvent.objects.filter(email="ada@example.com", id__gte=TimelineEvent.objects.get(
        kind="suppression_added", data__entry=entry.pk).pk).order_by("id").values_list("kind", flat=True))
    assert kinds[0] == "suppression_added"
    assert kinds.count("enrollment_stopped") == 2 and kinds.count("job_canceled") == 2
    stopped = TimelineEvent.objects.get(kind="enrollment_stopped", enrollment=enrollment)
    assert stopped.data["source"] == f"unsubscribe-link:job {first.pk}"
    assert (stopped.data["canceled"], stopped.data["submitted"]) == (1, 1)
    assert dispatch_due() == []


def test_get_shows_a_button_and_changes_nothing(mailbox):
    job = sent_job(mailbox, "scanner@example.com")
    before = snapshot()

    response = Client().get(path_of(unsubscribe_url(job_id=job.pk, email="scanner@example.com")))

    assert response.status_code == 200
    assert b'<form method="post">' in response.content and b"scanner@example.com" in response.content
    assert snapshot() == before
    assert not Suppression.objects.exists()


def test_posting_twice_changes_nothing_the_second_time(mailbox):
    job = sent_job(mailbox, "twice@example.com")
    path = path_of(unsubscribe_url(job_id=job.pk, email="twice@example.com"))
    client = Client()

    assert one_click(client, path).status_code == 200
    after_first = snapshot()
    # The confirmation page's own button posts an empty form: same outcome, and idempotent.
    assert client.post(path).status_code == 200
    assert one_click(client, path).status_code == 200

    assert snapshot() == after_first
    assert Suppression.objects.filter(value="twice@example.com").count() == 1


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_tampered_token_is_a_clear_400_and_changes_nothing(mailbox, method):
    job = sent_job(mailbox, "victim@example.com")
    good = token_of(unsubscribe_url(job_id=job.pk, email="victim@example.com"))
    other = token_of(unsubscribe_url(job_id=job.pk, email="someone-else@example.com"))
    # Another address's payload under this token's timestamp and signature; a flipped signature byte.
    swapped = other.split(":", 1)[0] + ":" + good.split(":", 1)[1]
    flipped = good[:-1] + ("A" if good[-1] != "A" else "B")
    before = snapshot()

    for token in (swapped, flipped, "not-a-token"):
        response = getattr(Client(), method)(f"/u/{token}/")
        assert response.status_code == 400
        assert b"This unsubscribe link is not valid" in response.content
    assert snapshot() == before


def test_an_expired_token_is_a_400(mailbox, monkeypatch):
    job = sent_job(mailbox, "old@example.com")
    path = path_of(unsubscribe_url(job_id=job.pk, email="old@example.com"))
    later = time.time() + 366 * 24 * 3600
    monkeypatch.setattr("django.core.signing.time.time", lambda: later)

    assert one_click(Client(), path).status_code == 400
    assert not Suppression.objects.exists()
