"""Private mail that comes back through a bounce, an abuse report or an auto-reply to the owner's own mail is
metadata only, and the content of kept mail goes after the retention period (issue 34, item 2).

Real Dovecot, the real database (its dump: what a backup holds), through the real poller and send pipeline.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from db.clock import db_now
from inbound import tasks
from inbound.models import InboundMessage
from mailboxes.models import ProviderEvent
from proving.harness import mails
from proving.harness.stack import database_dump
from sequences.models import Suppression
from tests.inbound.test_ingest import poll, send_first_step

pytestmark = pytest.mark.django_db(transaction=True)


def traces(marker: str) -> list[str]:
    """The marker as the dump may hold it: text, or the hex of a bytea/blob column."""
    return [marker, marker.encode().hex(), marker.encode().hex().upper()]


def assert_nowhere(marker: str) -> None:
    dump = database_dump(connection.settings_dict)
    assert not [t for t in traces(marker) if t in dump], "private content kept in the database"


def private_bounce(marker: str) -> bytes:
    """The owner wrote to their bank; the bank's server returned the whole letter."""
    raw = mails.dsn(original_message_id=mails.new_id("owner.example"), recipient="loans@bank.example",
                    original_subject=f"My account IBAN DE89 3704 {marker}")
    return raw.replace(b"--\r\n", f"Dear bank, my account number is DE89370400440532013000 {marker}\r\n--\r\n"
                       .encode(), 1)


def private_auto_reply(marker: str) -> bytes:
    """The owner's doctor is away; the auto-reply quotes the owner's own mail."""
    return mails.out_of_office(to_message_id=mails.new_id("owner.example"), sender="dr.who@clinic.example",
                               subject=f"Out of office: my test results {marker}",
                               text=f"I am away until Monday.\r\n\r\n> My results show diabetes {marker}")


def private_arf(marker: str) -> bytes:
    raw = mails.arf(original_message_id=mails.new_id("owner.example"), recipient="friend@family.example")
    return raw.replace(b"Hi\r\n", f"Hi, the medical report you asked for {marker}\r\n".encode())


def test_reports_and_auto_replies_about_the_owners_own_mail_are_metadata_only(imap_mailbox, dovecot, users):
    marker = f"PRIVATE-{uuid.uuid4().hex}"
    enrollment, job = send_first_step(imap_mailbox)  # the mailbox has sent: its folders are read
    for raw in (private_bounce(marker), private_auto_reply(marker), private_arf(marker)):
        dovecot.append("alice", "INBOX", raw)
    ours = mails.dsn(original_message_id=job.message_id, recipient="ada@example.com",
                     original_subject="Hello Ada")
    dovecot.append("alice", "INBOX", ours)

    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 4

    rows = list(InboundMessage.objects.order_by("id"))
    assert [r.kind for r in rows] == ["bounce", "auto_reply", "complaint", "bounce"]
    for row in rows[:3]:  # named nothing we sent: what it was and what it did, nothing of what it carried
        assert row.content == "metadata" and row.job_id is None, row.effect
        assert (bytes(row.raw), row.subject, row.from_name, row.from_address, row.headers, row.reply_text,
                row.recipients) == (b"", "", "", "", {}, "", [])
        assert row.size > 0 and row.internaldate is not None
        assert "bank.example" not in row.effect and "family.example" not in row.effect
    assert rows[0].status_codes == ["5.1.1"] and rows[0].bounce_type == "hard"
    assert not Suppression.objects.exclude(value="ada@example.com").exists()
    # Our own message's bounce still acts and is kept to explain it.
    assert rows[3].content == "full" and rows[3].job_id == job.pk
    assert Suppression.objects.get().value == "ada@example.com"

    assert_nowhere(marker)
    client = Client()
    client.force_login(users["staff"])
    for row in rows[:3]:
        page = client.get(reverse("inbound_detail", args=[row.pk])).content.decode()
        assert "Not stored" in page and marker not in page
    assert marker not in client.get(reverse("inbound_list")).content.decode()


def test_retention_removes_the_content_of_kept_mail_and_provider_payloads(imap_mailbox, dovecot, settings):
    settings.OUTREACH_INBOUND_RETENTION_DAYS = 90
    marker = f"KEPT-{uuid.uuid4().hex}"
    enrollment, job = send_first_step(imap_mailbox)
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id, name=f"Ada {marker}",
                                                 subject=f"Re: Hello {marker}", body=f"My phone is {marker}"))
    poll(imap_mailbox)
    row = InboundMessage.objects.get()
    assert row.content == "full" and marker in row.reply_text and marker in row.subject
    event = ProviderEvent.objects.create(provider="sendgrid", event_id="ev-1", event_type="bounced",
                                         recipient="ada@example.com", job=job, effect="recorded",
                                         raw={"reason": f"550 mailbox of {marker} unknown"})
    fresh = ProviderEvent.objects.create(provider="sendgrid", event_id="ev-2", event_type="delivered",
                                         recipient="ada@example.com", job=job, raw={"event": "delivered"})
    InboundMessage.objects.filter(pk=row.pk).update(committed_at=db_now() - timedelta(days=91))
    ProviderEvent.objects.filter(pk=event.pk).update(received_at=db_now() - timedelta(days=91))

    assert tasks.inbound_raw_purge() == 1

    row.refresh_from_db()
    assert row.content == "purged" and row.raw_purged_at is not None
    assert (bytes(row.raw), row.subject, row.from_name, row.headers, row.reply_text) == (b"", "", "", {}, "")
    assert row.kind == "human_reply" and row.job_id == job.pk and row.effect.startswith("stopped (replied)")
    event.refresh_from_db()
    assert event.raw == {} and (event.event_type, event.recipient, event.job_id) == ("bounced", "ada@example.com",
                                                                                     job.pk)
    fresh.refresh_from_db()
    assert fresh.raw == {"event": "delivered"}  # within the period: kept
    assert_nowhere(marker)
    assert tasks.inbound_raw_purge() == 0  # idempotent
