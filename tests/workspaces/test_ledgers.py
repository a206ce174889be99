"""Each workspace has its own part of the suppression ledger; the agency's part holds everyone everywhere.

The same address is a person in two workspaces, each mailed step 1 from its own mailbox. An unsubscribe reply in
A stops and holds A only; `suppress --everywhere` holds both; a hard-bounce storm in A pauses A's mailbox and
not B's. Real SMTP (aiosmtpd), the real pipeline and ingestion; the final check decides each follow-up."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inbound.ingest.record import inbound_record
from mailboxes.models import Mailbox
from proving.harness import mails
from sequences.models import Enrollment, SendJob, Suppression
from sequences.pipeline import send_job_process
from sequences.services.common import ServiceError
from sequences.services.enrollments import contact_upsert, enrollment_create
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence
from workspaces.models import Workspace
from workspaces.scoping import workspace_scope

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
SHARED = "shared@prospect.test"


@pytest.fixture
def two(smtp_server, redis_conn):
    """Acme and Beta: a mailbox, a two-step sequence (no wait) and the same person each; step 1 sent."""
    made = {}
    for key, name in (("a", "Acme Corp"), ("b", "Beta Ltd")):
        workspace = Workspace.objects.create(name=name)
        with workspace_scope(workspace.pk):
            mailbox = MailboxFactory(name=f"{key}-box", address=f"sales@{key}-agency.test", smtp_port=smtp_server.port,
                                     guardrail_bounce_min_sends=4)
            sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0), name=f"{name} launch")
            people = [enroll(sequence, SHARED)] + [enroll(sequence, f"p{i}@{key}-leads.test") for i in range(3)]
        made[key] = {"workspace": workspace, "mailbox": mailbox, "sequence": sequence, "shared": people[0]}
    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    assert len(smtp_server.received) == 8
    return made


def first_job(enrollment: Enrollment) -> SendJob:
    return SendJob.objects.get(enrollment=enrollment, step__position=1)


def follow_up_outcome(enrollment: Enrollment) -> str:
    """What the final check makes of the person's step 2, due now."""
    job = SendJob.objects.filter(enrollment=enrollment, step__position=2).first()
    if job is None:
        return "no step 2"
    if job.state == S.CANCELED:
        return "canceled"
    queued = set(dispatch_due())
    assert job.pk in queued or SendJob.objects.get(pk=job.pk).state != S.SCHEDULED
    return send_job_process(job_id=job.pk, worker_id="w2").state


def test_an_unsubscribe_in_a_stops_and_holds_a_only(two):
    a, b = two["a"], two["b"]
    raw = mails.reply(to_message_id=first_job(a["shared"]).message_id, sender=SHARED, to=a["mailbox"].address,
                      body="Please remove me from your list and do not contact me again. Unsubscribe.")
    inbound_record(mailbox_id=a["mailbox"].pk, folder="INBOX", uidvalidity=1, fetched=mails.fetched(raw, uid=1))

    entry = Suppression.objects.get(value=SHARED)
    assert entry.workspace_id == a["workspace"].pk and entry.reason == "unsubscribe"
    a["shared"].refresh_from_db()
    b["shared"].refresh_from_db()
    assert a["shared"].status == Enrollment.Status.STOPPED
    assert b["shared"].status == Enrollment.Status.ACTIVE
    assert follow_up_outcome(b["shared"]) == S.SUBMITTED


def test_suppress_everywhere_holds_the_person_in_every_workspace(two):
    a, b = two["a"], two["b"]
    call_command("suppress", SHARED, "--reason", "manual", "--note", "asked the agency", "--everywhere")
    entry = Suppression.objects.get(value=SHARED)
    assert entry.workspace_id is None
    for side in (a, b):
        side["shared"].refresh_from_db()
        assert side["shared"].status == Enrollment.Status.STOPPED
    # Enrolled again in B's sequence: refused by the agency's entry.
    with workspace_scope(b["workspace"].pk):
        later = make_sequence(mailbox=b["mailbox"], steps=1, name="Beta again")
        with pytest.raises(ServiceError, match="suppressed"):
            enrollment_create(sequence_id=later.pk, contact_id=b["shared"].contact_id)
    # Lifted everywhere: B may enroll the person again.
    call_command("unsuppress", SHARED, "--note", "agreed again", "--everywhere")
    with workspace_scope(b["workspace"].pk):
        again = enrollment_create(sequence_id=later.pk, contact_id=b["shared"].contact_id)
    assert again.status == Enrollment.Status.ACTIVE


