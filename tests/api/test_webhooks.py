"""Outbound webhooks: a reply ingested through Dovecot reaches a local receiver as a signed `contact.replied`.

The outbox row is written in the ingestion's transaction, enqueued after
commit, sent by an RQ worker with no transaction open, and sent again after
the receiver answered 500 (the periodic pass enqueues the due retry). A mailbox
that stops reading its replies is announced once per episode, and its recovery once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import timedelta

import pytest

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from inbound.ingest.view import folder_unread_mark
from mailboxes.imap.errors import ImapError
from mailboxes.models import ImapCursor, Mailbox
from proving.harness import mails
from sequences.models import TimelineEvent
from sequences.services.stops import enrollment_stop
from sequences.services.suppressions import suppression_add
from sequences.tasks import reply_view_episodes, webhooks_due
from sequences.webhooks_out.events import WebhookEvent
from sequences.webhooks_out.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from sequences.webhooks_out.signing import HEADER, signature_valid
from tests.api.conftest import work
from tests.api.receiver import Receiver
from tests.inbound.test_ingest import send_first_step

pytestmark = pytest.mark.django_db(transaction=True)
SECRET_ENV, SECRET = "OUTREACH_SECRET_TEST_WEBHOOK", "whsec-test-0123456789"


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.fixture
def endpoint(receiver, monkeypatch, settings, redis_db):
    monkeypatch.setenv(SECRET_ENV, SECRET)
    settings.OUTREACH_WEBHOOK_RETRY_BASE_SECONDS = 0  # the retry is due at once (the backoff has its own test)
    return WebhookEndpoint.objects.create(url=receiver.url, secret_env=SECRET_ENV,
                                          event_types=[e.value for e in WebhookEvent])


def deliveries(event_type: str) -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(event_type=event_type).order_by("id"))


def test_a_reply_through_dovecot_is_delivered_signed_and_again_after_a_500(imap_mailbox, dovecot, receiver,
                                                                            endpoint):
    enrollment, job = send_first_step(imap_mailbox)
    work()  # message.submitted
    receiver.answers = [500]  # the receiver fails once
    receiver.received.clear()
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=job.message_id))
    mailbox_poll(mailbox_id=imap_mailbox.pk)

    (delivery,) = deliveries("contact.replied")
    inbound_event = TimelineEvent.objects.get(kind="inbound_received")
    assert delivery.event_id == inbound_event.pk  # written with the event, in its transaction
    work()  # the first try: 500
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("pending", 1, 500)

    assert webhooks_due() >= 1  # the periodic pass finds the due retry
    work()
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("delivered", 2, 200)
    assert list(WebhookAttempt.objects.filter(delivery=delivery).order_by("id").values_list("status_code", flat=True)
                ) == [500, 200]

    replied = [r for r in receiver.received if r.headers.get("Outreach-Event") == "contact.replied"]
    assert [r.answered for r in replied] == [500, 200]
    for request in replied:
        # Checked as a receiver would, independently of our signing code: HMAC-SHA256 over "<t>.<body>".
        parts = dict(p.split("=", 1) for p in request.headers[HEADER].split(","))
        expected = hmac.new(SECRET.encode(), parts["t"].encode() + b"." + request.body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(parts["v1"], expected) and abs(time.time() - int(parts["t"])) < 300
        assert signature_valid(header=request.headers[HEADER], secret=SECRET, body=request.body, now=int(time.time()))
        assert not signature_valid(header=request.headers[HEADER], secret="wrong", body=request.body,
                                   now=int(time.time()))
        assert not signature_valid(header=request.headers[HEADER], secret=SECRET, body=request.body + b" ",
                                   now=int(time.time()))
    payload = json.loads(replied[-1].body)
    assert payload["type"] == "contact.replied" and payload["id"] == f"evt_{inbound_event.pk}"
    assert payload["data"].items() >= {"email": "ada@example.com", "enrollment_id": enrollment.pk, "job_id": job.pk,
                                       "rule": "in_reply_to"}.items()

    # The reply stopped the enrollment: enrollment.stopped says what was canceled and what had already left.
    (stopped,) = deliveries("enrollment.stopped")
    data = json.loads(stopped.body)["data"]
    assert (data["reason"], data["canceled"], data["already_submitted"]) == ("replied", 1, 1)
    assert "1 job handed off earlier (submitted before this stop) — cannot recall" in data["summary"]
    assert deliveries("message.submitted")[0].state == "delivered"


def test_nothing_is_sent_for_mail_that_names_no_message_of_ours(imap_mailbox, dovecot, receiver, endpoint):
    send_first_step(imap_mailbox)
    receiver.received.clear()
    WebhookDelivery.objects.all().delete()
    dovecot.append("alice", "INBOX", mails.reply(to_message_id="<not-ours@elsewhere.example>",
                                                 sender="stranger@example.org"))
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    work()
    assert not WebhookDelivery.objects.exists() and receiver.received == []


def test_an_endpoint_hears_only_its_event_types_and_an_event_waits_for_commit(world, receiver, endpoint):
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(event_types=["contact.unsubscribed"])
    enrollment_stop(enrollment_id=world["active"].pk, reason="operator", actor="t")
    suppression_add(value="someone@example.com", reason="unsubscribe", source="t")
    suppression_add(value="@example.net", reason="unsubscribe", source="t")  # a domain: nobody unsubscribed
    assert [d.event_type for d in WebhookDelivery.objects.all()] == ["contact.unsubscribed"]
    work()
    assert [json.loads(r.body)["data"]["email"] for r in receiver.received] == ["someone@example.com"]


def test_retries_back_off_and_give_up_after_a_day(world, receiver, endpoint, settings):
    from datetime import timedelta

    from sequences.webhooks_out.deliver import backoff_seconds, webhook_deliver

    settings.OUTREACH_WEBHOOK_RETRY_BASE_SECONDS = 30
    assert [backoff_seconds(n) for n in (1, 2, 3, 8, 20)] == [30, 60, 120, 3600, 3600]
    receiver.answers = [503] * 10
    suppression_add(value="late@example.com", reason="unsubscribe", source="t")
    (delivery,) = WebhookDelivery.objects.all()
    assert "retry in 30 s" in webhook_deliver(delivery_id=delivery.pk)
    assert "not due" in webhook_deliver(delivery_id=delivery.pk)  # its retry is not due yet: nothing sent
    assert len(receiver.received) == 1
    # A day later the next failure is the last one.
    WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=delivery.created_at - timedelta(days=1),
                                                          next_attempt_at=delivery.created_at - timedelta(days=1))
    assert "gave up after 2 attempts" in webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert delivery.state == "gave_up" and webhooks_due() == 0


def test_a_delivery_without_its_secret_is_not_sent(world, receiver, endpoint, monkeypatch):
    from sequences.webhooks_out.deliver import webhook_deliver

    monkeypatch.delenv(SECRET_ENV)
    suppression_add(value="nosecret@example.com", reason="unsubscribe", source="t")
    (delivery,) = WebhookDelivery.objects.all()
    assert "no signing secret" in webhook_deliver(delivery_id=delivery.pk)
    assert receiver.received == []


def test_the_guardrail_pause_is_a_known_event_with_its_figures():
    from sequences.webhooks_out.events import GUARDRAIL_KIND, webhook_event_for

    data = {"mailbox": "sales", "reason": "hard bounces 6 % over 7 days (limit 5 %)", "bounces": 6, "sends": 100}
    event, payload = webhook_event_for(GUARDRAIL_KIND, email="", enrollment_id=None, job_id=None, data=data)
    assert event == WebhookEvent.MAILBOX_PAUSED_BY_GUARDRAIL and payload == data
    assert webhook_event_for("job_claimed", email="a@example.com", enrollment_id=1, job_id=1, data={}) is None


# --- the reply view: `mailbox.reply_view_stale` once per episode, `mailbox.reply_view_restored` when it reads
# again. The IMAP server goes down, the view grows older than the mailbox's max age, the periodic sweep
# (sequences.tasks.reply_view_episodes) announces it once however often it runs; the server comes back, a
# poll reads the folder, the sweep announces the recovery once; a second outage is a second episode. (A refused
# login is blind at once: tests/inbound/test_credentials_refused.py.)

STALE, RESTORED = "mailbox.reply_view_stale", "mailbox.reply_view_restored"


def heard(receiver) -> list[tuple[str, dict]]:
    """The reply-view events the receiver got, in order, with their data."""
    work()
    bodies = [json.loads(r.body) for r in receiver.received]
    return [(b["type"], b["data"]) for b in bodies if b["type"] in (STALE, RESTORED)]


def blind(mailbox, dovecot) -> None:
    """The IMAP server is down; the last good read is older than the max age."""
    dovecot.kill()
    with pytest.raises(ImapError):
        mailbox_poll(mailbox_id=mailbox.pk)
    ImapCursor.objects.filter(mailbox=mailbox).update(read_through=db_now() - timedelta(minutes=11))


def reads_again(mailbox, dovecot) -> None:
    dovecot.start()
    assert mailbox_poll(mailbox_id=mailbox.pk).error == ""


def test_a_blind_mailbox_is_announced_once_per_episode_and_its_recovery_once(imap_mailbox, dovecot, receiver,
                                                                            endpoint):
    imap_mailbox.reply_view_max_age = 600
    imap_mailbox.save()
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    assert reply_view_episodes() == 0  # a fresh view: nothing to say, and no "restored" out of nowhere
    assert heard(receiver) == []

    blind(imap_mailbox, dovecot)
    assert reply_view_episodes() == 1
    assert reply_view_episodes() == 0  # the same episode: nothing more
    (kind, data), = heard(receiver)
    assert kind == STALE
    assert data["mailbox"] == imap_mailbox.name and data["max_age_seconds"] == 600
    assert "cannot connect to IMAP server" in data["reason"]  # the words of the failure
    read_through = ImapCursor.objects.get(mailbox=imap_mailbox).read_through
    assert data["read_through"] == read_through.isoformat()
    assert data["blind_since"] == (read_through + timedelta(seconds=600)).isoformat()

    reads_again(imap_mailbox, dovecot)
    assert reply_view_episodes() == 1
    assert reply_view_episodes() == 0
    (kind, data), = heard(receiver)[1:]
    assert kind == RESTORED and data["mailbox"] == imap_mailbox.name
    assert data["blind_since"] == (read_through + timedelta(seconds=600)).isoformat()  # the episode's start
    imap_mailbox.refresh_from_db()
    assert imap_mailbox.reply_view_blind_since is None  # the episode is over

    blind(imap_mailbox, dovecot)  # a second outage is a second episode
    assert reply_view_episodes() == 1
    assert [kind for kind, _ in heard(receiver)] == [STALE, RESTORED, STALE]
    assert WebhookDelivery.objects.filter(event_type=STALE).count() == 2


def test_a_mailbox_never_read_is_blind_once_older_than_its_max_age(imap_mailbox, dovecot, receiver, endpoint):
    """Its first connection failed: no folder was ever read. A new mailbox is not blind until its max age passed."""
    dovecot.kill()
    with pytest.raises(ImapError):
        mailbox_poll(mailbox_id=imap_mailbox.pk)
    assert reply_view_episodes() == 0
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(created_at=db_now() - timedelta(hours=1))
    assert reply_view_episodes() == 1
    assert [kind for kind, _ in heard(receiver)] == [STALE]


def test_mail_heard_of_but_not_read_yet_is_no_episode(imap_mailbox, receiver, endpoint):
    """The watcher's unread mark holds follow-ups for the seconds until the poll; it announces nothing."""
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    folder_unread_mark(mailbox_id=imap_mailbox.pk, folder="INBOX")
    assert reply_view_episodes() == 0 and heard(receiver) == []


def test_a_mailbox_without_imap_has_no_episodes(mailbox, receiver, endpoint):
    Mailbox.objects.filter(pk=mailbox.pk).update(created_at=db_now() - timedelta(days=1))
    assert reply_view_episodes() == 0 and heard(receiver) == []
