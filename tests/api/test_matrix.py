"""Every API endpoint x {no token, bad token, staff, operator, admin}, from one table.

A role has through the API exactly the permissions its UI group has
(tests/ui/test_permissions.py): staff read, operators also pause, resume,
stop and enroll, admins also manage the suppression ledger. No token or a
bad one is 401, a role without the permission 403, both in JSON.
"""

from __future__ import annotations

import itertools
import json

import pytest
from django.test import Client
from django.urls import URLPattern, get_resolver

from api.main import api as ninja_api

pytestmark = [pytest.mark.one_database("which token may call which operation"), pytest.mark.django_db]

NONE, BAD, ST, OP, AD = "no token", "bad token", "staff", "operator", "admin"
ROLES = (NONE, BAD, ST, OP, AD)


def read(ok: int = 200) -> dict:
    return {NONE: 401, BAD: 401, ST: ok, OP: ok, AD: ok}


def operate(ok: int = 200) -> dict:
    return {NONE: 401, BAD: 401, ST: 403, OP: ok, AD: ok}


def manage(ok: int = 201) -> dict:
    return {NONE: 401, BAD: 401, ST: 403, OP: 403, AD: ok}


def new_contact(w: dict) -> dict:
    return {"email": "fresh@example.com", "first_name": "Fresh"}


# (operation name, method, path from the world, body from the world, expected status per role)
TABLE = [
    ("contact_upsert", "POST", lambda w: "/api/v1/contacts", new_contact, operate(201)),
    ("contact_search", "GET", lambda w: "/api/v1/contacts?q=active", None, read()),
    ("contact_get", "GET", lambda w: "/api/v1/contacts/active@example.com", None, read()),
    ("enrollment_create", "POST", lambda w: "/api/v1/enrollments",
     lambda w: {"sequence_id": w["sequence"].pk, "email": "fresh@example.com"}, operate(201)),
    ("enrollment_list", "GET", lambda w: f"/api/v1/enrollments?sequence_id={w['sequence'].pk}&status=active", None,
     read()),
    ("enrollment_bulk", "POST", lambda w: "/api/v1/enrollments/bulk",
     lambda w: {"sequence_id": w["sequence"].pk, "contacts": [{"email": "bulk@example.com"}]}, operate(202)),
    ("enrollment_bulk_status", "GET", lambda w: f"/api/v1/enrollments/bulk/{w['bulk'].pk}", None, read()),
    ("enrollment_get", "GET", lambda w: f"/api/v1/enrollments/{w['active'].pk}", None, read()),
    ("enrollment_pause", "POST", lambda w: f"/api/v1/enrollments/{w['active'].pk}/pause", None, operate()),
    ("enrollment_resume", "POST", lambda w: f"/api/v1/enrollments/{w['paused'].pk}/resume", None, operate()),
    ("enrollment_stop", "POST", lambda w: f"/api/v1/enrollments/{w['active'].pk}/stop", None, operate()),
    ("sequence_list", "GET", lambda w: "/api/v1/sequences", None, read()),
    ("sequence_get", "GET", lambda w: f"/api/v1/sequences/{w['sequence'].pk}", None, read()),
    ("sequence_pause", "POST", lambda w: f"/api/v1/sequences/{w['sequence'].pk}/pause", None, operate()),
    ("sequence_resume", "POST", lambda w: f"/api/v1/sequences/{w['sequence'].pk}/resume", None, operate()),
    # The world's sequence is active: a permitted launch is refused in words (409).
    ("sequence_launch", "POST", lambda w: f"/api/v1/sequences/{w['sequence'].pk}/launch", None, operate(409)),
    ("suppression_add", "POST", lambda w: "/api/v1/suppressions",
     lambda w: {"value": "gone@example.com", "reason": "manual", "note": "asked by phone"}, manage()),
    ("suppression_lift", "POST", lambda w: "/api/v1/suppressions/lift",
     lambda w: {"value": "blocked@example.com", "note": "asked to hear from us again"}, manage()),
    ("suppression_check", "GET", lambda w: "/api/v1/suppressions/check?address=blocked@example.com", None, read()),
    ("suppression_list", "GET", lambda w: "/api/v1/suppressions?page=1&per_page=10", None, read()),
    ("timeline", "GET", lambda w: "/api/v1/timeline/active@example.com", None, read()),
    # The replies inbox (tests/api/test_replies_api.py acts on real conversations): the world has none, so a
    # permitted call on one is 404 after the permission check.
    ("reply_list", "GET", lambda w: "/api/v1/replies?status=all", None, read()),
    ("reply_get", "GET", lambda w: "/api/v1/replies/999999", None, read(404)),
    ("reply_categorize", "POST", lambda w: "/api/v1/replies/999999/category", lambda w: {"category": "meeting"},
     operate(404)),
    ("reply_answer", "POST", lambda w: "/api/v1/replies/999999/answer", lambda w: {"body": "Hi"}, operate(404)),
]
CASES = [
    pytest.param(name, method, path, body, role, expected[role], id=f"{name}-{role}")
    for (name, method, path, body, expected), role in itertools.product(TABLE, ROLES)
]
REFUSED = (401, 403)
# A refused call changes nothing (each is checked for it as it is made), so a role's refusals share one world; a
# permitted call may change it, so each has a world of its own.
PERMITTED = [case for case in CASES if case.values[-1] not in REFUSED]
REFUSING_ROLES = sorted({case.values[4] for case in CASES if case.values[-1] in REFUSED}, key=ROLES.index)


