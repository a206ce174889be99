"""A booked meeting stops a person in two sequences before their next step, with the real send worker.

Real parts: the live server and urllib (the provider's side), `manage.py rqworker send default` as a process (it
sends the steps to the aiosmtpd server and delivers the outbound webhooks), a local HTTP receiver subscribed to
`meeting.booked`. Ada is in two sequences, Bob (who books nothing) in the first. Step 1 leaves with the booking
link; Ada books through it; then every step 2 is made due and the dispatcher runs. Bob's step 2 reaching the
server shows the worker would have sent Ada's too: hers never reaches it. The last test is the same scenario
without the stop (the booking refused for its signature): Ada's step 2 then arrives, in both sequences.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import django_rq
import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone
from rq.registry import StartedJobRegistry

from inbound.models import Conversation
from proving.harness.stack import Process, database_url, wait_for
from sequences.booking_token import booking_token_read
from sequences.models import Enrollment, SendJob
from sequences.tasks import dispatch
from sequences.webhooks_out.models import WebhookDelivery, WebhookEndpoint
from sequences.webhooks_out.signing import HEADER, signature_valid
from tests.api.receiver import Receiver
from tests.meetings.conftest import CALCOM_PAGE, CALENDLY_PAGE, receiving_url
from tests.meetings.payloads import body_of, calcom_event, calcom_headers, calendly_event, calendly_headers, post

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
E, S = Enrollment.Status, SendJob.State
SECRET_ENV, SECRET = "OUTREACH_SECRET_TEST_MEETINGS_HOOK", "whsec-meetings-0123456789"


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


@pytest.fixture
def worker(redis_conn, receiver, tmp_path, monkeypatch):
    """The send worker, as the product runs it, and an endpoint subscribed to `meeting.booked`."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    WebhookEndpoint.objects.create(url=receiver.url, secret_env=SECRET_ENV, event_types=["meeting.booked"])
    env = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), REDIS_URL=settings.REDIS_URL,
               PYTHONUNBUFFERED="1")
    name = f"meetings-{os.getpid()}-{secrets.token_hex(3)}"
    process = Process("worker", ["rqworker", "send", "default", "--name", name], env=env, log_dir=tmp_path)
    yield process
    process.stop()
    print(process.log_path.read_text(errors="replace")[-8000:])


def idle() -> bool:
    """Nothing waits in the worker's queues and nothing runs there."""
    return all(django_rq.get_queue(q).count == 0 and StartedJobRegistry(queue=django_rq.get_queue(q)).count == 0
               for q in ("send", "default"))


def to(smtp_server, email: str) -> list:
    return [m for m in smtp_server.received if email in m.recipients]


def step_ones_sent(smtp_server) -> None:
    assert dispatch()["queued"] == 3
    wait_for(lambda: len(smtp_server.received) == 3, timeout=60, what="the three step-1 messages")


def link_in(message, page: str) -> str:
    """The booking link a message carries (the step's {{ booking_link }}, rendered by the worker)."""
    text = message.message.get_payload(decode=True).decode()
    (link,) = re.findall(re.escape(page) + r"\?\S+", text)
    return link


def step_twos_due_and_dispatched(live: int) -> int:
    """Every step 2 due now (those still scheduled go out); how many the dispatcher queued. Waits first for the
    `live` step 2s still scheduled to exist: the worker makes each once it has recorded its person's step 1, a
    moment after the SMTP server has it."""
    wait_for(lambda: SendJob.objects.filter(step__position=2, state=S.SCHEDULED).count() >= live, timeout=30,
             what=f"{live} step 2s scheduled")
    SendJob.objects.filter(step__position=2).update(scheduled_at=timezone.now() - timedelta(seconds=1))
    return dispatch()["queued"]


