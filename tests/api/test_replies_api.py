"""/api/v1/replies against the live server: list with filters, a category set once under an Idempotency-Key, an
answer that reaches the mailbox's SMTP server threaded; and the webhook events of the replies inbox."""

from __future__ import annotations

import pytest

from inbound.ingest.record import inbound_record
from inbound.models import Conversation
from proving.harness import mails
from sequences.models import OperatorAction, SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.webhooks_out.events import WebhookEvent, webhook_event_for
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)


def test_list_categorize_once_and_answer(api, mailbox, smtp_server):
    enrollment = enroll(make_sequence(mailbox=mailbox, steps=1), "ada@example.com")
    job = enrollment.jobs.get()
    dispatch_due()
    assert send_job_process(job_id=job.pk, worker_id="w1").state == SendJob.State.SUBMITTED
    job.refresh_from_db()
    inbound_record(mailbox_id=mailbox.pk, folder="INBOX", uidvalidity=1, fetched=mails.fetched(
        mails.reply(to_message_id=job.message_id, message_id="<ada-2@prospect.example>"), uid=1))
    conversation = Conversation.objects.get()
    client = api("operator")

    listed = client.get(f"/api/v1/replies?status=unhandled&mailbox={mailbox.pk}").json()
    assert [r["id"] for r in listed["items"]] == [conversation.pk] and listed["next"] == ""
    assert listed["items"][0]["email"] == "ada@example.com" and listed["items"][0]["chosen"] == ""
    for missing in (conversation.pk + 1, 0, 130915101379323740160):  # past 64 bits: SQLite could not bind it
        gone = client.get(f"/api/v1/replies/{missing}")
        assert gone.status_code == 404 and "detail" in gone.json(), (missing, gone.status_code)
    assert client.get("/api/v1/replies?category=meeting&status=all").json()["items"] == []

    key = {"Idempotency-Key": "cat-1"}
    first = client.post(f"/api/v1/replies/{conversation.pk}/category", {"category": "meeting"}, headers=key)
    again = client.post(f"/api/v1/replies/{conversation.pk}/category", {"category": "meeting"}, headers=key)
    assert first.status_code == again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert first.json()["category"] == "meeting" and first.json()["chosen_by"].startswith("api:")
    assert OperatorAction.objects.filter(action="reply_categorize").count() == 1
    assert client.post(f"/api/v1/replies/{conversation.pk}/category", {"category": "keen"}).status_code == 409

    answer = client.post(f"/api/v1/replies/{conversation.pk}/answer", {"body": "Tuesday works."},
                         headers={"Idempotency-Key": "ans-1"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["state"] == "submitted" and answer.json()["in_reply_to"] == "<ada-2@prospect.example>"
    assert smtp_server.received[-1].message["In-Reply-To"] == "<ada-2@prospect.example>"
    replay = client.post(f"/api/v1/replies/{conversation.pk}/answer", {"body": "Tuesday works."},
                         headers={"Idempotency-Key": "ans-1"})
    assert replay.json()["id"] == answer.json()["id"] and len(smtp_server.received) == 2  # step 1 + one answer


def test_reply_webhook_events_carry_the_category():
    received = webhook_event_for("reply_received", email="ada@example.com", enrollment_id=1, job_id=2,
                                 data={"conversation": 3, "suggested": "interested", "phrase": "tell me more",
                                       "confidence": 0.9, "inbound": 4, "mailbox": "m"})
    assert received[0] == WebhookEvent.REPLY_RECEIVED and received[1]["suggested"] == "interested"
    changed = webhook_event_for("reply_categorized", email="ada@example.com", enrollment_id=1, job_id=None,
                                data={"conversation": 3, "category": "meeting", "previous": "interested"})
    assert changed[0] == WebhookEvent.REPLY_CATEGORIZED and changed[1]["previous"] == "interested"