def test_the_final_check_reads_the_workspace_part_and_the_agency_part(two):
    a, b = two["a"], two["b"]
    # Entries written behind the services' back (nobody stopped): the final check alone decides.
    Suppression.objects.create(workspace=a["workspace"], value=SHARED, action="add", reason="manual", note="a")
    assert follow_up_outcome(b["shared"]) == S.SUBMITTED
    assert follow_up_outcome(a["shared"]) == S.CANCELED
    other = Enrollment.objects.filter(sequence=b["sequence"]).exclude(pk=b["shared"].pk).first()
    Suppression.objects.create(workspace=None, value="@" + other.contact.email.split("@")[1], action="add",
                               is_domain=True, reason="manual", note="the agency's, everywhere")
    assert follow_up_outcome(other) == S.CANCELED


def test_a_hard_bounce_storm_in_a_pauses_a_mailbox_and_not_b(two):
    a, b = two["a"], two["b"]
    for uid, enrollment in enumerate(Enrollment.objects.filter(sequence=a["sequence"]).order_by("id")[:2], 1):
        job = first_job(enrollment)
        raw = mails.dsn(original_message_id=job.message_id, recipient=enrollment.contact.email,
                        ours=a["mailbox"].address)
        inbound_record(mailbox_id=a["mailbox"].pk, folder="INBOX", uidvalidity=1, fetched=mails.fetched(raw, uid=uid))
    assert Mailbox.objects.get(pk=a["mailbox"].pk).paused
    assert not Mailbox.objects.get(pk=b["mailbox"].pk).paused
    # The shared person bounced in A's mailbox: suppressed in A's part only; B's follow-up to them still leaves.
    assert set(Suppression.objects.filter(value=SHARED).values_list("workspace_id", flat=True)) == {
        a["workspace"].pk}
    assert follow_up_outcome(b["shared"]) == S.SUBMITTED


def test_a_command_in_an_install_of_several_workspaces_names_one(two):
    with pytest.raises(CommandError, match="several workspaces"):
        call_command("suppress", "x@prospect.test", "--reason", "manual")
    call_command("suppress", "x@prospect.test", "--reason", "manual", "--workspace", "Beta Ltd")
    assert Suppression.objects.get(value="x@prospect.test").workspace_id == two["b"]["workspace"].pk
    with pytest.raises(CommandError, match="no workspace named 'Nobody'"):
        call_command("suppress", "y@prospect.test", "--reason", "manual", "--workspace", "Nobody")


def test_a_command_that_finds_a_person_by_address_names_the_workspace_when_there_are_two(two, capsys):
    """The same address is a person in Acme and in Beta: each command that finds a person by address is refused
    without --workspace (it would mix or pick one), and answers with it."""
    for command in (["ledger", "--contact", SHARED], ["timeline", SHARED], ["contact_export", SHARED]):
        with pytest.raises(CommandError, match=r"is a contact in 2 workspaces \(Acme Corp, Beta Ltd\)"):
            call_command(*command)
        call_command(*command, "--workspace", "Beta Ltd")
    out = capsys.readouterr().out
    assert "b-agency.test" in out and "a-agency.test" not in out
    # An address that is a person in one workspace only needs no --workspace.
    only_a = Enrollment.objects.filter(sequence=two["a"]["sequence"]).exclude(pk=two["a"]["shared"].pk).first()
    call_command("ledger", "--contact", only_a.contact.email)


