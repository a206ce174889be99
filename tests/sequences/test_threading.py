"""Threading hygiene: "Re:" only under a message of ours that left; our own Sent copies are never replies.

Real PostgreSQL, aiosmtpd for what we send, and a real Dovecot holding the copies a mail server or
client files in Sent (or in the inbox, for a Bcc to ourselves).
"""

from __future__ import annotations

from email import message_from_bytes

import pytest

from inbound.ingest.poll import mailbox_poll
from inbound.models import InboundMessage
from mailboxes.models import Mailbox
from proving.harness import mails
from proving.harness.dovecot import DEFAULT_USERS, Dovecot
from sequences.config.parse import parse as config_parse
from sequences.config.validate import ConfigError
from sequences.messages import message_prepare
from sequences.models import Enrollment, SendJob, Sequence, Step
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
SPECIAL_USE = "namespace inbox {\n  mailbox Outgoing {\n    special_use = \\Sent\n    auto = create\n  }\n}\n"


def run_due() -> list[str]:
    return [send_job_process(job_id=job_id, worker_id="w1").state for job_id in dispatch_due()]


def steps_sequence(mailbox: Mailbox, *steps: tuple[str, bool]) -> Sequence:
    """One step per (subject, thread), no waits."""
    sequence = Sequence.objects.create(name=f"threading {Sequence.objects.count()}", mailbox=mailbox)
    for position, (subject, thread) in enumerate(steps, 1):
        Step.objects.create(
            sequence=sequence,
            position=position,
            subject=subject,
            body=f"Step {position}.",
            thread=thread,
            wait_seconds=0,
        )
    return sequence


def use_imap(mailbox: Mailbox, server: Dovecot, folders: list[str], monkeypatch) -> None:
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")
    mailbox.imap_host, mailbox.imap_port = server.host, server.port
    mailbox.imap_username, mailbox.imap_password_env = "alice", "OUTREACH_SECRET_TEST_IMAP"
    mailbox.imap_folders = folders
    mailbox.save()


def two_steps_sent(mailbox: Mailbox, smtp_server) -> tuple[Enrollment, bytes]:
    """An enrollment of three steps with steps 1 and 2 sent; returns it and step 2 as it left (a reply to 1)."""
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=3), "ada@example.com")
    assert run_due() == [S.SUBMITTED]
    if mailbox.has_imap:
        mailbox_poll(mailbox_id=mailbox.pk)  # the mailbox reads its replies before a follow-up leaves
    assert run_due() == [S.SUBMITTED]
    step2 = smtp_server.received[1]
    assert step2.message["In-Reply-To"] == smtp_server.received[0].message_id
    return enrollment, step2.data


def assert_still_running(enrollment: Enrollment) -> None:
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.ACTIVE
    assert enrollment.jobs.get(step__position=3).state == S.SCHEDULED


def test_our_copy_in_the_sent_folder_is_not_a_reply_and_a_real_reply_still_stops(imap_mailbox, dovecot, smtp_server):
    dovecot.create_folder("alice", "Sent")
    imap_mailbox.imap_folders = ["INBOX", "Sent"]
    imap_mailbox.save(update_fields=["imap_folders"])
    enrollment, step2 = two_steps_sent(imap_mailbox, smtp_server)

    dovecot.append("alice", "Sent", step2)  # the copy the server or the mail client files
    mailbox_poll(mailbox_id=imap_mailbox.pk)

    copy = InboundMessage.objects.get(folder="Sent")
    assert copy.effect.startswith("our own sent mail (in the folder 'Sent'")
    assert copy.effect.endswith("never counted as a reply")
    assert_still_running(enrollment)

    step1 = enrollment.jobs.get(step__position=1)
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=step1.message_id, to=imap_mailbox.address))
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == (Enrollment.Status.STOPPED, "replied")


def test_our_copy_in_the_inbox_is_not_a_reply(imap_mailbox, dovecot, smtp_server):
    enrollment, step2 = two_steps_sent(imap_mailbox, smtp_server)
    dovecot.append("alice", "INBOX", step2)  # a Bcc to ourselves
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    copy = InboundMessage.objects.get()
    assert copy.effect.startswith(f"our own sent mail (sent from this mailbox's own address {imap_mailbox.address}")
    assert_still_running(enrollment)


