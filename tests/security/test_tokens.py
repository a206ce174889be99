"""An unsubscribe token names one address that one of our submitted messages went to; never a domain."""

from __future__ import annotations

import pytest
from django.test import Client

from sequences.models import Enrollment, SendJob, Suppression
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.tokens import unsubscribe_token
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
ONE_CLICK = "List-Unsubscribe=One-Click"


def one_click(token: str):
    return Client().post(f"/u/{token}/", data=ONE_CLICK, content_type="application/x-www-form-urlencoded")


@pytest.fixture
def sent(mailbox):
    """Ada's step 1 submitted to the test SMTP server; Bob and Carol at the same domain, enrolled."""
    sequence = make_sequence(mailbox=mailbox, steps=1)
    ada = enroll(sequence, "ada@example.com")
    others = [enroll(sequence, "bob@example.com"), enroll(sequence, "carol@example.com")]
    dispatch_due()
    job = ada.jobs.get()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == SendJob.State.SUBMITTED
    return job, others


def test_a_signed_domain_never_suppresses_the_domain(sent):
    job, others = sent
    for value in ("@example.com", "example.com"):
        response = one_click(unsubscribe_token(job_id=job.pk, email=value))
        assert response.status_code == 400
    assert not Suppression.objects.exists()
    assert set(Enrollment.objects.filter(pk__in=[e.pk for e in others]).values_list("status", flat=True)) == {"active"}


def test_a_token_for_an_address_the_job_was_not_sent_to_is_refused(sent):
    job, _ = sent
    assert one_click(unsubscribe_token(job_id=job.pk, email="bob@example.com")).status_code == 400
    assert not Suppression.objects.exists()


def test_a_token_for_a_job_never_sent_or_missing_is_refused(sent):
    _, (bob, _) = sent
    unsent = bob.jobs.get()
    assert unsent.submitted_at is None
    assert one_click(unsubscribe_token(job_id=unsent.pk, email="bob@example.com")).status_code == 400
    assert one_click(unsubscribe_token(job_id=999_999, email="bob@example.com")).status_code == 400
    assert not Suppression.objects.exists()


def test_the_token_of_the_sent_message_still_unsubscribes_its_recipient(sent):
    job, _ = sent
    assert one_click(unsubscribe_token(job_id=job.pk, email="Ada@Example.com")).status_code == 200
    assert list(Suppression.objects.values_list("value", flat=True)) == ["ada@example.com"]
