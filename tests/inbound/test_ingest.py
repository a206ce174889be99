"""Reply ingestion against a real Dovecot and real PostgreSQL, through the real send pipeline."""

from __future__ import annotations

import pytest

from inbound.ingest.poll import mailbox_poll
from inbound.models import InboundMessage
from mailboxes.imap.errors import ImapConnectionError
from mailboxes.models import ImapCursor
from proving.harness import mails
from sequences.models import Enrollment, SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.stops import enrollment_resume
from tests.factories import enroll, make_sequence
from tests.races.helpers import Gate, Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def send_first_step(mailbox, email="ada@example.com", steps=2) -> tuple[Enrollment, SendJob]:
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=steps, waits=(0,) + (3600,) * (steps - 1)), email)
    job = enrollment.jobs.get()
    dispatch_due()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == S.SUBMITTED
    job.refresh_from_db()
    return enrollment, job


def poll(mailbox, **options):
    return mailbox_poll(mailbox_id=mailbox.pk, **options)


def connect(mailbox):
    """The first poll of a mailbox that has sent nothing yet: its folders start at UIDNEXT."""
    assert poll(mailbox).fetched == 0


def test_a_reply_stops_the_enrollment_and_cancels_the_follow_up(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox)
    uid = dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id))

    result = poll(imap_mailbox)

    assert result.folders["INBOX"] == {"fetched": 1, "recorded": 1, "duplicates": 0}
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "replied")
    follow_up = enrollment.jobs.exclude(pk=job.pk).get()
    assert (follow_up.state, follow_up.cancel_reason) == (S.CANCELED, "replied")
    inbound = InboundMessage.objects.get()
    assert (inbound.kind, inbound.correlation_rule, inbound.job_id) == ("human_reply", "in_reply_to", job.pk)
    assert inbound.internaldate is not None and inbound.committed_at >= inbound.internaldate
    assert inbound.effect == (
        "stopped (replied): 1 enrollment stopped or paused; 1 job canceled — never sent; 0 jobs in flight now "
        "(authorized, being handed off) — cannot recall; 1 job handed off earlier (submitted before this stop) — "
        "cannot recall.")
    assert "\\Seen" not in dovecot.flags("alice", "INBOX", uid)  # BODY.PEEK: the operator's flags stay
    cursor = ImapCursor.objects.get()
    assert cursor.last_uid == uid and cursor.uidvalidity
    kinds = list(TimelineEvent.objects.filter(enrollment=enrollment).values_list("kind", flat=True))
    assert kinds.index("inbound_received") < kinds.index("enrollment_stopped")


def test_the_same_reply_twice_in_two_folders_and_after_a_rescan_acts_once(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox)
    dovecot.create_folder("alice", "Replies")
    imap_mailbox.imap_folders = ["INBOX", "Replies"]
    imap_mailbox.save(update_fields=["imap_folders"])
    raw = mails.reply(to_message_id=job.message_id, message_id="<same-reply@prospect.example>")
    dovecot.append("alice", "INBOX", raw)
    dovecot.append("alice", "Replies", raw)

    poll(imap_mailbox)
    assert poll(imap_mailbox).fetched == 0  # nothing new the second time
    acting = InboundMessage.objects.filter(duplicate_of=None)
    assert acting.count() == 1 and InboundMessage.objects.count() == 2
    assert "copy of inbound" in InboundMessage.objects.exclude(duplicate_of=None).get().effect

    # An operator resumes; then the server resets UIDVALIDITY and the folder is rescanned.
    enrollment_resume(enrollment_id=enrollment.pk)
    dovecot.reset_uidvalidity("alice", "INBOX")
    result = poll(imap_mailbox)
    assert result.folders["INBOX"]["duplicates"] == 1
    enrollment.refresh_from_db()
    assert enrollment.status == "active", "a rescan must never stop (or reopen) anything again"
    assert ImapCursor.objects.get(folder="INBOX").rescans == 1
    assert TimelineEvent.objects.filter(kind="imap_uidvalidity_changed").count() == 1


