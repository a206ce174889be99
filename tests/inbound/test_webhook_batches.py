"""A large ESP webhook batch is answered at once and applied in the background, each event once (issue 40, item 6).

A 10,000-event SendGrid batch used to be applied inside the request: the web worker's time-out cut it short and
the ESP got a 500 after thousands of events had been written. Now the request keeps the batch and answers; RQ jobs
on the ingest queue apply it a chunk at a time; a re-delivery adds nothing; a batch whose worker died is completed
by the resume pass. RQ runs in-process on the test run's own Redis database.
"""

from __future__ import annotations

import json
import time

import django_rq
import pytest
import redis
from django.db.models import Q
from django.test import Client
from rq import SimpleWorker
from rq.job import Job

from inbound.models import WebhookBatch
from inbound.webhook_events import event_converter
from inbound.webhooks import CHUNK_EVENTS, tracking_events_apply, webhook_batches_resume
from mailboxes.models import ProviderEvent
from proving.harness.provider_api import API_KEY, ProviderApi
from sequences.models import SendJob, Suppression, TimelineEvent
from tests.providers.helpers import KEY_ENV, WEBHOOK_SECRET, basic_auth
from tests.security import test_webhooks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore::anymail.exceptions.AnymailNotSupportedWarning"),
]
S = SendJob.State
SENDGRID = "/webhooks/anymail/sendgrid/tracking/"
jobs = test_webhooks.jobs  # ann, ben and cat, each with a step-1 message submitted through the SendGrid fake


@pytest.fixture
def provider_api(settings, monkeypatch):
    api = ProviderApi().start()
    monkeypatch.setenv(KEY_ENV, API_KEY)
    settings.ANYMAIL = {"WEBHOOK_SECRET": WEBHOOK_SECRET, "REQUESTS_TIMEOUT": 2.0,
                        "SENDGRID_API_URL": api.url("sendgrid")}
    yield api
    api.stop()


@pytest.fixture(autouse=True)
def ingest_queue(settings):
    """RQ on the test run's own Redis database, emptied around each test."""
    settings.RQ_QUEUES = {name: {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 600}
                          for name in ("send", "ingest", "default")}
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    yield django_rq.get_queue("ingest")
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


def batch(jobs: list[SendJob], size: int, *, acting: dict[int, tuple[str, SendJob, dict]]) -> list:
    """SIZE SendGrid events, ids ev-0...: opens, clicks and deliveries of mail that is not ours (they change
    nothing), with the events that act (a delivery, a complaint, a hard bounce) at the positions ACTING names."""
    quiet = [("open", 0), ("processed", 1), ("click", 2), ("delivered", None)]
    events = []
    for i in range(size):
        kind, job, fields = acting.get(i) or (quiet[i % 4][0], None, {})
        which = quiet[i % 4][1]
        job = job or (jobs[which] if which is not None else None)
        events.append({"email": job.enrollment.contact.email if job else f"p{i}@example.org",
                       "timestamp": 1_767_225_600 + i, "event": kind, "sg_event_id": f"ev-{i}",
                       "anymail_id": job.provider_message_id if job else f"not-ours-{i}", **fields})
    return events


def acting_events(jobs: list[SendJob], *positions: int) -> dict[int, tuple[str, SendJob, dict]]:
    ann, ben, cat = jobs
    first, second, third = positions
    return {first: ("delivered", ann, {"response": "250 2.0.0 OK"}),
            second: ("spamreport", ben, {}),
            third: ("bounce", cat, {"type": "bounce", "status": "5.1.1", "reason": "550 5.1.1 no such user"})}


def post(body: str):
    return Client(raise_request_exception=False).post(SENDGRID, data=body, content_type="application/json",
                                                      HTTP_AUTHORIZATION=basic_auth())


def run_one(queue) -> None:
    """Run only the first job of the queue, in-process."""
    job = Job.fetch(queue.job_ids[0], connection=queue.connection)
    queue.remove(job)
    SimpleWorker([queue], connection=queue.connection).execute_job(job, queue)
    assert job.get_status(refresh=True) == "finished", job.latest_result()


def run_ingest(queue) -> None:
    """Run the queue's jobs, those they enqueue included, as a worker would (job by job: `work(burst=True)`
    can wait a minute for its pub/sub thread when it stops)."""
    while queue.count:
        run_one(queue)


