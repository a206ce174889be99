"""Receipts for every stop (inbound.replies.receipts): each reply's INTERNALDATE, when outreach read it, when its
stop committed and what it stopped, on the conversation page; reply → stop p50/p95 per mailbox on the dashboard
and at /metrics. On a real Dovecot, through the real poll and send pipeline; every figure is checked against the
record and against what the test measured around it (INTERNALDATE is the server's whole second)."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from inbound.ingest.poll import mailbox_poll
from inbound.models import InboundMessage
from inbound.replies.receipts import quantile, reply_to_stop_latencies
from proving.harness import mails
from sequences.models import SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.timeline import Event
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
TOKEN = "scrape-" + "r" * 40
CLOCKS = 0.05  # the database's clock and this process's are the same machine's; allow for reading them apart


def _at(moment: datetime) -> float:
    return moment.astimezone(UTC).timestamp()


def test_receipts_on_the_conversation_the_dashboard_and_metrics_are_what_happened(imap_mailbox, dovecot, settings,
                                                                                   django_user_model, redis_conn):
    settings.OUTREACH_METRICS_TOKEN = TOKEN
    sequence = make_sequence(mailbox=imap_mailbox, steps=2, waits=(0, 3600))
    enrollments = [enroll(sequence, f"p{i}@example.com") for i in range(3)]
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).fetched == 0  # the first poll starts at UIDNEXT
    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w1").state == S.SUBMITTED
    firsts = {e.pk: e.jobs.get(step__position=1) for e in enrollments}

    measured = {}  # enrollment -> (before the APPEND, after it, poll started, poll ended)
    for batch in ([enrollments[0], enrollments[1]], [enrollments[2]]):
        appended = {}
        for enrollment in batch:
            before = time.time()
            dovecot.append("alice", "INBOX", mails.reply(to_message_id=firsts[enrollment.pk].message_id,
                                                         sender=enrollment.contact.email))
            appended[enrollment.pk] = (before, time.time())
        polled = time.time()
        assert mailbox_poll(mailbox_id=imap_mailbox.pk).fetched == len(batch)
        done = time.time()
        for pk, (before, after) in appended.items():
            measured[pk] = (before, after, polled, done)

    admin = django_user_model.objects.create_superuser("olga", "olga@acme.test", "pw")
    client = Client()
    client.force_login(admin)
    latencies = []
    for enrollment in enrollments:
        reply = InboundMessage.objects.get(enrollment=enrollment)
        stop = TimelineEvent.objects.get(kind=Event.ENROLLMENT_STOPPED, enrollment=enrollment)
        assert stop.data["source"] == f"inbound:{reply.pk}"
        before, after, polled, done = measured[enrollment.pk]
        # The record agrees with what the test saw: in the inbox during the APPEND (to the whole second), read
        # and stopped during the poll, the stop after the read.
        assert math.floor(before) - 1 <= _at(reply.internaldate) <= after
        assert reply.internaldate.microsecond == 0
        assert polled - CLOCKS <= _at(reply.committed_at) <= _at(stop.at) <= done + CLOCKS
        latency = (stop.at - reply.internaldate).total_seconds()
        assert polled - after - CLOCKS <= latency <= done - math.floor(before) + 1 + CLOCKS
        latencies.append(latency)

        page = client.get(reverse("reply_detail", args=[enrollment.pk])).content.decode()
        receipt = page[page.index(f'id="receipt-{reply.pk}"'):]
        receipt = receipt[:receipt.index("</p>")]
        assert f'<span class="mono received">{reply.internaldate:%Y-%m-%d %H:%M:%S}</span>' in receipt
        assert f'<span class="mono read">{reply.committed_at:%Y-%m-%d %H:%M:%S.%f}</span>' in receipt
        assert f'<span class="mono stop">{stop.at:%Y-%m-%d %H:%M:%S.%f}</span>' in receipt
        assert f'<span class="reply-to-stop">{latency:.3f}</span> s after it reached the inbox' in receipt
        # What it stopped: step 1 had left, the follow-up was canceled.
        assert f"{sequence.name}: stopped (1 canceled — never sent, 1 already submitted — cannot recall)" in receipt
        assert "crossed" not in page.replace("Crossed a reply", "")

    # Reply → stop per mailbox over the last 7 days: nearest-rank p50 and p95 of the three.
    (row,) = reply_to_stop_latencies()
    assert (row.mailbox, row.replies) == (imap_mailbox.name, 3)
    ordered = sorted(latencies)
    assert (row.p50, row.p95) == (ordered[1], ordered[2]) == (quantile(latencies, 0.5), quantile(latencies, 0.95))
    dashboard = client.get(reverse("dashboard")).content.decode()
    table = dashboard[dashboard.index('id="reply-to-stop"'):]
    table = table[:table.index("</table>")]
    assert f'data-mailbox="{imap_mailbox.name}"' in table
    assert 'data-label="Replies">3</td>' in table
    assert f'data-label="p50">{ordered[1]:.3f} s</td>' in table and f'data-label="p95">{ordered[2]:.3f} s</td>' in table

    scraped = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert scraped.status_code == 200
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(scraped.content.decode()) for s in family.samples}
    mailbox = ("mailbox", imap_mailbox.name)
    assert samples[("outreach_reply_to_stop_seconds", (mailbox, ("quantile", "0.5")))] == pytest.approx(ordered[1])
    assert samples[("outreach_reply_to_stop_seconds", (mailbox, ("quantile", "0.95")))] == pytest.approx(ordered[2])
    assert samples[("outreach_reply_to_stop_replies", (mailbox,))] == 3


def test_a_reply_that_stops_nothing_says_so_and_is_not_counted(imap_mailbox, dovecot, django_user_model):
    sequence = make_sequence(mailbox=imap_mailbox, steps=2, waits=(0, 3600))
    enrollment = enroll(sequence, "ada@example.com")
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).fetched == 0
    (job_id,) = dispatch_due()
    send_job_process(job_id=job_id, worker_id="w1")
    first = SendJob.objects.get(pk=job_id)
    for n in range(2):  # the second reply finds the person stopped already
        dovecot.append("alice", "INBOX", mails.reply(to_message_id=first.message_id, sender="ada@example.com",
                                                     message_id=f"<again-{n}@example.com>"))
        mailbox_poll(mailbox_id=imap_mailbox.pk)
    second = InboundMessage.objects.get(message_id="<again-1@example.com>")
    admin = django_user_model.objects.create_superuser("olga", "olga@acme.test", "pw")
    client = Client()
    client.force_login(admin)
    page = client.get(reverse("reply_detail", args=[enrollment.pk])).content.decode()
    receipt = page[page.index(f'id="receipt-{second.pk}"'):]
    assert f"it stopped nothing: {second.effect}" in receipt[:receipt.index("</p>")].replace("&#x27;", "'")
    assert reply_to_stop_latencies()[0].replies == 1
