"""Data minimization and retention: unrelated mail is never stored beyond its metadata; raw source expires.

Real Dovecot, the real database (a dump of the test database), through the real send pipeline.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse

from db.clock import db_now
from inbound import tasks
from inbound.models import InboundMessage
from proving.harness import mails
from proving.harness.stack import database_dump
from sequences.models import Enrollment, TimelineEvent
from tests.inbound.test_ingest import poll, send_first_step

pytestmark = pytest.mark.django_db(transaction=True)


def personal_mail(marker: str, *, sender: str, attachment: bool = False) -> bytes:
    body = f"Dinner at ours on Friday? {marker}\r\nLove, Grandma"
    if not attachment:
        return mails.reply(
            to_message_id="",
            in_reply_to=False,
            sender=sender,
            name=f"Grandma {marker}",
            subject=f"Family dinner {marker}",
            body=body,
        )
    return (
        f"From: Grandma {marker} <{sender}>\r\nTo: {mails.OURS}\r\nSubject: Photos {marker}\r\n"
        f"Message-ID: {mails.new_id('family.example')}\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        f"--b\r\nContent-Type: text/plain\r\n\r\n{body}\r\n--b\r\nContent-Type: text/plain; name=notes.txt\r\n"
        f"Content-Disposition: attachment\r\n\r\n{marker} notes\r\n--b--\r\n"
    ).encode()


def test_unrelated_personal_mail_leaves_no_trace_but_its_metadata(imap_mailbox, dovecot, client, django_user_model):
    marker = f"MARKER-{uuid.uuid4().hex}"
    enrollment, job = send_first_step(imap_mailbox)
    dovecot.append("alice", "INBOX", personal_mail(marker, sender="grandma@family.example"))
    dovecot.append("alice", "INBOX", personal_mail(marker, sender="grandma@family.example", attachment=True))
    dovecot.append("alice", "INBOX", mails.newsletter(random.Random(1)).replace(b"digest", f"digest {marker}".encode()))
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id, body="Not now, thanks. REPLY-TEXT"))

    assert poll(imap_mailbox).folders["INBOX"]["recorded"] == 4

    assert marker not in database_dump(connection.settings_dict)
    unrelated = InboundMessage.objects.exclude(job=job)
    assert unrelated.count() == 3
    for row in unrelated:
        assert row.content == "metadata"
        assert (row.subject, row.from_name, row.from_address, bytes(row.raw), row.headers, row.reply_text) == (
            "",
            "",
            "",
            b"",
            {},
            "",
        )
        assert row.size > 0 and row.internaldate is not None and row.uid
    reply = InboundMessage.objects.get(job=job)
    assert reply.content == "full" and b"REPLY-TEXT" in bytes(reply.raw)
    enrollment.refresh_from_db()
    assert enrollment.stop_reason == "replied"
    assert not TimelineEvent.objects.filter(data__inbound__in=[r.pk for r in unrelated]).exists()

    client.force_login(django_user_model.objects.create_superuser("admin", "admin@outreach.test", "pw"))
    listing = client.get(reverse("inbound_list")).content.decode()
    assert listing.count("not stored: unrelated to anything we sent") == 3
    detail = client.get(reverse("inbound_detail", args=[unrelated.first().pk])).content.decode()
    assert "Not stored: unrelated to anything we sent" in detail and marker not in detail


def test_raw_source_is_purged_after_the_retention_period_and_the_record_stays(imap_mailbox, dovecot, settings):
    settings.OUTREACH_INBOUND_RETENTION_DAYS = 90
    enrollment, job = send_first_step(imap_mailbox)
    _, job2 = send_first_step(imap_mailbox, email="bob@example.com")
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id))
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job2.message_id, sender="bob@example.com"))
    poll(imap_mailbox)
    old, recent = InboundMessage.objects.order_by("id")
    InboundMessage.objects.filter(pk=old.pk).update(committed_at=db_now() - timedelta(days=91))

    assert tasks.inbound_raw_purge() == 1

    old.refresh_from_db()
    assert (bytes(old.raw), old.content) == (b"", "purged") and old.raw_purged_at is not None
    assert old.effect.startswith("stopped (replied)") and old.kind == "human_reply" and old.job_id == job.pk
    recent.refresh_from_db()
    assert recent.content == "full" and bytes(recent.raw)
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.STOPPED
    assert tasks.inbound_raw_purge() == 0  # idempotent


def test_the_purge_is_on_the_periodic_schedule():
    import django_rq
    from rq.cron import CronScheduler

    scheduler = CronScheduler(connection=django_rq.get_connection("default"))
    scheduler.load_config_from_file("outreach.cron")
    assert tasks.inbound_raw_purge in [job.func for job in scheduler.get_jobs()]
