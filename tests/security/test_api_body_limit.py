"""A body larger than Django reads (DATA_UPLOAD_MAX_MEMORY_SIZE) is the API's documented 400 in words, not Django's
HTML page (found by the schema sweep, issue 40: a 3.3 MB bulk call, its schema's 10,000 rows allowed)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from api.tokens import api_token_create
from tests.factories import MailboxFactory, make_sequence

pytestmark = pytest.mark.django_db
LIMIT = 10_000


@pytest.fixture
def api(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    _, token = api_token_create(name="body-limit", role="operator", rate_per_minute=1_000_000)
    return Client(headers={"Authorization": f"Bearer {token}"}, raise_request_exception=False)


def bulk(sequence_id: int, rows: int) -> str:
    return json.dumps({"sequence_id": sequence_id,
                       "contacts": [{"email": f"p{i}@example.com", "first_name": "Ada"} for i in range(rows)]})


@pytest.mark.parametrize("key", [None, "same-key"])
def test_a_body_over_the_limit_is_a_400_in_words_and_a_smaller_retry_runs(api, key):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    headers = {"Idempotency-Key": key} if key else {}
    big = bulk(sequence.pk, 300)
    assert len(big) > LIMIT
    response = api.post("/api/v1/enrollments/bulk", big, content_type="application/json", headers=headers)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": f"Bad request: the body is larger than {LIMIT:,} bytes"}
    # Nothing was kept under the key: the smaller call runs (not a 422 for a key reused with another body).
    retry = api.post("/api/v1/enrollments/bulk", bulk(sequence.pk, 2), content_type="application/json",
                     headers=headers)
    assert retry.status_code == 202, retry.content


@pytest.mark.one_database("how a request is read, before any row")
def test_more_query_parameters_than_django_reads_is_a_400_in_words(client):
    query = "&".join(f"q{i}=x" for i in range(1_100))
    api = client.get(f"/api/v1/contacts?{query}")
    assert (api.status_code, api["Content-Type"]) == (400, "application/json")
    assert "more than 1,000 query parameters" in api.json()["detail"]
    page = client.get(f"/login/?{query}")
    assert page.status_code == 400 and "more than 1,000 query parameters" in page.content.decode()
