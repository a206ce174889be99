"""Templates and values that pass validation never crash preparation or a page (issue 34, items 5 and 6).

A template that validation refuses is refused at save; one saved around validation (straight into the table)
ends its job "could not be prepared" with the reason, never a worker crash that the lease sweeper brings back.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.contrib.admin.sites import site
from django.test import Client, RequestFactory
from django.urls import reverse

from mailboxes.models import Mailbox
from sequences.messages import step_validate
from sequences.models import Contact, SendJob, Step
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due, leases_sweep
from tests.factories import MailboxFactory, enroll, make_sequence

S = SendJob.State

CRASHING = [
    '{{ email|wordwrap:"0" }}',
    "{{ fields|first }}",
    "{{ fields|last }}",
    '{{ first_name|date:"Y" }}{{ fields|first }}',
    '{% for x in fields %}{{ x|wordwrap:"-1" }}{% endfor %}{{ fields|first }}',
]
UNBOUNDED = [
    '{{ company|ljust:"20000000" }}',
    '{{ company|rjust:"20000000" }}',
    '{{ company|center:"20000000" }}',
    '{{ company|wordwrap:"100000" }}',
    '{{ company|stringformat:"2000000000s" }}',
    '{{ company|floatformat:"99999" }}',
    "{{ company|ljust:fields.width }}",
    # loops in loops over a literal: a short body that would render megabytes
    '{% with s="' + "y" * 60 + '" %}{% for a in s %}{% for b in s %}{% for c in s %}z{% endfor %}{% endfor %}'
    "{% endfor %}{% endwith %}",
]

# Refused at save (rendered for a contact whose values are as long as allowed), and at rendering for a real contact
# whose value makes it huge (a template saved around the validation).
LOOP_BOMB = "{% for a in city %}{% for b in city %}{% for c in city %}" + "x" * 600 + "{% endfor %}" * 3


@pytest.mark.parametrize("body", CRASHING + UNBOUNDED)
def test_validation_refuses_a_filter_that_fails_or_has_no_bound(body):
    errors = step_validate(subject="Hi", body=body, position=1)
    assert errors.get("body"), errors


def test_validation_refuses_a_body_too_long_to_be_a_mail():
    errors = step_validate(subject="Hi", body="x" * 200_001, position=1)
    assert any("at most" in e for e in errors["body"]), errors
    # What stays allowed: bounded filters; a loop that a long value makes huge is refused at save.
    body = ('{{ company|ljust:"20" }}{{ email|wordwrap:"72" }}{{ first_name|truncatechars:"10" }}'
            '{% for tag in fields.tags %}{{ tag|first }}{% endfor %}{{ fields.city|default:"" }}')
    assert step_validate(subject="Hi {{ first_name }}", body=body, position=1) == {}
    assert "renders to more than" in step_validate(subject="Hi", body=LOOP_BOMB, position=1)["body"][0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("body", [*CRASHING, LOOP_BOMB])
def test_a_template_saved_around_validation_fails_its_job_with_the_reason(mailbox, smtp_server, body):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(body=body)
    enroll(sequence, "dan@example.com", first_name="Dan", city="Rome" * 6)
    (job_id,) = dispatch_due()
    outcome = send_job_process(job_id=job_id, worker_id="w1")
    job = SendJob.objects.get(pk=job_id)
    assert outcome.state == S.FAILED and job.state == S.FAILED
    assert job.error.startswith("could not prepare: template error in step 1")
    assert smtp_server.received == []
    assert leases_sweep()["requeued"] == 0


@pytest.mark.django_db(transaction=True)
def test_a_contact_whose_fields_are_no_table_fails_its_job(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    enrollment = enroll(sequence, "dan@example.com", first_name="Dan")
    Contact.objects.filter(pk=enrollment.contact_id).update(fields=["saved", "through", "the", "admin"])
    (job_id,) = dispatch_due()
    outcome = send_job_process(job_id=job_id, worker_id="w1")
    assert outcome.state == S.FAILED
    assert "fields" in SendJob.objects.get(pk=job_id).error
    assert smtp_server.received == []


@pytest.mark.django_db
@pytest.mark.parametrize("body", [*CRASHING, LOOP_BOMB, '{{ company|ljust:"20000000" }}'])
def test_the_preview_shows_a_failing_template_as_an_error(users, body):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    step = sequence.steps.get()
    Step.objects.filter(pk=step.pk).update(body=body)
    enroll(sequence, "dan@example.com", first_name="Dan", city="Rome" * 6)
    client = Client(raise_request_exception=False)
    client.force_login(users["operator"])
    response = client.get(f"{reverse('step_preview', args=[step.pk])}?{urlencode({'contact': 'dan@example.com'})}")
    assert response.status_code == 200
    assert 'id="preview-errors"' in response.content.decode()


@pytest.mark.django_db
def test_the_preview_of_a_contact_whose_fields_are_no_table_is_an_error(users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    enrollment = enroll(sequence, "dan@example.com", first_name="Dan")
    Contact.objects.filter(pk=enrollment.contact_id).update(fields="a string")
    client = Client(raise_request_exception=False)
    client.force_login(users["operator"])
    step = sequence.steps.get()
    response = client.get(f"{reverse('step_preview', args=[step.pk])}?{urlencode({'contact': 'dan@example.com'})}")
    assert response.status_code == 200
    assert 'id="preview-errors"' in response.content.decode()


# --- time zones saved around validation ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("where", ["mailbox", "fallback"])
def test_an_unknown_time_zone_in_the_table_never_crashes_the_pages(users, where):
    mailbox = MailboxFactory(window_days="mon,tue,wed,thu,fri,sat,sun", window_start="09:00", window_end="17:00")
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600))
    enrollment = enroll(sequence, "dan@example.com", first_name="Dan")
    if where == "mailbox":
        Mailbox.objects.filter(pk=mailbox.pk).update(window_timezone="Mars/Base")
    else:  # a window in each contact's zone, and a contact without one
        Mailbox.objects.filter(pk=mailbox.pk).update(window_timezone="recipient", window_fallback_timezone="Mars/Base")
    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])
    for url in (reverse("dashboard"), reverse("sequence_list"), reverse("sequence_detail", args=[sequence.pk]),
                reverse("enrollment_detail", args=[enrollment.pk]), reverse("contact_detail",
                                                                            args=[enrollment.contact_id]),
                reverse("mailbox_list")):
        assert client.get(url).status_code == 200, url


@pytest.mark.django_db
def test_the_admin_refuses_an_unknown_contact_time_zone(admin_user):
    contact = Contact.objects.create(email="dan@example.com", first_name="Dan")
    admin = site._registry[Contact]
    request = RequestFactory().post("/")
    request.user = admin_user
    form_class = admin.get_form(request, contact)
    form = form_class(data={"first_name": "Dan", "last_name": "", "company": "", "timezone": "Mars/Base",
                            "fields": "{}"}, instance=contact)
    assert not form.is_valid()
    assert "unknown time zone" in " ".join(form.errors["timezone"])
    form = form_class(data={"first_name": "Dan", "last_name": "", "company": "", "timezone": "Europe/Rome",
                            "fields": '["a", "list"]'}, instance=contact)
    assert not form.is_valid()
    assert "JSON object" in " ".join(form.errors["fields"])


@pytest.mark.django_db
@pytest.mark.parametrize(("field", "value"), [("window_timezone", "Mars/Base"),
                                              ("window_fallback_timezone", "Mars/Base")])
def test_the_admin_refuses_an_unknown_mailbox_time_zone(admin_user, field, value):
    mailbox = MailboxFactory()
    admin = site._registry[Mailbox]
    request = RequestFactory().post("/")
    request.user = admin_user
    form_class = admin.get_form(request, mailbox)
    form = form_class(instance=mailbox)
    data = {name: form.initial.get(name) for name in form.fields if form.initial.get(name) is not None}
    form = form_class(data=data | {field: value}, instance=mailbox)
    assert not form.is_valid()
    assert "unknown time zone" in " ".join(form.errors[field])
