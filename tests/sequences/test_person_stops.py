"""Person-level stops: a reply stops the person in every sequence and mailbox, serialized with the final check."""

from __future__ import annotations

import pytest

from inbound.ingest.record import inbound_record
from proving.harness import mails
from sequences.models import Enrollment, SendJob, Sequence
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.races.helpers import Gate, Worker
from ui.rows import stop_summary_of

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
R = Enrollment.StopReason


def send_step_one(enrollment: Enrollment) -> SendJob:
    job = enrollment.jobs.get()
    dispatch_due()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == S.SUBMITTED
    return SendJob.objects.select_related("enrollment__sequence").get(pk=job.pk)


def ingest_reply(job: SendJob, *, uid: int = 1, sender: str = ""):
    raw = mails.reply(to_message_id=job.message_id, sender=sender or job.enrollment.contact.email)
    return inbound_record(
        mailbox_id=job.enrollment.sequence.mailbox_id,
        folder="INBOX",
        uidvalidity=1,
        fetched=mails.fetched(raw, uid=uid),
    )


@pytest.fixture
def two_mailboxes(smtp_server):
    sales = MailboxFactory(name="sales", smtp_port=smtp_server.port)
    partners = MailboxFactory(name="partners", smtp_port=smtp_server.port)
    return sales, partners


def test_a_reply_in_sequence_a_stops_the_claimed_job_in_sequence_b_of_another_mailbox(two_mailboxes, smtp_server):
    sales, partners = two_mailboxes
    in_a = enroll(make_sequence(mailbox=sales, steps=2, waits=(0, 3600), name="Q3 outreach"), "jane@acme.test")
    sent = send_step_one(in_a)
    in_b = enroll(make_sequence(mailbox=partners, steps=2, name="Partners"), "jane@acme.test")
    (b_job_id,) = dispatch_due()

    # Sequence B's worker has claimed and prepared its message when the reply to sequence A is committed.
    gate = Gate("prepared")
    worker = Worker(lambda: send_job_process(job_id=b_job_id, worker_id="w2"))
    worker.start()
    gate.wait()
    result = ingest_reply(sent)
    gate.release()
    outcome = worker.outcome()

    assert len(smtp_server.received) == 1, "only sequence A's first message may have left"
    b_job = SendJob.objects.get(pk=b_job_id)
    assert (b_job.state, b_job.cancel_reason) == (S.CANCELED, R.REPLIED)
    assert outcome.state == "lost", "the final check found the job moved by the stop and sent nothing"
    for enrollment in (in_a, in_b):
        enrollment.refresh_from_db()
        assert (enrollment.status, enrollment.stop_reason) == (Enrollment.Status.STOPPED, R.REPLIED)
    assert "2 enrollments stopped" in result.effect
    assert not SendJob.objects.filter(enrollment__in=[in_a, in_b], state__in=(S.SCHEDULED, S.QUEUED)).exists()


def test_the_enrollment_page_says_which_event_stopped_it_and_where(two_mailboxes, client, django_user_model):
    sales, partners = two_mailboxes
    sent = send_step_one(
        enroll(make_sequence(mailbox=sales, steps=2, waits=(0, 3600), name="Q3 outreach"), "jane@acme.test")
    )
    in_b = enroll(make_sequence(mailbox=partners, steps=2, name="Partners"), "jane@acme.test")
    ingest_reply(sent)
    in_b.refresh_from_db()

    because = "jane@acme.test replied in sequence 'Q3 outreach' (mailbox sales)"
    assert stop_summary_of(in_b)["because"] == because
    client.force_login(django_user_model.objects.create_superuser("boss", "boss@outreach.test", "pw-0123456789"))
    page = client.get(f"/enrollments/{in_b.pk}/").content.decode()
    assert "Stopped because jane@acme.test replied in sequence &#x27;Q3 outreach&#x27; (mailbox sales)." in page


def test_a_reply_stops_the_person_only_unless_the_sequence_stops_the_company_domain(two_mailboxes):
    sales, partners = two_mailboxes
    person = make_sequence(mailbox=sales, steps=2, waits=(0, 3600))
    colleague_elsewhere = enroll(make_sequence(mailbox=partners, steps=1), "bob@acme.test")
    sent = send_step_one(enroll(person, "jane@acme.test"))
    ingest_reply(sent)
    colleague_elsewhere.refresh_from_db()
    assert colleague_elsewhere.status == Enrollment.Status.ACTIVE, "stop_on_reply = person: colleagues go on"

    company = make_sequence(mailbox=sales, steps=2, waits=(0, 3600))
    Sequence.objects.filter(pk=company.pk).update(stop_on_reply=Sequence.StopOnReply.DOMAIN)
    sent = send_step_one(enroll(company, "carol@acme.test"))
    ingest_reply(sent, uid=2)
    colleague_elsewhere.refresh_from_db()
    assert (colleague_elsewhere.status, colleague_elsewhere.stop_reason) == (
        Enrollment.Status.STOPPED,
        R.COLLEAGUE_REPLIED,
    )
    assert stop_summary_of(colleague_elsewhere)["because"].startswith("carol@acme.test replied in sequence")


def test_a_free_mail_domain_is_never_stopped_as_a_company(two_mailboxes):
    sales, partners = two_mailboxes
    company = make_sequence(mailbox=sales, steps=2, waits=(0, 3600))
    Sequence.objects.filter(pk=company.pk).update(stop_on_reply=Sequence.StopOnReply.DOMAIN)
    stranger = enroll(make_sequence(mailbox=partners, steps=2, waits=(3600, 0)), "someone@gmail.com")
    sent = send_step_one(enroll(company, "jane@gmail.com"))
    ingest_reply(sent)
    stranger.refresh_from_db()
    assert stranger.status == Enrollment.Status.ACTIVE
    assert Enrollment.objects.get(contact__email="jane@gmail.com").stop_reason == R.REPLIED


def test_stop_on_reply_is_a_toml_key_of_a_sequence(db):
    from sequences.config.apply import config_apply
    from sequences.config.parse import parse
    from sequences.config.validate import ConfigError

    text = """
[[mailbox]]
name = "sales"
address = "sales@acme.test"

[[sequence]]
name = "Q3 outreach"
mailbox = "sales"
stop_on_reply = "{}"

[[sequence.step]]
subject = "Hi"
body = "Hello"
"""
    config_apply(parse(text.format("domain")))
    assert Sequence.objects.get(name="Q3 outreach").stop_on_reply == "domain"
    with pytest.raises(ConfigError, match="stop_on_reply .*must be one of person, domain"):
        parse(text.format("company"))
