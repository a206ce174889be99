"""A bounce or an auto-reply tied to us by an address alone (the failed recipient, the sender) keeps its header and
what the report says about our recipient, never the owner's mail it returns or quotes; it still acts as before.

Real Dovecot, the real poller and send pipeline, and the database's dump (what a backup holds).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, time, timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from inbound.ingest.minimise import source_kept
from inbound.models import InboundMessage
from proving.harness import mails
from proving.harness.stack import database_dump
from sequences.models import SendJob, Suppression
from tests.inbound.test_ingest import poll, send_first_step

pytestmark = pytest.mark.django_db(transaction=True)
OWNER_ID = "<letter.1@owner.example>"  # the owner's own mail: a Message-ID we never generated


def nowhere(*texts: str) -> list[str]:
    """Those of *texts* the database holds anywhere, as text or as the hex of a bytea/blob column."""
    dump = database_dump(connection.settings_dict)
    return [t for t in texts if t in dump or t.encode().hex() in dump or t.encode().hex().upper() in dump]


def private_bounce(marker: str) -> bytes:
    """The owner wrote to Ada (whom a sequence mailed too) and to their doctor; Ada's address fails, and the
    server returns the whole letter with a notice quoting it."""
    b = "report-" + uuid.uuid4().hex
    return (
        f"From: Mail Delivery System <MAILER-DAEMON@mx.example>\r\nTo: {mails.OURS}\r\n"
        f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: {mails.new_id('mx.example')}\r\n"
        "Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n"
        f'Content-Type: multipart/report; report-type=delivery-status; boundary="{b}"\r\n\r\n'
        f"--{b}\r\nContent-Type: text/plain\r\n\r\nYour message \"Test results {marker}\" could not be delivered to"
        " one or more recipients.\r\n"
        f"--{b}\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example\r\n\r\n"
        "Final-Recipient: rfc822; ada@example.com\r\nAction: failed\r\nStatus: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n"
        "Final-Recipient: rfc822; dr.who@clinic.example\r\nAction: failed\r\nStatus: 5.2.2\r\n"
        "Diagnostic-Code: smtp; 552 5.2.2 mailbox full\r\n\r\n"
        f"--{b}\r\nContent-Type: message/rfc822\r\n\r\n"
        f"From: {mails.OURS}\r\nTo: ada@example.com, dr.who@clinic.example\r\nSubject: Test results {marker}\r\n"
        f"Message-ID: {OWNER_ID}\r\n\r\nDear doctor, my results show diabetes. {marker}\r\n"
        f"--{b}--\r\n"
    ).encode()


def test_a_bounce_of_the_owners_mail_matched_by_recipient_keeps_the_report_not_the_mail(imap_mailbox, dovecot,
                                                                                          client, admin_user):
    marker = f"PRIVATE-{uuid.uuid4().hex}"
    enrollment, job = send_first_step(imap_mailbox)
    dovecot.append("alice", "INBOX", private_bounce(marker))
    # The same rule does not reach a bounce naming our Message-ID: what it returns is our own message.
    dovecot.append("alice", "INBOX", mails.dsn(original_message_id=job.message_id, recipient="ada@example.com",
                                               notice="Your message could not be delivered. NOTICE-TEXT"))

    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 2

    row, ours = InboundMessage.objects.order_by("id")
    assert (ours.correlation_rule, ours.raw_truncated) == ("embedded_headers", False)
    assert b"NOTICE-TEXT" in bytes(ours.raw) and job.message_id.encode() in bytes(ours.raw)
    # It is a bounce of Ada's address, matched by recipient: it acts exactly as a bounce of ours would.
    assert (row.kind, row.correlation_rule, row.job_id) == ("bounce", "report_recipient", job.pk)
    assert row.effect.startswith("ada@example.com: hard bounce, suppressed")
    assert Suppression.objects.get().value == "ada@example.com"
    assert SendJob.objects.get(enrollment=enrollment, step__position=2).state == SendJob.State.CANCELED
    # What it was and what it said about Ada are kept: its header, the status, the delivery-status fields.
    source = bytes(row.raw).decode()
    assert row.content == "full" and row.raw_truncated
    assert row.headers["Subject"] == "Undelivered Mail Returned to Sender" and row.from_address
    assert "Content-Type: message/delivery-status" in source and "Reporting-MTA: dns; mx.example" in source
    assert "Final-Recipient: rfc822; ada@example.com" in source and "550 5.1.1 user unknown" in source
    assert (row.status_codes[0], row.recipients, row.reply_text) == ("5.1.1", ["ada@example.com"], "")
    # Never the owner's letter, its subject, its other recipient, nor the notice quoting it.
    assert nowhere(marker, "diabetes", "dr.who@clinic.example", OWNER_ID) == []

    client.force_login(admin_user)
    page = client.get(reverse("inbound_detail", args=[row.pk])).content.decode()
    assert "Final-Recipient: rfc822; ada@example.com" in page and marker not in page


def test_an_auto_reply_quoting_the_owners_mail_matched_by_sender_keeps_its_header_not_the_quote(
        imap_mailbox, dovecot, client, admin_user):
    marker = f"PRIVATE-{uuid.uuid4().hex}"
    enrollment, job = send_first_step(imap_mailbox)
    back = timezone.now().date() + timedelta(days=20)
    dovecot.append("alice", "INBOX", mails.out_of_office(
        to_message_id=OWNER_ID, subject="Out of office",
        text=(f"Thank you for your message.\r\nI am out of the office and back on {back.day} {back:%B %Y}.\r\n\r\n"
              f"> Ada, about the loan: my account number is DE89370400440532013000 {marker}\r\n")))

    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 1

    row = InboundMessage.objects.get()
    assert (row.kind, row.correlation_rule, row.job_id) == ("auto_reply", "sender_address", job.pk)
    # It acts on all of what arrived: the return date is read from the text that is not kept.
    assert f"back on {back:%Y-%m-%d}" in row.effect and "held until" in row.effect, row.effect
    follow_up = SendJob.objects.get(enrollment=enrollment, step__position=2)
    assert follow_up.scheduled_at == datetime.combine(back + timedelta(days=1), time(0), tzinfo=UTC)
    # Its header is kept; its text, which quotes the owner's mail, is not.
    source = bytes(row.raw).decode()
    assert row.content == "full" and row.raw_truncated
    assert (row.from_address, row.headers["Auto-Submitted"], row.headers["In-Reply-To"]) == (
        "ada@example.com", "auto-replied", OWNER_ID)
    assert source.startswith("From: ada@example.com\r\n") and source.endswith("\r\n\r\n")
    assert nowhere(marker, "DE89370400440532013000", "Thank you for your message") == []

    client.force_login(admin_user)
    page = client.get(reverse("inbound_detail", args=[row.pk])).content.decode()
    assert "auto-replied" in page and marker not in page


@pytest.mark.one_database("a parser: no database")
def test_a_returned_header_is_kept_only_when_we_generated_its_message_id():
    raw = private_bounce("M")
    theirs = source_kept(raw, recipients=["ada@example.com"], our_ids=set())
    ours = source_kept(raw, recipients=["ada@example.com"], our_ids={OWNER_ID})
    assert OWNER_ID.encode() not in theirs and b"Content-Type: text/rfc822-headers" not in theirs
    assert b"Content-Type: text/rfc822-headers\r\n\r\nFrom: " in ours and OWNER_ID.encode() in ours
    assert b"diabetes" not in ours and b"5.2.2" not in ours  # nor the report's block about the doctor

