"""Refusals that name authentication or a blocklist count toward the guardrail and pause the mailbox at a rate,
as hard bounces do; other refusals count nothing."""

from __future__ import annotations

import pytest

from mailboxes.models import RefusalSignal
from mailboxes.refusals import AUTHENTICATION, BLOCKLIST, refusal_reason
from proving.harness.smtp import Behaviour
from sequences.models import OperatorAction, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.provider_events import TrackingEvent, provider_event_record
from sequences.services.sending import dispatch_due
from sequences.timeline import Event
from tests.factories import MailboxFactory, enroll, make_sequence

S = SendJob.State
GMAIL_5726 = ("550 5.7.26 This mail has been blocked because the sender is unauthenticated. Gmail requires all "
              "senders to authenticate with either SPF or DKIM.")


def test_the_refusals_that_count_are_read_from_the_reply():
    assert refusal_reason(GMAIL_5726) == AUTHENTICATION
    assert refusal_reason("550 5.7.515 Access denied, sending domain example.com does not meet the required "
                          "authentication level.") == AUTHENTICATION
    assert refusal_reason("550 5.7.1 Service unavailable, Client host [192.0.2.1] blocked using Spamhaus") == BLOCKLIST
    assert refusal_reason("554 5.7.1 Message rejected due to poor reputation of the sender") == BLOCKLIST
    assert refusal_reason("550 5.7.1 Message content rejected") == ""
    assert refusal_reason("550 5.1.1 <p@example.com>: Recipient address rejected: blocked mailbox full") == ""
    assert refusal_reason("451 4.7.26 try again later") == ""


def send_all(mailbox, count: int) -> list:
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0))
    for i in range(count):
        enroll(sequence, f"p{i}@example.com")
    return [send_job_process(job_id=job_id, worker_id="w1") for job_id in dispatch_due()]


@pytest.mark.django_db(transaction=True)
def test_5_7_26_refusals_at_the_limit_pause_the_mailbox(smtp_server):
    smtp_server.behaviour = Behaviour(data_reply=GMAIL_5726)
    mailbox = MailboxFactory(smtp_port=smtp_server.port, guardrail_refusal_min_sends=4, guardrail_refusal_rate=50)

    outcomes = send_all(mailbox, 4)
    assert [o.state for o in outcomes] == [S.FAILED] * 4
    assert RefusalSignal.objects.filter(mailbox=mailbox, reason=AUTHENTICATION).count() == 4
    mailbox.refresh_from_db()
    assert mailbox.paused and mailbox.guardrail_paused_at is not None
    assert mailbox.guardrail_reason == ("refusals naming authentication or a blocklist 100.0 % (4 of 4 sends in the "
                                        "last 7 days) is at or above the limit of 50 %")
    assert OperatorAction.objects.get(action="mailbox_paused_by_guardrail").result["refusals"] == 4
    assert TimelineEvent.objects.filter(kind=Event.MAILBOX_REFUSAL_COUNTED).count() == 4


@pytest.mark.django_db(transaction=True)
def test_a_content_refusal_counts_nothing(smtp_server):
    smtp_server.behaviour = Behaviour(data_reply="550 5.7.1 Message content rejected")
    mailbox = MailboxFactory(smtp_port=smtp_server.port, guardrail_refusal_min_sends=4, guardrail_refusal_rate=50)

    assert [o.state for o in send_all(mailbox, 4)] == [S.FAILED] * 4
    mailbox.refresh_from_db()
    assert not mailbox.paused and not RefusalSignal.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_esp_bounce_naming_a_blocklist_counts_too(smtp_server):
    mailbox = MailboxFactory(smtp_port=smtp_server.port, guardrail_refusal_min_sends=1, guardrail_refusal_rate=50)
    [outcome] = send_all(mailbox, 1)
    SendJob.objects.filter(pk=outcome.job_id).update(provider_message_id="pm-1")
    effect = provider_event_record(event=TrackingEvent(
        provider="sendgrid", event_id="ev-1", event_type="bounced", message_id="pm-1", recipient="p0@example.com",
        description="550 5.7.1 Client host [192.0.2.1] blocked using zen.spamhaus.org"))
    assert effect.startswith("refused because the sender is on a blocklist or has a poor reputation: counted by "
                             "the guardrail (mailbox paused: refusals naming authentication or a blocklist 100.0 %")
    assert RefusalSignal.objects.get(job_id=outcome.job_id).reason == BLOCKLIST
    mailbox.refresh_from_db()
    assert mailbox.paused
