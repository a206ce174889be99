"""Fixtures of the mailbox tests shared by more than one module."""

from __future__ import annotations

import pytest

from proving.harness.oauth import OAuthServer


@pytest.fixture
def oauth(monkeypatch, request):
    """A local OAuth2 token endpoint holding a grant for the module's USER; the client secret and the refresh
    token in the environment variables the module names (SECRET_ENV, REFRESH_ENV)."""
    module = request.module
    with OAuthServer() as server:
        monkeypatch.setenv(module.SECRET_ENV, server.client_secret)
        server.refresh_token = server.grant(module.USER)
        monkeypatch.setenv(module.REFRESH_ENV, server.refresh_token)
        yield server
