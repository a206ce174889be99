from __future__ import annotations

import pytest
import redis

from proving.harness.provider_api import API_KEY, ProviderApi
from tests.providers.helpers import KEY_ENV, WEBHOOK_SECRET

ESPS = ("sendgrid", "brevo", "postmark", "mailgun", "mandrill")


@pytest.fixture
def provider_api(settings, _provider_settings):
    """The local provider API, reached through the settings' API URL override (a mailbox never names one)."""
    api = ProviderApi().start()
    settings.ANYMAIL = settings.ANYMAIL | {f"{esp.upper()}_API_URL": api.url(esp) for esp in ESPS}
    yield api
    api.stop()


@pytest.fixture(autouse=True)
def _provider_settings(settings, monkeypatch):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    settings.ANYMAIL = {"WEBHOOK_SECRET": WEBHOOK_SECRET, "REQUESTS_TIMEOUT": 2.0}


@pytest.fixture(autouse=True)
def rq_default(settings):
    """RQ on the test run's own Redis database (REDIS_URL: each pass of scripts/test has one), emptied around
    each test."""
    url = settings.REDIS_URL
    settings.RQ_QUEUES = {name: {"URL": url, "DEFAULT_TIMEOUT": 600} for name in ("send", "ingest", "default")}
    conn = redis.Redis.from_url(url)
    conn.flushdb()
    yield conn
    conn.flushdb()