def assert_each_applied_once(jobs: list[SendJob], event_ids: set[str], *, besides: str = "") -> None:
    """Each of EVENT_IDS in the ledger once with one timeline event, and what acts applied once (the event id
    BESIDES is not counted)."""
    ann, ben, cat = jobs
    recorded = ProviderEvent.objects.exclude(event_type="malformed").exclude(event_id=besides)
    assert set(recorded.values_list("event_id", flat=True)) == event_ids
    assert recorded.count() == len(event_ids)
    timeline = TimelineEvent.objects.filter(kind="provider_event").exclude(data__event_id=besides)
    assert timeline.count() == len(event_ids)
    assert TimelineEvent.objects.filter(kind="job_delivered", job=ann).count() == 1
    for job, state in ((ann, S.ACCEPTED), (ben, S.SUBMITTED), (cat, S.FAILED)):
        job.refresh_from_db()
        assert job.state == state, (job, job.state)
    assert sorted(Suppression.objects.values_list("value", "reason")) == [
        ("ben@example.net", "complaint"), ("cat@example.net", "hard_bounce")]


def test_a_10000_event_batch_is_answered_at_once_applied_in_the_background_once_and_not_again(jobs, ingest_queue):
    events = batch(jobs, 10_000, acting=acting_events(jobs, 7, 4_321, 9_876))
    events[600] = "not an event"  # anymail cannot read it: recorded as malformed, its neighbours applied
    events[1_200]["email"] = "ben\x00@example.net"  # a NUL: rejected as malformed
    events[2_001] = events[2_000]  # the same event twice in the batch: recorded once
    body = json.dumps(events)

    started = time.monotonic()
    response = post(body)
    print(f"\n{len(events)} events, {len(body) / 1e6:.1f} MB: answered {response.status_code} "
          f"in {time.monotonic() - started:.2f} s")
    assert response.status_code == 200, response.content
    assert response.content == b""  # the answer ESPs get today
    assert not ProviderEvent.objects.exists()  # nothing applied inside the request
    assert ingest_queue.count == 1

    started = time.monotonic()
    run_ingest(ingest_queue)
    print(f"applied in the background in {time.monotonic() - started:.2f} s")
    good = {e["sg_event_id"] for i, e in enumerate(events) if i not in (600, 1_200)}
    assert_each_applied_once(jobs, good)
    assert ProviderEvent.objects.filter(event_type="malformed").count() == 2
    stored = WebhookBatch.objects.get()
    assert (stored.applied, stored.events, stored.body) == (10_000, 10_000, "")  # finished: the body is not kept
    assert stored.finished_at is not None

    # The ESP did not hear the answer in time and delivers the same batch again.
    counts = ProviderEvent.objects.count(), TimelineEvent.objects.count(), Suppression.objects.count()
    assert post(body).status_code == 200
    assert ingest_queue.count == 0
    run_ingest(ingest_queue)
    assert (ProviderEvent.objects.count(), TimelineEvent.objects.count(), Suppression.objects.count()) == counts
    assert WebhookBatch.objects.count() == 1


def test_a_batch_whose_worker_died_mid_way_is_completed_by_the_resume_pass(jobs, ingest_queue):
    size = 2 * CHUNK_EVENTS + 100  # three chunks
    events = batch(jobs, size, acting=acting_events(jobs, 3, CHUNK_EVENTS + 300, 2 * CHUNK_EVENTS + 50))
    too_long = "ev-" + "x" * 300  # longer than the ledger's event id: PostgreSQL refuses it, its chunk goes one by one
    events[2 * CHUNK_EVENTS + 10]["sg_event_id"] = too_long
    assert post(json.dumps(events)).status_code == 200
    (stored,) = WebhookBatch.objects.all()

    # A worker applies the first chunk (and enqueues the second), then a second worker takes the next chunk
    # and dies two hundred events in: its RQ job is gone, the events it recorded stay.
    run_one(ingest_queue)
    stored.refresh_from_db()
    assert stored.applied == CHUNK_EVENTS and ingest_queue.count == 1
    ingest_queue.empty()
    convert = event_converter("sendgrid")
    tracking_events_apply(esp_name="sendgrid",
                          events=[convert(e) for e in events[CHUNK_EVENTS:CHUNK_EVENTS + 200]])
    run_ingest(ingest_queue)  # nothing left in Redis: nothing happens
    stored.refresh_from_db()
    assert stored.applied == CHUNK_EVENTS and stored.finished_at is None
    assert ProviderEvent.objects.count() == CHUNK_EVENTS + 200

    assert webhook_batches_resume() == []  # not yet given up for lost: it was touched a moment ago
    assert webhook_batches_resume(idle_seconds=0) == [stored.pk]
    run_ingest(ingest_queue)

    stored.refresh_from_db()
    assert stored.applied == size and stored.finished_at is not None
    assert_each_applied_once(jobs, {e["sg_event_id"] for e in events} - {too_long}, besides=too_long)
    # Recorded where the database stores it (SQLite), rejected as malformed where it cannot (PostgreSQL): once.
    assert ProviderEvent.objects.filter(Q(event_id=too_long) | Q(raw__sg_event_id=too_long)).count() == 1