def test_a_folder_the_server_marks_sent_is_never_read_as_replies(smtp_server, monkeypatch):
    mailbox = MailboxFactory(smtp_port=smtp_server.port)
    with Dovecot(DEFAULT_USERS, extra_config=SPECIAL_USE) as server:
        use_imap(mailbox, server, ["INBOX", "Outgoing"], monkeypatch)
        enrollment, _ = two_steps_sent(mailbox, smtp_server)
        step1 = enrollment.jobs.get(step__position=1)
        # The operator answered from a send-as alias in their mail client: not our address, not our
        # Message-ID, threaded under step 1. Only the folder says it is ours.
        sent_by_us = mails.reply(
            to_message_id=step1.message_id,
            sender="team@outreach.test",
            name="Team",
            to="ada@example.com",
            subject="Re: Hello Ada",
            body="Adding my colleague.",
        )
        server.append("alice", "Outgoing", sent_by_us)
        mailbox_poll(mailbox_id=mailbox.pk)
    copy = InboundMessage.objects.get(folder="Outgoing")
    assert copy.effect.startswith("our own sent mail (in the folder 'Outgoing', which holds this mailbox's sent mail")
    assert_still_running(enrollment)


def test_re_and_in_reply_to_follow_the_thread_that_really_left(mailbox, smtp_server):
    sequence = steps_sequence(
        mailbox, ("Hello {{ first_name }}", False), ("A new topic for {{ company }}", False), ("", True)
    )
    enroll(sequence, "ada@example.com", first_name="Ada", company="Acme")
    for _ in range(3):
        assert run_due() == [S.SUBMITTED]
    first, second, third = (r.message for r in smtp_server.received)
    assert second["Subject"] == "A new topic for Acme" and second["In-Reply-To"] is None
    # Step 3 answers step 2, which started a thread of its own: never step 1's subject or id.
    assert third["In-Reply-To"] == second["Message-ID"]
    assert third["References"] == second["Message-ID"]
    assert third["Subject"] == "Re: A new topic for Acme"


def test_a_job_prepared_without_the_claims_read_threads_the_same(mailbox, smtp_server):
    """message_prepare(job_id=...) alone (the rejected lock-held design of proving/variants.py) reads the thread
    itself (sequences.loads.sent_before): the same In-Reply-To and References as the pipeline's claim read."""
    sequence = steps_sequence(mailbox, ("Hello {{ first_name }}", False), ("", True), ("", True))
    enroll(sequence, "ada@example.com", first_name="Ada")
    for _ in range(3):
        assert run_due() == [S.SUBMITTED]
    sent = [r.message for r in smtp_server.received]
    third = SendJob.objects.get(step__position=3)
    alone = message_from_bytes(message_prepare(job_id=third.pk).data)
    assert alone["In-Reply-To"] == sent[2]["In-Reply-To"] == sent[1]["Message-ID"]
    assert alone["References"] == sent[2]["References"] == f"{sent[0]['Message-ID']} {sent[1]['Message-ID']}"
    assert alone["Subject"] == sent[2]["Subject"] == "Re: Hello Ada"


def test_a_reply_prefix_on_a_step_that_is_not_a_reply_is_refused_and_never_sent(mailbox, smtp_server):
    toml = """
[[sequence]]
name = "Faked"
mailbox = "{mailbox}"
[[sequence.step]]
subject = "{subject}"
body = "Hi"
[[sequence.step]]
subject = "{second}"
body = "Again"
thread = {thread}
"""

    def parse(subject: str, second: str = "", thread: str = "true"):
        return config_parse(toml.format(mailbox=mailbox.name, subject=subject, second=second, thread=thread))

    with pytest.raises(ConfigError, match=r"sequence\[0\].step\[0\].subject.*never fake"):
        parse("Re: our call")
    with pytest.raises(ConfigError, match=r"sequence\[0\].step\[1\].subject.*never fake"):
        parse("Our call", second="RE: our call", thread="false")
    parse("Our call", second="Re: our call")  # a threaded step may say so itself

    # Saved around the validation (straight into the table): the prefix does not leave with it.
    sequence = steps_sequence(mailbox, ("Hello", False))
    Step.objects.filter(sequence=sequence).update(subject="Re: Re[2]: Hello {{ first_name }}")
    enroll(sequence, "ada@example.com", first_name="Ada")
    assert run_due() == [S.SUBMITTED]
    (sent,) = smtp_server.received
    assert sent.message["Subject"] == "Hello Ada" and sent.message["In-Reply-To"] is None