def test_an_erasure_without_a_workspace_erases_the_person_in_every_workspace(two):
    from sequences.models import Contact, ErasedAddress

    call_command("contact_erase", SHARED)
    assert not Contact.objects.filter(email=SHARED).exists()
    for side in (two["a"], two["b"]):
        side["shared"].refresh_from_db()
        assert side["shared"].status == Enrollment.Status.STOPPED
        assert side["shared"].contact.first_name == "" and side["shared"].contact.email.endswith("@erased.invalid")
    assert list(ErasedAddress.objects.values_list("workspace_id", flat=True)) == [None]
    with workspace_scope(two["b"]["workspace"].pk), pytest.raises(ServiceError, match="erased"):
        contact_upsert(email=SHARED)


def test_an_erasure_in_a_workspace_erases_the_person_there_and_b_keeps_its_own(two):
    """Acme erases the person (its page, or --workspace): Acme's contact, enrollment and hash; Beta's person is
    Beta's: its address, its follow-up (the final check lets it leave) and a new enrollment there."""
    from sequences.models import Contact, ErasedAddress

    a, b = two["a"], two["b"]
    call_command("contact_erase", SHARED, "--workspace", "Acme Corp")
    assert list(ErasedAddress.objects.values_list("workspace_id", flat=True)) == [a["workspace"].pk]
    a["shared"].refresh_from_db()
    assert a["shared"].status == Enrollment.Status.STOPPED and a["shared"].contact.email.endswith("@erased.invalid")
    assert Contact.objects.get(email=SHARED).workspace_id == b["workspace"].pk
    assert follow_up_outcome(b["shared"]) == S.SUBMITTED
    with workspace_scope(a["workspace"].pk), pytest.raises(ServiceError, match="erased"):
        contact_upsert(email=SHARED)
    with workspace_scope(b["workspace"].pk):
        later = make_sequence(mailbox=b["mailbox"], steps=1, name="Beta again")
        assert enrollment_create(sequence_id=later.pk, contact_id=b["shared"].contact_id).status == "active"


def test_the_final_check_reads_the_hashed_ledger_s_workspace_part_and_the_agency_part(two):
    """Hashes written behind the services' back (nobody stopped): the final check alone decides. It fails both
    ways: read across the install, Beta's follow-up is canceled; read without Acme's part, Acme's leaves."""
    from sequences.digests import address_digest
    from sequences.models import ErasedAddress

    a, b = two["a"], two["b"]
    ErasedAddress.objects.create(workspace=a["workspace"], digest=address_digest(SHARED))
    assert follow_up_outcome(b["shared"]) == S.SUBMITTED
    assert follow_up_outcome(a["shared"]) == S.CANCELED
    other = Enrollment.objects.filter(sequence=b["sequence"]).exclude(pk=b["shared"].pk).first()
    ErasedAddress.objects.create(workspace=None, digest=address_digest(other.contact.email))
    assert follow_up_outcome(other) == S.CANCELED


def test_a_booking_on_a_source_of_a_stops_the_person_in_a_only(two, monkeypatch):
    from cryptography.fernet import Fernet
    from django.test import Client
    from django.urls import reverse

    from mailboxes.sealed import KEYS_ENV
    from meetings.services import booking_source_create
    from tests.meetings.payloads import CALENDLY_KEY, body_of, calendly_event, calendly_headers

    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())
    a, b = two["a"], two["b"]
    with workspace_scope(a["workspace"].pk):
        source = booking_source_create(name="Acme Calendly", provider="calendly", secret=CALENDLY_KEY, actor="admin")
    assert source.workspace_id == a["workspace"].pk
    body = body_of(calendly_event("invitee.created", SHARED))
    headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in calendly_headers(body).items()}
    response = Client().post(reverse("booking_webhook", kwargs={"slug": source.slug}), body,
                             content_type="application/json", **headers)
    assert response.status_code == 200, response.content
    a["shared"].refresh_from_db()
    b["shared"].refresh_from_db()
    assert a["shared"].status == Enrollment.Status.STOPPED
    assert b["shared"].status == Enrollment.Status.ACTIVE