def test_reply_first_through_imap_nothing_leaves(imap_mailbox, dovecot, smtp_server):
    enrollment, job = send_first_step(imap_mailbox, steps=2)
    SendJob.objects.filter(enrollment=enrollment, state=S.SCHEDULED).update(scheduled_at=job.submitted_at)
    (follow_up_id,) = dispatch_due()
    gate = Gate("claimed")
    worker = Worker(lambda: send_job_process(job_id=follow_up_id, worker_id="w2"))
    worker.start()
    gate.wait()
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id))
    poll(imap_mailbox)
    gate.release()
    assert worker.outcome().state == "lost"
    assert len(smtp_server.received) == 1  # only step 1, sent before the reply
    follow_up = SendJob.objects.get(pk=follow_up_id)
    assert (follow_up.state, follow_up.cancel_reason) == (S.CANCELED, "replied")


def test_hard_bounce_suppresses_and_stops_every_enrollment_of_the_address(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox, email="gone@example.com")
    other = enroll(make_sequence(mailbox=imap_mailbox, steps=1), "gone@example.com")
    dovecot.append("alice", "INBOX", mails.dsn(original_message_id=job.message_id, recipient="gone@example.com"))
    poll(imap_mailbox)
    inbound = InboundMessage.objects.get()
    assert (inbound.kind, inbound.bounce_type, inbound.correlation_rule) == ("bounce", "hard", "embedded_headers")
    entry = Suppression.objects.get(value="gone@example.com")
    assert (entry.reason, entry.source) == ("hard_bounce", f"inbound:{inbound.pk}")
    for e in (enrollment, other):
        e.refresh_from_db()
        assert (e.status, e.stop_reason) == ("stopped", "hard_bounce")


def test_soft_bounces_suppress_only_after_the_limit(imap_mailbox, dovecot, settings):
    settings.OUTREACH_SOFT_BOUNCE_LIMIT = 2
    # Two messages to the same address (two sequences), each failing softly: the limit counts messages.
    enrollment, job = send_first_step(imap_mailbox, email="full@example.com")
    poll(imap_mailbox)  # a second sequence's message to the same person waits for the mailbox's reply view
    _, job2 = send_first_step(imap_mailbox, email="full@example.com")
    for sent in (job, job2):
        dovecot.append("alice", "INBOX", mails.dsn(original_message_id=sent.message_id, recipient="full@example.com",
                                                   status="4.2.2", diagnostic="452 4.2.2 mailbox full"))
        poll(imap_mailbox)
        if not Suppression.objects.exists():
            enrollment.refresh_from_db()
            assert enrollment.status == "active"
    effects = list(InboundMessage.objects.order_by("id").values_list("bounce_type", "effect"))
    assert effects[0] == ("soft", "full@example.com: soft bounce 1 of 2, recorded")
    assert effects[1][1].startswith("full@example.com: soft bounce 2 of 2, suppressed")
    assert Suppression.objects.get().reason == "soft_bounces"


def test_complaint_and_unsubscribe_request_suppress_the_address(imap_mailbox, dovecot):
    _, job = send_first_step(imap_mailbox, email="angry@example.com")
    _, job2 = send_first_step(imap_mailbox, email="bye@example.com")
    dovecot.append("alice", "INBOX", mails.arf(original_message_id=job.message_id, recipient="angry@example.com"))
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job2.message_id, sender="bye@example.com",
                                                 body="Please unsubscribe me and remove me from your list."))
    poll(imap_mailbox)
    assert dict(Suppression.objects.values_list("value", "reason")) == {
        "angry@example.com": "complaint", "bye@example.com": "unsubscribe"}
    assert set(Enrollment.objects.values_list("stop_reason", flat=True)) == {"complained", "unsubscribed"}


def test_an_auto_reply_is_recorded_and_the_sequence_continues(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox)
    dovecot.append("alice", "INBOX", mails.out_of_office(to_message_id=job.message_id))
    poll(imap_mailbox)
    inbound = InboundMessage.objects.get()
    # The sequence continues after an out-of-office hold (tests/inbound/test_ooo_hold.py), never paused.
    assert inbound.kind == "auto_reply" and "held until" in inbound.effect
    enrollment.refresh_from_db()
    assert enrollment.status == "active"
    assert enrollment.jobs.filter(state=S.SCHEDULED).count() == 1


def test_a_reply_from_an_enrolled_address_without_threading_is_a_weaker_match(imap_mailbox, dovecot):
    enrollment, _ = send_first_step(imap_mailbox)
    dovecot.append("alice", "INBOX", mails.reply(to_message_id="", in_reply_to=False, subject="Question"))
    poll(imap_mailbox)
    assert InboundMessage.objects.get().correlation_rule == "sender_address"
    enrollment.refresh_from_db()
    assert enrollment.stop_reason == "replied"


