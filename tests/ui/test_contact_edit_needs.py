"""Editing a contact cannot take away a value a step still to come needs: the import's check, refused in words.

Real database (both), the Django test client; the second test sends step 1 through a real SMTP server.
"""

from __future__ import annotations

from html import unescape

import pytest
from django.urls import reverse

from sequences.models import Contact, Enrollment, OperatorAction, SendJob, Step
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.stops import enrollment_stop
from tests.factories import MailboxFactory, enroll, make_sequence


def _form(contact: Contact, **changes) -> dict:
    data = {"first_name": contact.first_name, "last_name": contact.last_name, "company": contact.company,
            "timezone": contact.timezone, **{f"field:{k}": v for k, v in (contact.fields or {}).items()}}
    return {**data, **changes}


def _sequence(name: str, *, step_2: str, smtp_port: int = 2525):
    sequence = make_sequence(mailbox=MailboxFactory(smtp_port=smtp_port), steps=2, name=name,
                             subject="Hi {{ first_name }}", body="Hello from {{ city }}.")
    Step.objects.filter(sequence=sequence, position=2).update(body=step_2)
    return sequence


@pytest.mark.django_db
def test_removing_a_value_a_later_step_needs_is_refused_and_an_unneeded_one_is_removed(client, users):
    sequence = _sequence("Roles", step_2='As {{ role }}, and {{ team|default:"your team" }}?')
    contact = enroll(sequence, "ada@example.com", first_name="Ada", city="Oslo", role="CTO", team="Core",
                     hobby="chess").contact
    client.force_login(users["operator"])
    url = reverse("contact_edit", args=[contact.pk])
    before = dict(contact.fields)

    for removal in ({"field:role": ""}, {"field:city": "  "}):  # emptied, as the form removes a field
        refused = client.post(url, _form(contact, **removal))
        assert refused.status_code == 400
        words = unescape(refused.content.decode())
        assert "Not saved: ada@example.com is still to get step " in words and "of “Roles”" in words
        name = next(iter(removal)).removeprefix("field:")
        assert f"no value for {name}, used by step" in words
    refused = unescape(client.post(url, {k: v for k, v in _form(contact).items() if k != "field:role"}).content
                       .decode())  # the field left out of the form altogether
    assert "still to get step 2 of “Roles”, which needs this value: no value for role" in refused
    contact.refresh_from_db()
    assert contact.fields == before and not OperatorAction.objects.filter(action="contact_edit").exists()

    # A field no step uses, and one every step that uses it has a fallback for: removed.
    response = client.post(url, _form(contact, **{"field:hobby": "", "field:team": ""}))
    assert response.status_code == 302
    contact.refresh_from_db()
    assert contact.fields == {"city": "Oslo", "role": "CTO"}

    # Once the person is stopped, no step of the sequence is to come: the value may go.
    enrollment_stop(enrollment_id=contact.enrollments.get().pk, reason=Enrollment.StopReason.OPERATOR, source="test")
    assert client.post(url, _form(contact, **{"field:role": ""})).status_code == 302
    contact.refresh_from_db()
    assert contact.fields == {"city": "Oslo"}


@pytest.mark.django_db(transaction=True)
def test_a_value_used_only_by_a_step_already_sent_may_be_removed(client, users, smtp_server):
    sequence = _sequence("Cities", step_2="Again, {{ first_name }}.", smtp_port=smtp_server.port)
    Step.objects.filter(sequence=sequence, position=2).update(wait_seconds=86400)
    contact = enroll(sequence, "bo@example.com", first_name="Bo", city="Bergen").contact
    client.force_login(users["operator"])
    url = reverse("contact_edit", args=[contact.pk])
    assert client.post(url, _form(contact, **{"field:city": ""})).status_code == 400  # step 1 still to come

    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w").state == SendJob.State.SUBMITTED
    assert smtp_server.wait_for(1, timeout=10)
    assert client.post(url, _form(contact, **{"field:city": ""})).status_code == 302
    refused = client.post(url, _form(contact, first_name=""))  # step 2, still to come, says {{ first_name }}
    assert refused.status_code == 400 and "no value for first_name, used by step 2" in refused.content.decode()
    contact.refresh_from_db()
    assert (contact.first_name, contact.fields) == ("Bo", {})
