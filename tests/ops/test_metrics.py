"""/metrics (outreach/metrics.py): Prometheus text, behind a bearer token, read from the database and Redis."""

from __future__ import annotations

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rq.queue import Queue

from outreach.scheduler import SchedulerLease
from proving.harness.stack import free_port
from tests.factories import MailboxFactory, enroll, make_sequence

TOKEN = "scrape-" + "x" * 40


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, parsed by prometheus_client's own parser."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
def token(settings):
    settings.OUTREACH_METRICS_TOKEN = TOKEN
    return TOKEN


def test_metrics_are_off_without_a_token_setting(client, db, settings):
    settings.OUTREACH_METRICS_TOKEN = ""
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 404


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"])
def test_a_scrape_without_the_token_is_refused(client, db, token, header):
    response = client.get("/metrics", headers={"Authorization": header} if header else {})
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"outreach_" not in response.content


def test_metrics_parse_and_say_what_healthz_says(client, db, redis_conn, token):
    mailbox = MailboxFactory(name="sales")
    MailboxFactory(name="broken", blocked_at=timezone.now())
    enroll(make_sequence(mailbox=mailbox), "p1@example.test")
    Queue("send", connection=redis_conn).enqueue("sequences.tasks.dispatch")
    assert SchedulerLease(redis_conn, holder="host-a:1:abc", seconds=20).hold()

    response = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    got = samples(response.content.decode())
    assert got[("outreach_up", (("component", "database"),))] == 1
    assert got[("outreach_up", (("component", "redis"),))] == 1
    assert got[("outreach_queue_depth", (("queue", "send"),))] == 1
    assert got[("outreach_queue_depth", (("queue", "ingest"),))] == 0
    assert got[("outreach_queue_oldest_job_seconds", (("queue", "send"),))] >= 0
    assert got[("outreach_scheduler_leader", ())] == 1
    assert got[("outreach_scheduler_lease_term", ())] >= 1
    assert got[("outreach_mailbox_blocked", (("mailbox", "broken"),))] == 1
    assert got[("outreach_mailbox_blocked", (("mailbox", "sales"),))] == 0
    assert got[("outreach_mailbox_reply_view", (("mailbox", "sales"), ("view", "not_read_allowed")))] == 1
    assert got[("outreach_send_jobs", (("state", "scheduled"),))] == 1
    assert got[("outreach_send_jobs", (("state", "submitted"),))] == 0


def test_an_unreachable_redis_shows_as_down_and_the_rest_is_still_scraped(client, db, settings, token):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 200
    got = samples(response.content.decode())
    assert got[("outreach_up", (("component", "redis"),))] == 0
    assert got[("outreach_up", (("component", "database"),))] == 1
    assert not [name for name, _ in got if name.startswith(("outreach_queue_", "outreach_scheduler_"))]