def operations() -> dict[str, object]:
    """Every operation of the API by its function name (the view ninja calls, inside our permission check)."""
    found = {}
    get_resolver().url_patterns  # noqa: B018 - the project's URLs mount the routers of the layers above (replies)
    for router in (r for _, r in ninja_api._routers):
        for path_view in router.path_operations.values():
            for operation in path_view.operations:
                found[operation.view_func.__name__] = operation.view_func
    return found


def test_the_table_covers_every_api_operation_and_each_checks_a_permission():
    ops = operations()
    assert set(ops) == {name for name, *_ in TABLE}
    assert all(getattr(view, "required_perm", "") for view in ops.values())
    assert len(CASES) == len(TABLE) * len(ROLES) == 125
    assert len(PERMITTED) < len(CASES) and REFUSING_ROLES == [NONE, BAD, ST, OP]
    assert all(isinstance(p, URLPattern) for p in ninja_api.urls[0])


class ClientApi:
    """Calls through Django's test client, inside the test's transaction (rolled back after it, where a live server
    needs the tables flushed after every test): the same middleware, routers and permission checks as over HTTP.
    The other API tests call the live server."""

    def __init__(self, token: str | None):
        self.client = Client(headers={"Authorization": f"Bearer {token}"} if token else {})

    def get(self, path: str):
        return self.client.get(path)

    def post(self, path: str, body=None):
        return self.client.post(path, json.dumps(body if body is not None else {}), content_type="application/json")


@pytest.fixture
def api(tokens):
    def make(role: str | None = "operator", token: str | None = None) -> ClientApi:
        return ClientApi(token if token is not None else (tokens[role] if role else None))

    return make


@pytest.fixture
def matrix_world(world, tokens):
    from api.bulk import bulk_enrollment_submit

    bulk = bulk_enrollment_submit(sequence_id=world["sequence"].pk, contacts=[{"email": "b@example.com"}],
                                  update_contacts=False, token_id=None)
    return world | {"bulk": bulk}


def _call(api, world: dict, method: str, path, body, role: str, expected: int) -> None:
    from sequences.models import Enrollment

    client = api(None, token="otk_00000000_not-a-token" if role == BAD else None) if role in (NONE, BAD) \
        else api(role)
    before = list(Enrollment.objects.order_by("id").values_list("id", "status"))
    url = path(world)
    response = client.get(url) if method == "GET" else client.post(url, body(world) if body else None)
    assert response.status_code == expected, (response.status_code, response.text[:500])
    assert response.headers["Content-Type"].startswith("application/json")
    assert "detail" in response.json() if expected >= 400 else True
    if expected in REFUSED:
        # Refused means nothing happened: no enrollment changed or appeared.
        assert list(Enrollment.objects.order_by("id").values_list("id", "status")) == before
    if expected == 403:
        assert "role" in response.json()["detail"]


@pytest.mark.parametrize(("name", "method", "path", "body", "role", "expected"), PERMITTED)
def test_api_permission_matrix(api, matrix_world, name, method, path, body, role, expected):
    _call(api, matrix_world, method, path, body, role, expected)


@pytest.mark.parametrize("role", REFUSING_ROLES)
def test_api_refusals_of_a_role(api, matrix_world, role):
    for name, method, path, body, case_role, expected in (case.values for case in CASES):
        if case_role == role and expected in REFUSED:
            try:
                _call(api, matrix_world, method, path, body, role, expected)
            except AssertionError as exc:
                raise AssertionError(f"{name} as {role}: {exc}") from exc
