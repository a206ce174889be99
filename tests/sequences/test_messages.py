"""Messages that read right: plain text never escaped, strict templates, and a job that cannot be prepared ends.

Real PostgreSQL and the real SMTP server: what is asserted is what arrived.
"""

from __future__ import annotations

from email import message_from_bytes, policy
from email.header import decode_header, make_header

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory

from proving.harness.smtp import SmtpServer
from sequences.labels import job_label
from sequences.messages import step_validate
from sequences.models import Enrollment, SendJob, Step, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due, leases_sweep
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def run_first(enrollment: Enrollment):
    (job_id,) = dispatch_due()
    return send_job_process(job_id=job_id, worker_id="w1"), SendJob.objects.get(pk=job_id)


def decoded(value: str) -> str:
    return str(make_header(decode_header(value)))


def test_plain_text_is_never_html_escaped(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(subject="{{ first_name }} at {{ company }}",
                                                  body="Dear {{ first_name }},\nhow is {{ company }}?")
    enroll(sequence, "ob@example.com", first_name="O'Brien & Sons <x>", company="AT&T")
    outcome, _ = run_first(sequence)
    assert outcome.state == S.SUBMITTED
    (received,) = smtp_server.received
    message = message_from_bytes(received.data, policy=policy.default)
    assert decoded(received.message["Subject"]) == "O'Brien & Sons <x> at AT&T"
    assert message.get_content().replace("\r\n", "\n") == "Dear O'Brien & Sons <x>,\nhow is AT&T?\n"
    assert b"&amp;" not in received.data and b"&#x27;" not in received.data


def test_non_ascii_headers_are_rfc2047_encoded_and_an_idn_domain_is_punycode(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(subject="Grüße, {{ first_name }}")
    enroll(sequence, "joerg@bücher.de", first_name="Jörg", company="Bücher")
    outcome, _ = run_first(sequence)
    assert outcome.state == S.SUBMITTED
    (received,) = smtp_server.received
    assert received.recipients == ["joerg@xn--bcher-kva.de"]
    raw_headers = received.data.split(b"\r\n\r\n", 1)[0]
    assert raw_headers.isascii() and b"=?utf-8?" in raw_headers
    assert decoded(received.message["Subject"]) == "Grüße, Jörg"
    assert decoded(received.message["To"]) == "Jörg <joerg@xn--bcher-kva.de>"


def test_a_non_ascii_local_part_goes_as_smtputf8_only_where_the_server_offers_it(mailbox, smtp_server, db):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    enroll(sequence, "jörg@bücher.de", first_name="Jörg", company="Bücher")
    outcome, _ = run_first(sequence)
    assert outcome.state == S.SUBMITTED
    assert smtp_server.received[0].recipients == ["jörg@xn--bcher-kva.de"]

    plain = SmtpServer()
    plain._controller.SMTP_kwargs["enable_SMTPUTF8"] = False  # a server without RFC 6531
    plain.start()
    try:
        other = make_sequence(mailbox=MailboxFactory(smtp_port=plain.port), steps=1)
        enroll(other, "jörg@bücher.de", first_name="Jörg", company="Bücher")
        outcome, job = run_first(other)
    finally:
        plain.stop()
    # Refused before MAIL FROM: failed with the reason, never "outcome unknown".
    assert outcome.state == S.FAILED and "SMTPUTF8" in job.error
    assert plain.received == []


def test_an_idn_address_without_a_name_is_sent_not_left_unknown(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(subject="Hello", body="Hello.")
    enroll(sequence, "info@bücher.de", first_name="", company="")
    outcome, job = run_first(sequence)
    assert outcome.state == S.SUBMITTED and job.state == S.SUBMITTED
    assert smtp_server.received[0].recipients == ["info@xn--bcher-kva.de"]


def test_a_missing_value_fails_the_job_with_a_reason_and_sends_nothing(mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=2), "dan@example.com", first_name="Dan", company="")
    outcome, job = run_first(enrollment.sequence)
    assert outcome.state == S.FAILED
    assert smtp_server.received == []
    assert job.error == "could not prepare: missing value for company"
    assert job.authorized_at is None and job.lease_until is None
    assert job_label(job) == "Not sent — could not be prepared: missing value for company"
    event = TimelineEvent.objects.get(job=job, kind="job_prepare_failed")
    assert event.data["error"] == "missing value for company"
    # Final: the sweeper has nothing to requeue, and the enrollment does not go on past the failed step.
    assert leases_sweep()["requeued"] == 0
    assert dispatch_due() == []
    assert SendJob.objects.filter(enrollment=enrollment).count() == 1


def test_a_fallback_in_the_template_fills_a_missing_value(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(body='Hello {{ first_name }} at {{ company|default:"your team" }}')
    enroll(sequence, "dan@example.com", first_name="Dan", company="")
    outcome, _ = run_first(sequence)
    assert outcome.state == S.SUBMITTED
    assert "Hello Dan at your team" in smtp_server.received[0].message.get_payload()


@pytest.mark.parametrize(
    ("first_name", "email", "reason"),
    [
        ("Dan\r\nBcc: all@example.com", "dan@example.com", "invalid name"),
        ("Dan", "dan@bücher.de\u00a0x", "invalid address"),
    ],
)
def test_a_bad_contact_fails_its_job_instead_of_retrying_forever(mailbox, smtp_server, first_name, email, reason):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), email, first_name=first_name)
    outcome, job = run_first(enrollment.sequence)
    assert outcome.state == S.FAILED and job.state == S.FAILED
    assert reason in job.error
    assert smtp_server.received == []


def test_a_template_saved_around_validation_fails_the_job_not_the_worker(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    Step.objects.filter(sequence=sequence).update(body="{% debug %}")
    enroll(sequence, "dan@example.com", first_name="Dan")
    outcome, job = run_first(sequence)
    assert outcome.state == S.FAILED
    assert "template error in step 1" in job.error and "debug" in job.error
    assert smtp_server.received == []


@pytest.mark.parametrize(
    ("subject", "body", "expected"),
    [
        ("Hi {{ first_name", "ok", ("subject", "{{ without its }}")),
        ("Hi", "{% include 'secrets.txt' %}", ("body", "{% include %} is not allowed")),
        ("Hi", "{% debug %}", ("body", "{% debug %} is not allowed")),
        ("Hi", "{% load static %}", ("body", "{% load %} is not allowed")),
        ("Hi", "{% url 'home' %}", ("body", "{% url %} is not allowed")),
        ("Hi", "{{ company|safe }}", ("body", "filter 'safe' is not allowed")),
        ("", "body", ("subject", "the first step needs a subject")),
    ],
)
def test_step_validation_refuses_what_the_strict_language_does_not_have(subject, body, expected):
    errors = step_validate(subject=subject, body=body, position=1)
    field, text = expected
    assert any(text in e for e in errors[field]), errors


def test_step_validation_accepts_the_allowed_language():
    body = ('{% if company %}at {{ company }}{% endif %} {{ first_name|default:"there"|title }} '
            "{% for tag in fields.tags %}{{ tag }}{% endfor %}")
    assert step_validate(subject="Hi {{ first_name }}", body=body, position=1) == {}


def test_the_admin_runs_the_same_step_validation(mailbox, admin_user):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    admin = site._registry[type(sequence)]
    request = RequestFactory().post("/")
    request.user = admin_user
    inline = admin.get_inline_instances(request)[0]
    formset_class = inline.get_formset(request, sequence)
    step = sequence.steps.get()
    data = {
        "steps-TOTAL_FORMS": "1", "steps-INITIAL_FORMS": "1", "steps-MIN_NUM_FORMS": "0",
        "steps-MAX_NUM_FORMS": "1000", "steps-0-id": str(step.pk), "steps-0-sequence": str(sequence.pk),
        "steps-0-position": "1", "steps-0-subject": "Hi {{ first_name", "steps-0-body": "{% debug %}",
        "steps-0-wait_seconds": "0", "steps-0-thread": "",
    }
    formset = formset_class(data, instance=sequence, prefix="steps")
    assert not formset.is_valid()
    errors = formset.errors[0]
    assert "{{ without its }}" in " ".join(errors["subject"])
    assert "{% debug %} is not allowed" in " ".join(errors["body"])
