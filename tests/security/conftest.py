"""Fixtures for the security tests: the provider API fake reached through settings, RQ on this suite's Redis db."""

from __future__ import annotations

import pytest

from proving.harness.provider_api import API_KEY, ProviderApi
from tests.providers.conftest import rq_default  # noqa: F401 - RQ on this suite's Redis db, emptied around tests
from tests.providers.helpers import KEY_ENV, WEBHOOK_SECRET
from tests.ui.conftest import roles, users  # noqa: F401 - the UI's role fixtures


@pytest.fixture
def provider_api(settings, monkeypatch):
    api = ProviderApi().start()
    monkeypatch.setenv(KEY_ENV, API_KEY)
    settings.ANYMAIL = {"WEBHOOK_SECRET": WEBHOOK_SECRET, "REQUESTS_TIMEOUT": 2.0,
                        "SENDGRID_API_URL": api.url("sendgrid"), "BREVO_API_URL": api.url("brevo")}
    yield api
    api.stop()
