"""Preview a step for a contact with the strict templates; "Send test to me" through the mailbox's real transport."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from mailboxes.models import Mailbox
from sequences.models import OperatorAction, SendJob
from sequences.services.stops import mailbox_pause
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui import conftest as ui_fixtures
from ui import results

roles, users = ui_fixtures.roles, ui_fixtures.users  # the role groups and one user per role

BODY = 'Hi {{ first_name }},\n\nHow is {{ company|default:"your team" }} doing? {{ fields.city }} is nice.\n'


def _setup(users, smtp_port: int = 2525):
    operator = users["operator"]
    operator.email = "me@operator.test"
    operator.save(update_fields=["email"])
    sequence = make_sequence(mailbox=MailboxFactory(smtp_port=smtp_port, display_name="Sam"), steps=2, name="Spring")
    step = sequence.steps.get(position=1)
    step.body = BODY
    step.save(update_fields=["body"])
    enroll(sequence, "full@example.com", first_name="Grace", company="Navy", city="Arlington")
    enroll(sequence, "nocity@example.com", first_name="Ada", company="")
    client = Client()
    client.force_login(operator)
    return client, sequence, step


def _preview(client, step, email: str) -> str:
    return client.get(f"{reverse('step_preview', args=[step.pk])}?{urlencode({'contact': email})}").content.decode()


@pytest.mark.django_db
def test_a_preview_names_the_missing_variable_and_shows_fallbacks_working(users):
    client, sequence, step = _setup(users)
    page = _preview(client, step, "nocity@example.com")
    assert "This email would not be sent to nocity@example.com" in page
    assert "Body: missing value for fields.city" in page
    assert "write it as {{ fields.city|default:&quot;…&quot; }}" in page  # the hint names the variable
    assert 'id="preview-body"' not in page and 'id="send-test"' not in page

    step.body = BODY.replace("{{ fields.city }}", '{{ fields.city|default:"your city" }}')
    step.save(update_fields=["body"])
    page = _preview(client, step, "nocity@example.com")
    assert "How is your team doing? your city is nice." in page
    assert "company is empty for this contact: the fallback is used" in page
    assert "fields.city is empty for this contact: the fallback is used" in page

    page = _preview(client, step, "full@example.com")
    assert "How is Navy doing? Arlington is nice." in page and "fallback is used" not in page
    assert "Hello Grace" in page  # the subject, rendered
    followup = _preview(client, sequence.steps.get(position=2), "full@example.com")
    assert "Re: Hello Grace" in followup  # a threaded step without a subject of its own
    assert "No contact has the address nobody@example.com." in _preview(client, step, "nobody@example.com")


@pytest.mark.django_db(transaction=True)
def test_send_test_to_me_goes_through_the_mailbox_server_and_is_never_counted(users, smtp_server):
    client, sequence, step = _setup(users, smtp_port=smtp_server.port)
    contact = sequence.enrollments.get(contact__email="full@example.com").contact
    before = dict(results.step_results(sequence))
    jobs_before = set(SendJob.objects.values_list("pk", flat=True))

    response = client.post(reverse("step_send_test", args=[step.pk]), {"contact": contact.pk})
    assert response.status_code == 302
    assert smtp_server.wait_for(1, timeout=10)
    (received,) = smtp_server.received
    assert received.recipients == ["me@operator.test"]
    message = received.message
    assert message["Subject"] == "[Test] Hello Grace"
    assert message["X-Outreach-Test"].startswith("step 1 of sequence ")
    assert "List-Unsubscribe" not in message and "X-Outreach-Job" not in message
    assert "How is Navy doing? Arlington is nice." in message.get_payload(decode=True).decode()
    assert not SendJob.objects.filter(message_id=received.message_id).exists()

    # Never a send job, never counted: the results, the jobs and the daily cap are as before.
    assert set(SendJob.objects.values_list("pk", flat=True)) == jobs_before
    assert {p: c.sent for p, c in results.step_results(sequence)} == {p: c.sent for p, c in before.items()}
    log = OperatorAction.objects.get(action="send_test")
    assert (log.actor, log.target_id, log.result["sent"]) == ("operator-user", sequence.pk, True)
    assert "as full@example.com would get it, to me@operator.test" in log.target
    page = client.get(response["Location"]).content.decode()
    assert "Test sent to me@operator.test" in page and "It is not counted anywhere." in page


@pytest.mark.django_db(transaction=True)
def test_a_test_that_cannot_be_rendered_or_whose_mailbox_is_paused_is_not_sent(users, smtp_server):
    client, sequence, step = _setup(users, smtp_port=smtp_server.port)
    nocity = sequence.enrollments.get(contact__email="nocity@example.com").contact
    response = client.post(reverse("step_send_test", args=[step.pk]), {"contact": nocity.pk}, follow=True)
    assert "The test was not sent: Body: missing value for fields.city" in response.content.decode()
    mailbox_pause(mailbox_id=sequence.mailbox_id, actor="op")
    full = sequence.enrollments.get(contact__email="full@example.com").contact
    response = client.post(reverse("step_send_test", args=[step.pk]), {"contact": full.pk}, follow=True)
    assert "is paused: nothing leaves it, tests included" in response.content.decode()
    assert Mailbox.objects.get(pk=sequence.mailbox_id).paused
    assert smtp_server.received == []


@pytest.mark.django_db
def test_without_an_address_of_their_own_the_operator_is_told_how_to_add_one(users, django_user_model):
    client, sequence, step = _setup(users)
    users["operator"].email = ""
    users["operator"].save(update_fields=["email"])
    page = _preview(client, step, "full@example.com")
    assert 'id="send-test"' not in page, "no button that cannot work"
    assert 'id="send-test-needs-address"' in page
    assert "needs an email address on your account" in page and "add_user operator-user --role operator --email" in page
    admin = users["admin"]
    client.force_login(admin)
    page = _preview(client, step, "full@example.com")
    assert reverse("admin:auth_user_change", args=[admin.pk]) in page  # an admin is sent to the form itself
