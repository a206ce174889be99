"""Paths no view can use are a 400 in words, and a 500 that still happens is logged with its traceback with DEBUG
off (issue 34, item 7)."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from api.tokens import api_token_create
from outreach.middleware import MAX_QUERY_VALUE
from tests.security import urls_failing


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/contacts/a%00b@example.com", "/api/v1/timeline/a%00@example.com",
                                  "/api/v1/contacts/a%01b@example.com"])
def test_a_path_holding_a_control_character_is_a_400_in_words(settings, path):
    settings.RQ_QUEUES = {name: {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 600}
                          for name in ("send", "ingest", "default")}
    _, token = api_token_create(name="crm", role="admin", rate_per_minute=100_000)
    response = Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"}).get(path)
    assert response.status_code == 400, response.status_code
    assert b"the path holds a control character" in response.content


@pytest.mark.django_db
def test_a_500_is_logged_with_its_traceback_with_debug_off(settings, caplog):
    settings.DEBUG = False
    settings.ROOT_URLCONF = urls_failing.__name__
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = Client(raise_request_exception=False).get("/failing-for-tests/")
    assert response.status_code == 500
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.exc_info and record.exc_info[0] is RuntimeError
    # Some handler the project configured writes it, though DEBUG is off.
    logger, writers = logging.getLogger("django.request"), []
    while logger:
        writers += [h for h in logger.handlers if isinstance(h, logging.StreamHandler) and h.filter(record)
                    and type(h).__module__ != "_pytest.logging"]
        logger = logger.parent if logger.propagate else None
    assert writers, "no handler writes a 500 with DEBUG off"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/contacts/", "/admin/sequences/contact/", "/api/v1/contacts"])
def test_a_query_value_longer_than_any_page_reads_is_a_400_in_words(users, path):
    client = Client(raise_request_exception=False)
    client.force_login(users["admin"])
    long = client.get(path, {"q": "x" * (MAX_QUERY_VALUE + 1)})
    assert long.status_code == 400, long.status_code
    assert b"is longer than 10,000 characters" in long.content
    # SQLite refuses a LIKE pattern over 50,000 bytes: the longest value taken, escaped, stays under it.
    assert client.get(path, {"q": "%\U0001f600" * (MAX_QUERY_VALUE // 2)}).status_code in (200, 401)
