"""Erasure (GDPR art. 17) and export (art. 15): nothing of the person stays but a keyed hash of the address."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from inbound.ingest.record import inbound_record
from proving.harness import mails
from proving.harness.stack import database_dump
from sequences.digests import address_digest
from sequences.models import Contact, Enrollment, ErasedAddress, OperatorAction, SendJob
from sequences.pipeline import send_job_process
from sequences.services.common import ServiceError
from sequences.services.enrollments import contact_upsert, enrollment_create
from sequences.services.sending import dispatch_due
from sequences.services.suppressions import suppression_add
from tests.factories import make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
EMAIL = "zebulon.quixote@erase-me.test"
TRACES = ("zebulon", "quixot", "kazoo", "erasmo")  # the address, the names, a custom field, the company


def person_with_history(mailbox) -> tuple[Enrollment, SendJob]:
    """Zebulon: enrolled in two sequences, mailed once, replied (with his name in it), then suppressed by an admin."""
    contact = contact_upsert(
        email=EMAIL.upper(),
        first_name="Zebulon",
        last_name="Quixotic",
        company="Erasmo Ltd",
        fields={"hobby": "kazoo orchestra"},
    )
    first = enrollment_create(
        sequence_id=make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600)).pk, contact_id=contact.pk, actor="ops"
    )
    enrollment_create(
        sequence_id=make_sequence(mailbox=mailbox, steps=1, waits=(7200,)).pk, contact_id=contact.pk, actor="ops"
    )
    job = first.jobs.get()
    dispatch_due()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == S.SUBMITTED
    job.refresh_from_db()
    raw = mails.reply(
        to_message_id=job.message_id,
        sender="Zebulon.Quixote@erase-me.test",
        name="Zebulon Quixotic",
        body="Call me on Monday. Zebulon Quixotic, Erasmo Ltd",
    )
    inbound_record(mailbox_id=mailbox.pk, folder="INBOX", uidvalidity=1, fetched=mails.fetched(raw, uid=1))
    suppression_add(value=EMAIL, reason="manual", note=f"{EMAIL} asked us to stop", actor="ops")
    return first, job


def test_an_erased_address_is_refused_at_the_next_import_and_nothing_of_it_remains(mailbox, tmp_path):
    first, job = person_with_history(mailbox)
    before = database_dump(connection.settings_dict).lower()
    assert all(trace in before for trace in TRACES), "the dump finds the person before the erasure"

    out = io.StringIO()
    call_command("contact_erase", EMAIL, stdout=out)
    assert "0 of 2 enrollments stopped" in out.getvalue()  # the reply had stopped the person everywhere
    assert "kept only as a keyed hash" in out.getvalue()

    csv = tmp_path / "contacts.csv"
    csv.write_text(f"email,first_name,company\n{EMAIL},Zebulon,Zoo\nnew.person@example.com,Nina,Acme\n")
    errors = io.StringIO()
    out = io.StringIO()
    call_command("enroll", "--sequence", first.sequence.name, str(csv), stdout=out, stderr=errors)
    assert "1 enrolled, 0 rejected, 0 already enrolled, 1 suppressed" in out.getvalue()  # never mailed again
    assert "erased" in errors.getvalue() and EMAIL not in errors.getvalue()
    assert Contact.objects.filter(email="new.person@example.com").exists()
    with pytest.raises(ServiceError, match="erased"):
        contact_upsert(email=EMAIL)

    dump = database_dump(connection.settings_dict).lower()
    for trace in TRACES:
        assert trace not in dump, f"{trace!r} is still in the database"
    digest = address_digest(EMAIL)
    assert digest in dump and ErasedAddress.objects.filter(digest=digest).exists()
    log = OperatorAction.objects.get(action="contact_erase")
    assert log.actor == "command" and "@" not in log.target and "zebulon" not in json.dumps(log.result).lower()
    job.refresh_from_db()
    assert job.state == S.SUBMITTED, "what was sent stays counted (without the person's data)"


def test_the_final_check_refuses_an_erased_address(mailbox):
    contact = contact_upsert(email="late@example.com", first_name="Late", company="Acme")
    enrollment = enrollment_create(
        sequence_id=make_sequence(mailbox=mailbox, steps=1).pk, contact_id=contact.pk
    )
    ErasedAddress.objects.create(digest=address_digest("late@example.com"))  # erased while its job waits
    (job_id,) = dispatch_due()
    outcome = send_job_process(job_id=job_id, worker_id="w1")
    assert (outcome.state, outcome.detail) == ("canceled", "suppressed")
    assert enrollment.jobs.get().cancel_reason == "suppressed"


def test_export_writes_everything_held_about_the_person(mailbox, tmp_path):
    person_with_history(mailbox)
    target = tmp_path / "export.json"
    call_command("contact_export", EMAIL, "--output", str(target), stderr=io.StringIO())
    data = json.loads(target.read_text())
    assert data["contact"]["first_name"] == "Zebulon" and data["contact"]["fields"] == {"hobby": "kazoo orchestra"}
    assert len(data["enrollments"]) == 2 and {e["status"] for e in data["enrollments"]} == {"stopped"}
    assert data["messages"][0]["state"] == "submitted"
    assert data["inbound"][0]["kind"] == "human_reply" and "Erasmo Ltd" in data["inbound"][0]["text"]
    assert data["suppressions"][0]["reason"] == "manual"
    assert any(e["kind"] == "enrollment_stopped" for e in data["timeline"])
    assert any(a["action"] == "suppression_add" for a in data["operator_log"])
    with pytest.raises(CommandError, match="no contact"):
        call_command("contact_export", "nobody@example.com")


def test_the_admin_action_erases_the_selected_people(mailbox, client, django_user_model):
    person_with_history(mailbox)
    client.force_login(django_user_model.objects.create_superuser("root", "root@outreach.test", "pw-0123456789"))
    contact = Contact.objects.get(email=EMAIL)
    response = client.post(
        "/admin/sequences/contact/", {"action": "erase_contacts", "_selected_action": [contact.pk]}, follow=True
    )
    assert response.status_code == 200
    assert f"Erased contact #{contact.pk}" in response.content.decode()
    contact.refresh_from_db()
    assert contact.email.endswith("@erased.invalid") and contact.first_name == ""
    assert ErasedAddress.objects.filter(digest=address_digest(EMAIL)).exists()
