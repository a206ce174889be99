"""What an operator or a caller may claim: a stop's reason is the operator's own, a test goes to no suppressed
address, and the API answers every error in JSON with the challenge it needs (issue 34, items 11 and 12)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from sequences.models import Enrollment, OperatorAction
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.security import test_hostile_contacts

client = test_hostile_contacts.client  # an operator's API token


@pytest.mark.django_db
@pytest.mark.parametrize("reason", ["complained", "replied", "unsubscribed", "hard_bounce", "suppressed", "nonsense"])
def test_an_operator_cannot_stop_with_an_outcome_as_the_reason(client, reason):
    enrollment = enroll(make_sequence(mailbox=MailboxFactory(), steps=1), "ann@example.com")
    response = client.post(f"/api/v1/enrollments/{enrollment.pk}/stop", data=json.dumps({"reason": reason}),
                           content_type="application/json")
    assert response.status_code == 422, response.content
    assert "an operator stops with 'operator'" in response.json()["detail"]
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.ACTIVE
    ok = client.post(f"/api/v1/enrollments/{enrollment.pk}/stop", data=json.dumps({"reason": "operator"}),
                  content_type="application/json")
    assert ok.status_code == 200
    enrollment.refresh_from_db()
    assert enrollment.stop_reason == Enrollment.StopReason.OPERATOR


@pytest.mark.django_db
@pytest.mark.parametrize("body", ["[]", "[1]", '"operator"', "1", "true"])
def test_a_stop_body_that_is_no_object_is_a_422(client, body):
    enrollment = enroll(make_sequence(mailbox=MailboxFactory(), steps=1), "ann@example.com")
    response = client.post(f"/api/v1/enrollments/{enrollment.pk}/stop", data=body, content_type="application/json")
    assert response.status_code == 422, response.content
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.ACTIVE
    assert client.post(f"/api/v1/enrollments/{enrollment.pk}/stop", data="",
                       content_type="application/json").status_code == 200  # no body: the operator's stop


@pytest.mark.django_db
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer otk_wrong"}, {"Authorization": "Basic eDp5"}])
def test_a_401_names_the_bearer_scheme(headers):
    response = Client(headers=headers).get("/api/v1/sequences")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "detail" in response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/nope", "/api/v1/nope", "/api/v1/contacts/a@example.com/more/"])
def test_an_unknown_api_path_is_a_json_404(client, path):
    for each in (client, Client()):
        response = each.get(path)
        assert response.status_code == 404, (path, response.status_code)
        assert response["Content-Type"].startswith("application/json")
        assert "not found" in response.json()["detail"]


@pytest.mark.django_db
def test_send_test_to_me_refuses_a_suppressed_address(users, smtp_server):
    operator = users["operator"]
    operator.email = "me@operator.test"
    operator.save(update_fields=["email"])
    sequence = make_sequence(mailbox=MailboxFactory(smtp_port=smtp_server.port), steps=1)
    contact = enroll(sequence, "ann@example.com", first_name="Ann").contact
    suppression_add(value="me@operator.test", reason="unsubscribe", actor="test")
    client = Client()
    client.force_login(operator)
    step = sequence.steps.get()
    page = client.post(reverse("step_send_test", args=[step.pk]), {"contact": contact.pk}, follow=True)
    assert "is on the suppression list" in page.content.decode()
    assert smtp_server.received == []
    assert not OperatorAction.objects.filter(action="send_test").exists()