def assert_booked(people, smtp_server, receiver, status: int, words: str) -> None:
    assert status == 200, words
    for enrollment in people.ada:
        enrollment.refresh_from_db()
        assert (enrollment.status, enrollment.stop_reason) == (E.STOPPED, "meeting_booked")
        step2 = enrollment.jobs.get(step__position=2)
        assert (step2.state, step2.cancel_reason) == (S.CANCELED, "meeting_booked")
    # The conversation says Meeting booked: made for her (she never replied), on the enrollment last written from.
    (conversation,) = Conversation.objects.filter(contact=people.ada[0].contact)
    assert (conversation.category, conversation.latest_id, conversation.replies) == ("meeting", None, 0)

    # Her next steps: made due with Bob's, the dispatcher runs; Bob's arrives, hers never does.
    assert step_twos_due_and_dispatched(1) == 1
    wait_for(lambda: len(to(smtp_server, "bob@acme.test")) == 2, timeout=60, what="Bob's step 2")
    wait_for(idle, timeout=30, what="the worker to be idle")
    assert len(to(smtp_server, "ada@acme.test")) == 2  # step 1 of each sequence, and nothing after the booking
    assert set(SendJob.objects.filter(enrollment__in=people.ada).values_list("step__position", "state")) == {
        (1, S.SUBMITTED), (2, S.CANCELED)}

    # meeting.booked, delivered by the worker to the receiver, signed.
    wait_for(lambda: receiver.received, timeout=60, what="the meeting.booked delivery")
    (hook,) = receiver.received
    event = json.loads(hook.body)
    assert event["type"] == "meeting.booked" and hook.headers["Outreach-Event"] == "meeting.booked"
    assert signature_valid(header=hook.headers[HEADER], secret=SECRET, body=hook.body, now=int(time.time()))
    assert event["data"]["email"] == "ada@acme.test" and event["data"]["stopped"] == 2
    assert event["data"]["conversation"] == conversation.pk and event["data"]["matched_by"] == "booking link"
    assert WebhookDelivery.objects.get().state == WebhookDelivery.State.DELIVERED


def test_a_calendly_booking_stops_ada_in_both_sequences_before_step_2(live_server, people, calendly, smtp_server,
                                                                      worker, receiver):
    step_ones_sent(smtp_server)
    intro = next(m for m in to(smtp_server, "ada@acme.test") if CALENDLY_PAGE in m.data.decode())
    token = parse_qs(urlsplit(link_in(intro, CALENDLY_PAGE)).query)["utm_content"][0]
    assert booking_token_read(token) == people.ada[0].contact_id

    body = body_of(calendly_event("invitee.created", "ada@acme.test", token=token))
    status, words = post(receiving_url(live_server, calendly), body, calendly_headers(body))
    assert_booked(people, smtp_server, receiver, status, words)
    assert receiver.received and json.loads(receiver.received[0].body)["data"]["provider"] == "calendly"


def test_a_calcom_booking_stops_ada_in_both_sequences_before_step_2(live_server, people, calcom, smtp_server,
                                                                    worker, receiver):
    step_ones_sent(smtp_server)
    demo = next(m for m in to(smtp_server, "ada@acme.test") if CALCOM_PAGE in m.data.decode())
    query = parse_qs(urlsplit(link_in(demo, CALCOM_PAGE)).query)
    token = query["metadata[utm_content]"][0]  # what Cal.com gives back in payload.metadata
    assert query["utm_content"] == [token] and booking_token_read(token) == people.ada[0].contact_id

    body = body_of(calcom_event("BOOKING_CREATED", "ada@acme.test", token=token))
    status, words = post(receiving_url(live_server, calcom), body, calcom_headers(body))
    assert_booked(people, smtp_server, receiver, status, words)


def test_without_the_stop_step_2_reaches_the_server(live_server, people, calendly, smtp_server, worker, receiver):
    """The same scenario, the booking refused (a wrong signing key): nothing stops, and Ada's step 2 leaves in
    both sequences — what the tests above show never happens after a booking."""
    step_ones_sent(smtp_server)
    intro = next(m for m in to(smtp_server, "ada@acme.test") if CALENDLY_PAGE in m.data.decode())
    token = parse_qs(urlsplit(link_in(intro, CALENDLY_PAGE)).query)["utm_content"][0]
    body = body_of(calendly_event("invitee.created", "ada@acme.test", token=token))
    status, words = post(receiving_url(live_server, calendly), body,
                         calendly_headers(body, key="not-the-signing-key-0000000"))
    assert status == 403 and "does not match" in words

    assert step_twos_due_and_dispatched(3) == 3
    wait_for(lambda: len(smtp_server.received) == 6, timeout=60, what="every step 2")
    assert len(to(smtp_server, "ada@acme.test")) == 4
    assert not Enrollment.objects.filter(status=E.STOPPED).exists()
    assert not Conversation.objects.exists() and receiver.received == []
