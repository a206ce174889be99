"""Acting only on evidence that this mailbox sent: history, forged reports and delay warnings do nothing.

Real Dovecot (INTERNALDATE set by APPEND) and real PostgreSQL, through the real send pipeline.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils.html import escape

from inbound.models import InboundMessage
from proving.harness import mails
from sequences.models import Enrollment, Suppression
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.inbound.test_ingest import connect, poll, send_first_step

pytestmark = pytest.mark.django_db(transaction=True)
NO_EVIDENCE = "no evidence we sent to it"


def forged_dsn(recipient: str) -> bytes:
    raw = mails.dsn(original_message_id=mails.new_id("evil.test"), recipient=recipient)
    return raw.replace(b"From: Mail Delivery System <MAILER-DAEMON@mx.example>", b"From: attacker@evil.test")


def prose_bounce(recipient: str) -> bytes:
    return (
        f"From: MAILER-DAEMON@mx.evil.test\r\nTo: {mails.OURS}\r\nSubject: Undelivered Mail Returned to Sender\r\n"
        f"Message-ID: {mails.new_id('mx.evil.test')}\r\nContent-Type: text/plain\r\n\r\n"
        "This is the mail system at host mx.evil.test.\r\n\r\n"
        "I'm sorry to have to inform you that your message could not\r\n"
        "be delivered to one or more recipients.\r\n\r\n"
        f"<{recipient}>: host mx.corp.test said: 550 5.1.1 <{recipient}>: Recipient address rejected: "
        "User unknown\r\n"
    ).encode()


def assert_did_nothing(*enrollments):
    assert not Suppression.objects.exists()
    for e in enrollments:
        e.refresh_from_db()
        assert e.status == Enrollment.Status.ACTIVE


@pytest.mark.parametrize("threaded", [True, False], ids=["threaded", "sender-only"])
def test_mail_that_arrived_before_the_send_does_not_stop_and_the_same_mail_after_does(
        imap_mailbox, dovecot, threaded, client, django_user_model):
    enrollment, job = send_first_step(imap_mailbox)
    history = mails.reply(to_message_id=job.message_id if threaded else "", in_reply_to=threaded,
                          subject="Lunch?", body="Are we still on for lunch?")
    dovecot.append("alice", "INBOX", history, when=job.submitted_at - timedelta(days=30))

    poll(imap_mailbox, since=(job.submitted_at - timedelta(days=31)).date())  # history re-read on purpose

    assert_did_nothing(enrollment)
    old = InboundMessage.objects.get()
    assert old.correlation_rule == "no_evidence" and old.get_correlation_rule_display() == "No evidence we sent to it"
    assert old.effect.startswith(NO_EVIDENCE) and "nothing stopped or suppressed" in old.effect
    assert "after this message arrived" in old.effect if threaded else "submitted nothing to it" in old.effect
    client.force_login(django_user_model.objects.create_superuser("admin", "admin@outreach.test", "pw"))
    page = client.get(reverse("inbound_detail", args=[old.pk])).content.decode()
    assert "No evidence we sent to it" in page and escape(old.effect) in page

    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id if threaded else "",
                                                 in_reply_to=threaded, subject="Lunch?"))
    poll(imap_mailbox)
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "replied")
    new = InboundMessage.objects.exclude(pk=old.pk).get()
    assert new.correlation_rule == ("in_reply_to" if threaded else "sender_address")
    assert new.effect.startswith("stopped (replied)")


def test_mail_from_an_enrolled_address_never_sent_to_does_not_stop(imap_mailbox, dovecot):
    enrollment = enroll(make_sequence(mailbox=imap_mailbox, steps=1), "ada@example.com")
    connect(imap_mailbox)
    dovecot.append("alice", "INBOX", mails.reply(to_message_id="", in_reply_to=False, subject="Hi"))
    poll(imap_mailbox)
    assert_did_nothing(enrollment)
    assert NO_EVIDENCE in InboundMessage.objects.get().effect


@pytest.mark.parametrize("build", [forged_dsn, lambda r: mails.arf(original_message_id=mails.new_id(), recipient=r),
                                   prose_bounce], ids=["dsn", "arf", "prose"])
def test_a_forged_report_suppresses_and_stops_nobody(imap_mailbox, dovecot, smtp_server, build):
    other = MailboxFactory(smtp_port=smtp_server.port)
    sent_elsewhere, _ = send_first_step(other, email="victim@corp.test")  # sent to, but from another mailbox
    never_sent = enroll(make_sequence(mailbox=imap_mailbox, steps=1), "quiet@corp.test")  # enrolled here, unsent
    connect(imap_mailbox)
    for victim in ("victim@corp.test", "quiet@corp.test"):
        dovecot.append("alice", "INBOX", build(victim))

    poll(imap_mailbox)

    assert_did_nothing(sent_elsewhere, never_sent)
    rows = list(InboundMessage.objects.order_by("id"))
    assert [r.kind for r in rows] == (["complaint"] * 2 if build is not forged_dsn and build is not prose_bounce
                                      else ["bounce"] * 2)
    for row, victim in zip(rows, ("victim@corp.test", "quiet@corp.test"), strict=True):
        assert row.correlation_rule == "no_evidence" and row.job_id is None
        assert row.effect.startswith(NO_EVIDENCE) and victim in row.effect


def test_a_bounce_naming_an_address_this_mailbox_sent_to_acts_only_after_the_send(imap_mailbox, dovecot):
    enrollment, job = send_first_step(imap_mailbox, email="gone@example.com")
    # The same report, without our Message-ID: first dated before the send, then after it.
    dovecot.append("alice", "INBOX", forged_dsn("gone@example.com"), when=job.submitted_at - timedelta(days=1))
    poll(imap_mailbox)
    assert_did_nothing(enrollment)

    dovecot.append("alice", "INBOX", forged_dsn("gone@example.com"))
    poll(imap_mailbox)
    row = InboundMessage.objects.order_by("id").last()
    assert (row.correlation_rule, row.job_id) == ("report_recipient", job.pk)
    assert Suppression.objects.get(value="gone@example.com").reason == "hard_bounce"
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "hard_bounce")


def test_delay_warnings_never_count_toward_the_soft_bounce_limit(imap_mailbox, dovecot, settings):
    settings.OUTREACH_SOFT_BOUNCE_LIMIT = 3
    enrollment, job = send_first_step(imap_mailbox, email="slow@example.com")
    for _ in range(3):
        dovecot.append("alice", "INBOX", mails.dsn(
            original_message_id=job.message_id, recipient="slow@example.com", action="delayed", status="4.4.7",
            diagnostic="451 4.4.7 delivery temporarily suspended", notice="Delayed Mail (still being retried)"))
    poll(imap_mailbox)

    assert_did_nothing(enrollment)
    assert InboundMessage.objects.filter(kind="bounce").count() == 3
    for effect in InboundMessage.objects.values_list("effect", flat=True):
        assert "delivery delayed" in effect and "never counts toward the soft-bounce limit" in effect


def test_the_soft_bounce_limit_counts_distinct_messages_not_reports(imap_mailbox, dovecot, settings):
    settings.OUTREACH_SOFT_BOUNCE_LIMIT = 2
    enrollment, job = send_first_step(imap_mailbox, email="full@example.com")
    for _ in range(2):  # the same message reported as failed twice
        dovecot.append("alice", "INBOX", mails.dsn(original_message_id=job.message_id, recipient="full@example.com",
                                                   status="4.2.2", diagnostic="452 4.2.2 mailbox full"))
    poll(imap_mailbox)
    assert_did_nothing(enrollment)
    assert list(InboundMessage.objects.order_by("id").values_list("effect", flat=True)) == [
        "full@example.com: soft bounce 1 of 2, recorded"] * 2
