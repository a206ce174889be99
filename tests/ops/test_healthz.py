"""/healthz and /healthz/live (outreach/health.py): no login, no secrets; 503 when the database or Redis is
unreachable, else 200 with what an operator's probe wants to know (the detail with the health token; without it,
tests/security/test_red_team_small.py)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rq.queue import Queue

from db.clock import db_now
from inbound.models import WatcherProcess, WatchLease
from outreach.scheduler import SchedulerLease
from proving.harness.stack import free_port
from tests.factories import MailboxFactory

TOKEN = "health-" + "x" * 40
DETAIL = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(autouse=True)
def token(settings):
    settings.OUTREACH_HEALTH_TOKEN = TOKEN


def test_healthz_answers_200_with_the_state_of_everything_when_all_is_up(client, db, redis_conn):
    MailboxFactory(name="fine")
    MailboxFactory(name="blind", follow_ups_without_reply_view=False)  # no IMAP: follow-ups held
    MailboxFactory(name="broken", address="secret-sender@outreach.test", blocked_at=timezone.now(),
                   blocked_reason="535 5.7.8 authentication failed for secret-sender")
    Queue("send", connection=redis_conn).enqueue("sequences.tasks.dispatch")
    lease = SchedulerLease(redis_conn, holder="host-a:4242:abc123", seconds=20)
    assert lease.hold()

    response = client.get("/healthz", headers=DETAIL)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"]
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == {"ok": True, "vendor": connection.vendor}
    assert body["redis"] == {"ok": True}
    assert set(body["queues"]) == {"send", "ingest", "default"}
    assert body["queues"]["send"]["depth"] == 1
    assert 0 <= body["queues"]["send"]["oldest_job_seconds"] < 60
    assert body["queues"]["ingest"] == {"depth": 0, "oldest_job_seconds": None, "running": 0, "failed": 0,
                                        "workers": 0}
    scheduler = body["scheduler"]
    assert scheduler["leader"] == "host-a:4242:abc123" and scheduler["term"] == lease.term
    assert 0 <= scheduler["lease_held_seconds"] < 60 and 0 < scheduler["lease_expires_in_seconds"] <= 20
    mailboxes = body["mailboxes"]
    assert mailboxes["total"] == 3
    assert [m["name"] for m in mailboxes["blocked"]] == ["broken"]
    assert {m["name"]: m["reply_view"] for m in mailboxes["not_reading_replies"]} == {"blind": "not_read"}
    assert "mailbox broken is blocked: its jobs wait" in body["warnings"]
    # Nothing a stranger may not read: no address, no server's words, no setting.
    text = response.content.decode()
    for secret in ("secret-sender", "535", "authentication", "redis://", "postgres://", "sqlite:", "SECRET"):
        assert secret not in text


def test_healthz_says_when_no_scheduler_holds_the_lease(client, db, redis_conn):
    body = client.get("/healthz", headers=DETAIL).json()
    assert body["status"] == "ok"
    assert body["scheduler"] == {"leader": None}
    assert any("no scheduler holds the lease" in w for w in body["warnings"])


def test_healthz_answers_503_when_redis_is_unreachable(client, db, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there

    response = client.get("/healthz", headers=DETAIL)

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["redis"] == {"ok": False, "error": "ConnectionError"}
    assert body["database"]["ok"] is True
    assert str(settings.REDIS_URL) not in json.dumps(body)


@pytest.mark.django_db(transaction=True)
def test_healthz_answers_503_when_the_database_is_unreachable(client, redis_conn, tmp_path):
    saved = dict(connection.settings_dict)
    if connection.vendor == "postgresql":
        unreachable = {"HOST": "127.0.0.1", "PORT": str(free_port())}
    else:
        unreachable = {"NAME": str(tmp_path / "missing-directory" / "db.sqlite3")}
    connection.close()
    connection.settings_dict.update(unreachable)
    try:
        response = client.get("/healthz", headers=DETAIL)
    finally:
        connection.close()
        connection.settings_dict.update(saved)

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["database"] == {"ok": False, "error": "OperationalError"}
    assert body["redis"] == {"ok": True}


def test_liveness_touches_neither_the_database_nor_redis(client, db, settings, django_assert_num_queries):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    with django_assert_num_queries(0):
        response = client.get("/healthz/live")
    assert response.status_code == 200
    assert response.json() == {"status": "alive"}


def test_a_probe_over_plain_http_is_answered_where_everything_else_is_redirected_to_https(client, db, redis_conn,
                                                                                          settings):
    settings.SECURE_SSL_REDIRECT = True  # production: OUTREACH_HTTPS=1
    assert client.get("/healthz").status_code == 200
    assert client.get("/healthz/live").status_code == 200
    assert client.get("/login/").status_code == 301


def test_healthz_lists_the_watchers_and_the_folders_none_of_them_holds(client, db, redis_conn):
    mailbox = MailboxFactory(name="watched")
    now = db_now()
    WatcherProcess.objects.create(name="host-a:1:x", expires_at=now + timedelta(seconds=30), folders=1)
    WatcherProcess.objects.create(name="host-b:2:y", expires_at=now - timedelta(seconds=5), folders=1)  # dead
    WatchLease.objects.create(mailbox=mailbox, folder="INBOX", account="a", holder="host-a:1:x",
                              expires_at=now + timedelta(seconds=30))
    WatchLease.objects.create(mailbox=mailbox, folder="Replies", account="a", holder="host-b:2:y",
                              expires_at=now - timedelta(seconds=5))

    body = client.get("/healthz", headers=DETAIL).json()

    assert body["watchers"] == {"processes": [{"name": "host-a:1:x", "folders": 1}], "folders": 2,
                                "folders_unheld": 1}
    assert any("1 of 2 watched folders have no watcher" in w for w in body["warnings"])
    WatcherProcess.objects.all().delete()
    warnings = client.get("/healthz", headers=DETAIL).json()["warnings"]
    assert any("no watch_mailboxes process is running" in w for w in warnings)
