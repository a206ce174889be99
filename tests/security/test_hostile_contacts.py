"""Contact data is bounded and clean before it is written: names, fields, keys, zones; a 422 in words, never a 500
(issue 34, items 6 and 7)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from api.tokens import api_token_create
from sequences.models import Contact

CONTACTS = "/api/v1/contacts"


@pytest.fixture
def client(db, settings):
    settings.RQ_QUEUES = {name: {"URL": settings.REDIS_URL, "DEFAULT_TIMEOUT": 600}
                          for name in ("send", "ingest", "default")}
    _, token = api_token_create(name="crm", role="operator", rate_per_minute=100_000)
    return Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"})


def upsert(client, body: dict):
    return client.post(CONTACTS, data=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(("body", "words"), [
    ({"fields": {f"k{i}": "v" for i in range(10_000)}}, "at most 100"),
    ({"fields": {"note": "x" * 2_000_000}}, "at most 10000"),
    ({"fields": {"k" * 5000: "v"}}, "name"),
    ({"fields": {"no\u0000te": "v"}}, "NUL"),
    ({"fields": {"note\ud800": "v"}}, "surrogate"),
    ({"fields": {"note": "v\udfff"}}, "surrogate"),
    ({"first_name": "Ann\ud800"}, "surrogate"),
    ({"timezone": "Europe/" + "x" * 5000}, "timezone"),
])
def test_a_contact_out_of_bounds_is_a_422_in_words_and_nothing_is_written(client, body, words):
    response = upsert(client, {"email": "ann@example.com", "first_name": "Ann"} | body)
    assert response.status_code == 422, (response.status_code, response.content[:300])
    assert words in response.json()["detail"]
    assert not Contact.objects.exists()