@pytest.mark.parametrize("raw", [
    b"\xff\xfe\x00garbage without headers",
    b"From: =?x-unknown?B?////?= <a@b.c>\r\nSubject: =?utf-8?Q?broken=ZZ?=\r\n"
    b"Content-Type: multipart/mixed\r\n\r\nno boundary",
    b"Subject: no from\r\nContent-Type: text/plain; charset=does-not-exist\r\n\r\n\xe9\xe8",
    b"From: big@example.com\r\nSubject: huge\r\n\r\n" + b"x" * 3_000_000,
])
def test_hostile_or_broken_mail_is_recorded_never_crashes(imap_mailbox, dovecot, raw, settings):
    settings.OUTREACH_INBOUND_RAW_LIMIT = 1_000_000
    connect(imap_mailbox)
    dovecot.append("alice", "INBOX", raw)
    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 1
    inbound = InboundMessage.objects.get()
    assert inbound.kind in {"unrelated", "human_reply", "quarantined", "auto_reply", "bounce"}
    assert inbound.size == len(raw)
    if inbound.content == InboundMessage.Content.FULL:  # machine-generated (a bounce or auto-reply): kept
        assert inbound.raw_truncated == (len(raw) > 1_000_000)
        assert len(bytes(inbound.raw)) == min(len(raw), 1_000_000)
    else:  # related to nothing we sent: metadata only
        assert bytes(inbound.raw) == b"" and inbound.subject == "" and inbound.from_address == ""


def test_a_server_drop_mid_batch_resumes_from_the_cursor(imap_mailbox, dovecot):
    connect(imap_mailbox)
    for i in range(5):
        dovecot.append("alice", "INBOX", mails.reply(to_message_id=f"<unknown-{i}@x>", sender=f"p{i}@example.org"))

    def kill_after_first_batch(folder, done, total):
        if done == 2:
            dovecot.kill()

    with pytest.raises(ImapConnectionError):
        mailbox_poll(mailbox_id=imap_mailbox.pk, batch_size=2, progress=kill_after_first_batch)
    imap_mailbox.refresh_from_db()
    assert imap_mailbox.poll_failures == 1 and "ImapConnectionError" in imap_mailbox.last_poll_error
    assert InboundMessage.objects.count() == 2 and ImapCursor.objects.get().last_uid == 2

    dovecot.start()
    result = mailbox_poll(mailbox_id=imap_mailbox.pk, batch_size=2)
    assert result.fetched == 3
    assert InboundMessage.objects.count() == 5
    assert sorted(InboundMessage.objects.values_list("uid", flat=True)) == [1, 2, 3, 4, 5]
    imap_mailbox.refresh_from_db()
    assert imap_mailbox.poll_failures == 0 and imap_mailbox.last_poll_ok_at is not None


def test_auth_failure_is_shown_as_mailbox_health(imap_mailbox, dovecot, monkeypatch):
    from mailboxes.imap.errors import ImapAuthError

    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "wrong")
    with pytest.raises(ImapAuthError):
        poll(imap_mailbox)
    imap_mailbox.refresh_from_db()
    assert "ImapAuthError" in imap_mailbox.last_poll_error and imap_mailbox.poll_failures == 1


def test_a_missing_folder_is_named_with_its_likely_name_and_the_others_are_still_read(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox)
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id))
    imap_mailbox.imap_folders = ["Junk", "INBOX"]  # "Junk" does not exist; it comes first
    imap_mailbox.save(update_fields=["imap_folders"])

    result = poll(imap_mailbox)

    assert result.folders["INBOX"]["recorded"] == 1
    assert "folder Junk not found" in result.folders["Junk"]["error"]
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.STOPPED  # the reply in INBOX was read
    cursor = ImapCursor.objects.get(mailbox=imap_mailbox, folder="Junk")
    assert cursor.failures == 1 and "not found" in cursor.last_error
    imap_mailbox.refresh_from_db()
    assert "folder Junk: folder Junk not found" in imap_mailbox.last_poll_error
    assert imap_mailbox.poll_failures == 0  # the mailbox itself answered
