"""Fixtures for the API tests: the UI's roles, one token per role, a small world, an HTTP client for live_server."""

from __future__ import annotations

import importlib
import json

import django_rq
import pytest
import requests
from rq.worker import SimpleWorker

from tests.ui.conftest import roles, users  # noqa: F401 - the UI's role fixtures

_webhooks_migration = importlib.import_module("sequences.migrations.0009_api_tokens_webhooks")


@pytest.fixture
def api_roles(roles):  # noqa: F811
    """The UI's groups, with the admins' webhook permission (recreated after a transactional flush)."""
    from django.apps import apps

    _webhooks_migration.webhooks_perm_grant(apps)


@pytest.fixture
def redis_db(settings):
    """This suite's Redis database (REDIS_URL), emptied around each test: RQ queues and rate counters."""
    conn = django_rq.get_connection("default")
    conn.flushdb()
    yield conn
    conn.flushdb()


@pytest.fixture
def tokens(api_roles, redis_db):
    """A token per role, made by the same service as `manage.py api_token`."""
    from api.tokens import api_token_create

    return {
        role: api_token_create(name=f"{role}-token", role=role, rate_per_minute=1000)[1]
        for role in ("staff", "operator", "admin")
    }


class Api:
    """requests against the live server, with a token."""

    def __init__(self, base: str, token: str | None):
        self.base, self.token = base, token

    def headers(self, extra: dict | None = None) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers | (extra or {})

    def get(self, path: str, **kw) -> requests.Response:
        return requests.get(self.base + path, headers=self.headers(kw.pop("headers", None)), timeout=30, **kw)

    def post(self, path: str, body=None, **kw) -> requests.Response:
        data = json.dumps(body if body is not None else {})
        return requests.post(
            self.base + path, data=data, headers=self.headers(kw.pop("headers", None)), timeout=60, **kw
        )


@pytest.fixture
def api(live_server, tokens):
    def make(role: str | None = "operator", token: str | None = None) -> Api:
        return Api(live_server.url, token if token is not None else (tokens[role] if role else None))

    return make


def work(queue_name: str = "default") -> None:
    queue = django_rq.get_queue(queue_name)
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


@pytest.fixture
def world(db):
    """A sequence with two steps, an enrolled contact, a paused one, a suppression; built through the services."""
    from sequences.services.stops import enrollment_pause
    from sequences.services.suppressions import suppression_add
    from tests.factories import MailboxFactory, enroll, make_sequence

    mailbox = MailboxFactory(name="api-box")
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3 * 86400), name="API sequence")
    active = enroll(sequence, "active@example.com")
    paused = enroll(sequence, "paused@example.com")
    enrollment_pause(enrollment_id=paused.pk, actor="fixture")
    suppression_add(value="blocked@example.com", reason="manual", note="fixture", actor="fixture")
    return {"mailbox": mailbox, "sequence": sequence, "active": active, "paused": paused}
