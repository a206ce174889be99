"""Idempotency-Key: a retried POST acts once and gets the first answer; a reused key with another body is a 422."""

from __future__ import annotations

import threading

import pytest

from api.models import IdempotencyKey
from sequences.models import Enrollment, OperatorAction
from tests.ops.test_pgbouncer import PGBOUNCER, pooled  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def enroll_body(world, email="retry@example.com", **extra) -> dict:
    return {"sequence_id": world["sequence"].pk, "email": email, "first_name": "Retry"} | extra


def test_two_identical_posts_enroll_once_and_answer_the_same(api, world):
    client = api("operator")
    key = {"Idempotency-Key": "crm-42"}
    first = client.post("/api/v1/enrollments", enroll_body(world), headers=key)
    second = client.post("/api/v1/enrollments", enroll_body(world), headers=key)
    assert (first.status_code, second.status_code) == (201, 201), second.text
    assert second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert Enrollment.objects.filter(contact__email="retry@example.com").count() == 1

    # Without the key a retry acts again, and the domain refuses it: the key is what makes a retry safe.
    again = client.post("/api/v1/enrollments", enroll_body(world))
    assert again.status_code == 409 and "already enrolled" in again.json()["detail"]


def test_the_same_key_with_another_body_is_a_422_and_acts_nothing(api, world):
    client = api("operator")
    key = {"Idempotency-Key": "crm-43"}
    assert client.post("/api/v1/enrollments", enroll_body(world), headers=key).status_code == 201
    other = client.post("/api/v1/enrollments", enroll_body(world, email="other@example.com"), headers=key)
    assert other.status_code == 422 and "different request" in other.json()["detail"]
    assert not Enrollment.objects.filter(contact__email="other@example.com").exists()


def test_a_stop_retried_with_its_key_is_logged_once(api, world):
    client = api("operator")
    url = f"/api/v1/enrollments/{world['active'].pk}/stop"
    answers = [client.post(url, {"reason": "operator"}, headers={"Idempotency-Key": "stop-1"}) for _ in range(3)]
    assert {a.status_code for a in answers} == {200} and len({a.text for a in answers}) == 1
    assert answers[0].json()["result"]["canceled"] == 1
    assert OperatorAction.objects.filter(action="enrollment_stop").count() == 1


def test_keys_belong_to_their_token(api, world):
    key = {"Idempotency-Key": "shared"}
    assert api("operator").post("/api/v1/enrollments", enroll_body(world), headers=key).status_code == 201
    # Another token with the same key is another request: it acts (and the domain refuses a second enrollment).
    other = api("admin").post("/api/v1/enrollments", enroll_body(world), headers=key)
    assert other.status_code == 409
    assert IdempotencyKey.objects.filter(key="shared").count() == 2


def test_a_refused_token_does_not_use_up_the_key(api, world):
    key = {"Idempotency-Key": "before-auth"}
    assert api(None).post("/api/v1/enrollments", enroll_body(world), headers=key).status_code == 401
    assert api("operator").post("/api/v1/enrollments", enroll_body(world), headers=key).status_code == 201


def test_two_concurrent_identical_posts_enroll_once(api, world):
    client = api("operator")
    barrier = threading.Barrier(2)
    answers = []

    def post():
        barrier.wait()
        answers.append(client.post("/api/v1/enrollments", enroll_body(world, email="race@example.com"),
                                   headers={"Idempotency-Key": "race-1"}))

    threads = [threading.Thread(target=post) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert [a.status_code for a in answers] == [201, 201], [a.text for a in answers]
    assert answers[0].json() == answers[1].json()
    assert sorted(a.headers.get("Idempotent-Replayed", "") for a in answers) == ["", "true"]
    assert Enrollment.objects.filter(contact__email="race@example.com").count() == 1


def test_answers_are_kept_a_day_then_the_key_is_free_again(api, world):
    from datetime import timedelta

    from api.tasks import api_housekeeping

    client = api("operator")
    key = {"Idempotency-Key": "old"}
    assert client.post("/api/v1/contacts", {"email": "old@example.com"}, headers=key).status_code == 201
    assert api_housekeeping() == 0
    IdempotencyKey.objects.update(created_at=IdempotencyKey.objects.get().created_at - timedelta(hours=25))
    assert api_housekeeping() == 1
    again = client.post("/api/v1/contacts", {"email": "old@example.com"}, headers=key)
    assert again.status_code == 200 and "Idempotent-Replayed" not in again.headers


def test_a_key_still_in_progress_is_a_409_after_the_wait_and_a_dead_one_is_taken_over(api, world, monkeypatch):
    from datetime import timedelta

    from api import idempotency

    monkeypatch.setattr(idempotency, "WAIT", 0.3)
    client = api("operator")
    key = {"Idempotency-Key": "slow-1"}
    assert client.post("/api/v1/enrollments", enroll_body(world), headers=key).status_code == 201
    IdempotencyKey.objects.update(status_code=idempotency.IN_PROGRESS)  # as if that request were still running
    busy = client.post("/api/v1/enrollments", enroll_body(world), headers=key)
    assert busy.status_code == 409 and "still running" in busy.json()["detail"]
    other = client.post("/api/v1/enrollments", enroll_body(world, email="x@example.com"), headers=key)
    assert other.status_code == 422, "another request with the key is refused at once, running or not"

    # Its process died: after ABANDONED the key is claimed again and the request runs (the domain refuses it).
    IdempotencyKey.objects.update(created_at=IdempotencyKey.objects.get().created_at - idempotency.ABANDONED
                                  - timedelta(seconds=1))
    again = client.post("/api/v1/enrollments", enroll_body(world), headers=key)
    assert again.status_code == 409 and "already enrolled" in again.json()["detail"]
    assert IdempotencyKey.objects.get().status_code == 409


def test_a_request_that_raises_frees_its_key(api, world):
    from django.test import RequestFactory

    from api import idempotency

    def broken(request):
        raise RuntimeError("boom")

    request = RequestFactory().post("/api/v1/x", data=b"{}", content_type="application/json",
                                    headers={"Authorization": f"Bearer {api('operator').token}",
                                             "Idempotency-Key": "boom-1"})
    with pytest.raises(RuntimeError):
        idempotency.idempotent(broken)(request)
    assert not IdempotencyKey.objects.filter(key="boom-1").exists(), "no answer kept: a retry runs it again"


@pytest.mark.postgresql("PgBouncer pools PostgreSQL connections")
@pytest.mark.skipif(PGBOUNCER is None, reason="pgbouncer is not installed (scripts/setup --test installs it)")
@pytest.mark.usefixtures("pooled")
def test_two_concurrent_identical_posts_enroll_once_through_a_transaction_mode_pooler(api, world):
    """No lock outlives a transaction, so a pooler that lends each transaction another server connection keeps
    the key claimed and answered as PostgreSQL alone does."""
    test_two_concurrent_identical_posts_enroll_once(api, world)
    assert IdempotencyKey.objects.get(key="race-1").status_code == 201
