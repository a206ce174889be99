"""Permission matrix: every URL x {anonymous, staff, operator, admin} x {GET, POST}, from one table.

Anonymous users are sent to a login page; a role without the permission gets
the 403 page (never a silent no-op); a method a page does not offer is 405.
POSTs carry no form data: a permitted action runs (302 to its result page),
a permitted form re-renders with its errors (400).
"""

from __future__ import annotations

import itertools

import pytest
from django.test import Client
from django.urls import get_resolver, reverse

from sequences.models import Enrollment, Sequence
from ui import urls as ui_urls

pytestmark = pytest.mark.one_database("who may open which page")


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker):
    """The users and the world, built once for the module's 584 requests: in a transaction that each test's own
    (a savepoint of it) sits in, so whatever a request changes is undone after it, and the whole is rolled back
    when the module ends."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from tests.ui.conftest import roles_ensure, users_make, world_make

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer._from_testcase = True  # a durable block in a view is allowed inside it, as inside a test's own
        outer.__enter__()
        try:
            roles_ensure()
            yield users_make(get_user_model()), world_make()
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def users(shared, db):
    return shared[0]


@pytest.fixture
def world(shared, db):
    return shared[1]

A, ST, OP, AD = "anonymous", "staff", "operator", "admin"
ROLES = (A, ST, OP, AD)
LOGIN = "login"  # 302 to /login/?next=...
ADMIN_LOGIN = "admin-login"  # 302 to /admin/login/?next=...

READ = {A: (LOGIN, LOGIN), ST: (200, 405), OP: (200, 405), AD: (200, 405)}
OPERATE = {A: (LOGIN, LOGIN), ST: (403, 403), OP: (200, 302), AD: (200, 302)}
OPERATE_POST = {A: (LOGIN, LOGIN), ST: (403, 403), OP: (405, 302), AD: (405, 302)}  # no page: a button
OPERATE_FORM = {A: (LOGIN, LOGIN), ST: (403, 403), OP: (200, 400), AD: (200, 400)}  # an empty form: 400
OPERATE_BACK = {A: (LOGIN, LOGIN), ST: (403, 403), OP: (302, 302), AD: (302, 302)}  # nothing selected: back
OPERATE_MISSING = {A: (LOGIN, LOGIN), ST: (403, 403), OP: (404, 405), AD: (404, 405)}
ADMIN_FORM = {A: (LOGIN, LOGIN), ST: (403, 403), OP: (403, 403), AD: (200, 400)}
READ_OPERATE_FORM = {A: (LOGIN, LOGIN), ST: (200, 403), OP: (200, 400), AD: (200, 400)}  # staff look only
ADMIN_READ = {A: (LOGIN, LOGIN), ST: (403, 403), OP: (403, 403), AD: (200, 405)}
DJANGO_ADMIN = {A: (ADMIN_LOGIN, ADMIN_LOGIN), ST: (ADMIN_LOGIN, ADMIN_LOGIN), OP: (ADMIN_LOGIN, ADMIN_LOGIN),
                AD: (200, 200)}



def _step(world) -> int:
    return world["sequence"].steps.order_by("position").values_list("pk", flat=True)[0]


def _variant(world) -> int:
    """An A/B variant of the world's step 2 (made when first asked for)."""
    from sequences.models import StepVariant

    step = world["sequence"].steps.get(position=2)
    return StepVariant.objects.get_or_create(step=step, name="A", defaults={"body": "Hello"})[0].pk


# (url name, how to build the URL from the world, expected (GET, POST) status per role)
TABLE = [
    ("login", lambda w: reverse("login"), {A: (200, 200), ST: (302, 302), OP: (302, 302), AD: (302, 302)}),
    ("logout", lambda w: reverse("logout"), {A: (405, 302), ST: (405, 302), OP: (405, 302), AD: (405, 302)}),
    ("dashboard", lambda w: reverse("dashboard"), READ),
    # Every role may switch workspace (to one it is a member of; an empty choice is refused in words, back: 302).
    ("workspace_switch", lambda w: reverse("workspace_switch"),
     {A: (LOGIN, LOGIN), ST: (405, 302), OP: (405, 302), AD: (405, 302)}),
    ("sequence_list", lambda w: reverse("sequence_list"), READ),
    ("sequence_detail", lambda w: reverse("sequence_detail", args=[w["sequence"].pk]), READ),
    ("sequence_pause", lambda w: reverse("sequence_pause", args=[w["sequence"].pk]), OPERATE),
    ("sequence_resume", lambda w: reverse("sequence_resume", args=[w["sequence"].pk]), OPERATE),
    ("sequence_new", lambda w: reverse("sequence_new"), OPERATE_FORM),
    # The world's sequence is active: the launch is refused in words (400).
    ("sequence_launch", lambda w: reverse("sequence_launch", args=[w["sequence"].pk]), OPERATE_FORM),
    ("variant_new", lambda w: reverse("variant_new", args=[_step(w)]), OPERATE_FORM),
    ("variant_edit", lambda w: reverse("variant_edit", args=[_variant(w)]), OPERATE_FORM),
    ("variant_stop", lambda w: reverse("variant_stop", args=[_variant(w)]), OPERATE),
    ("sequence_edit", lambda w: reverse("sequence_edit", args=[w["sequence"].pk]), OPERATE_FORM),
    ("sequence_export", lambda w: reverse("sequence_export", args=[w["sequence"].pk]), READ),
    ("reply_rules_edit", lambda w: reverse("reply_rules_edit", args=[w["sequence"].pk]), READ_OPERATE_FORM),
    ("reply_rule_delete", lambda w: reverse("reply_rule_delete", args=[w["sequence"].pk, 1]), OPERATE_POST),
    # An empty admin POST is a valid choice (no recipient, every sequence off): 302.
    ("report_weekly", lambda w: reverse("report_weekly"), {A: (LOGIN, LOGIN), ST: (200, 403), OP: (200, 403),
                                                           AD: (200, 302)}),
    ("sequence_send_ledger", lambda w: reverse("sequence_send_ledger", args=[w["sequence"].pk]), READ),
    ("step_new", lambda w: reverse("step_new", args=[w["sequence"].pk]), OPERATE_FORM),
    ("step_edit", lambda w: reverse("step_edit", args=[_step(w)]), OPERATE_FORM),
    ("step_delete", lambda w: reverse("step_delete", args=[_step(w)]), OPERATE_POST),
    ("step_move", lambda w: reverse("step_move", args=[_step(w)]), OPERATE_POST),
    ("step_preview", lambda w: reverse("step_preview", args=[_step(w)]), READ),
    ("step_send_test", lambda w: reverse("step_send_test", args=[_step(w)]), OPERATE_POST),
    ("enrollment_detail", lambda w: reverse("enrollment_detail", args=[w["active"].pk]), READ),
    ("enrollment_send_ledger", lambda w: reverse("enrollment_send_ledger", args=[w["active"].pk]), READ),
    ("enrollment_pause", lambda w: reverse("enrollment_pause", args=[w["active"].pk]), OPERATE),
    ("enrollment_resume", lambda w: reverse("enrollment_resume", args=[w["paused"].pk]), OPERATE),
    ("enrollment_stop", lambda w: reverse("enrollment_stop", args=[w["active"].pk]), OPERATE),
    ("mailbox_list", lambda w: reverse("mailbox_list"), READ),
    ("mailbox_pause", lambda w: reverse("mailbox_pause", args=[w["mailbox"].pk]), OPERATE),
    ("mailbox_resume", lambda w: reverse("mailbox_resume", args=[w["mailbox"].pk]), OPERATE),
    ("mailbox_check", lambda w: reverse("mailbox_check", args=[w["mailbox"].pk]), OPERATE_POST),
    ("mailbox_add", lambda w: reverse("mailbox_add"), OPERATE_FORM),
    ("mailbox_edit", lambda w: reverse("mailbox_edit", args=[w["mailbox"].pk]), OPERATE_FORM),
    # Not configured for a sign-in: back to the list with why; a callback without a started sign-in: 400.
    ("mailbox_oauth_start", lambda w: reverse("mailbox_oauth_start", args=[w["mailbox"].pk]),
     {A: (LOGIN, LOGIN), ST: (403, 403), OP: (302, 405), AD: (302, 405)}),
    ("mailbox_oauth_callback", lambda w: reverse("mailbox_oauth_callback"),
     {A: (LOGIN, LOGIN), ST: (403, 403), OP: (400, 405), AD: (400, 405)}),
    ("job_retry", lambda w: reverse("job_retry", args=[w["job"].pk]), OPERATE_POST),
    ("contact_edit", lambda w: reverse("contact_edit", args=[w["active"].contact_id]), OPERATE_FORM),
    ("contact_add", lambda w: reverse("contact_add"), OPERATE_FORM),
    ("contact_enroll", lambda w: reverse("contact_enroll", args=[w["active"].contact_id]), OPERATE_POST),
    ("contact_suppress", lambda w: reverse("contact_suppress", args=[w["active"].contact_id]),
     {A: (LOGIN, LOGIN), ST: (403, 403), OP: (403, 403), AD: (405, 302)}),
    ("sequence_people", lambda w: reverse("sequence_people", args=[w["sequence"].pk]) + "?show=failed", READ),
    ("incident_search", lambda w: reverse("incident_search") + "?q=active@example.com", READ),
    ("incident_job", lambda w: reverse("incident_job", args=[w["job"].pk]), READ),
    ("inbound_list", lambda w: reverse("inbound_list"), READ),
    ("inbound_detail", lambda w: reverse("inbound_detail", args=[w["inbound"].pk]), READ),
    ("inbound_probable", lambda w: reverse("inbound_probable"), READ),
    # No probable reply in the world: a permitted click is refused in words, back to the list (302).
    ("inbound_probable_stop", lambda w: reverse("inbound_probable_stop", args=[1]), OPERATE_POST),
    ("inbound_probable_dismiss", lambda w: reverse("inbound_probable_dismiss", args=[1]), OPERATE_POST),
    ("suppression_list", lambda w: reverse("suppression_list"), READ),
    ("suppression_history", lambda w: reverse("suppression_history") + "?value=blocked@example.com", READ),
    ("suppression_add", lambda w: reverse("suppression_add"), ADMIN_FORM),
    ("suppression_lift", lambda w: reverse("suppression_lift") + "?value=blocked@example.com", ADMIN_FORM),
    ("suppression_import", lambda w: reverse("suppression_import"), ADMIN_FORM),
    ("suppression_import_status", lambda w: reverse("suppression_import_status", args=["no-such-import"]),
     {**ADMIN_READ, AD: (404, 405)}),
    ("suppression_export", lambda w: reverse("suppression_export"), ADMIN_READ),
    ("operator_log", lambda w: reverse("operator_log"), READ),
    ("reports", lambda w: reverse("reports") + "?by=step", READ),
    ("report_export_csv", lambda w: reverse("report_export_csv") + "?by=week", READ),
    ("report_export_xlsx", lambda w: reverse("report_export_xlsx"), READ),
    ("contact_list", lambda w: reverse("contact_list") + "?q=@example.com", READ),
    ("contact_detail", lambda w: reverse("contact_detail", args=[w["active"].contact_id]), READ),
    ("contact_send_ledger", lambda w: reverse("contact_send_ledger", args=[w["active"].contact_id]), READ),
    ("enrollment_bulk", lambda w: reverse("enrollment_bulk", args=[w["sequence"].pk]), OPERATE_BACK),
    ("enroll_upload", lambda w: reverse("enroll_upload", args=[w["sequence"].pk]), OPERATE_FORM),
    ("enroll_map", lambda w: reverse("enroll_map", args=[w["sequence"].pk, "nosuchupload"]), OPERATE_MISSING),
    ("enroll_run", lambda w: reverse("enroll_run", args=[w["sequence"].pk, "nosuchupload"]),
     {**OPERATE_POST, OP: (405, 404), AD: (405, 404)}),
    ("enroll_status", lambda w: reverse("enroll_status", args=[w["sequence"].pk, "no-such-job"]), OPERATE_MISSING),
    ("enroll_progress", lambda w: reverse("enroll_progress", args=[w["sequence"].pk, "no-such-job"]),
     OPERATE_MISSING),
    ("admin:index", lambda w: reverse("admin:index"), DJANGO_ADMIN),
    ("rq_home", lambda w: "/admin/rq/", DJANGO_ADMIN),
]
# Routes that do network I/O (a connection check) cannot run inside a test's transaction: their rows of the
# table are checked in tests/ui/test_mailbox_health_pages.py, in transactional tests.
NETWORK = {"mailbox_check"}
CASES = [
    pytest.param(name, build, role, method, expected[role][i], id=f"{name}-{role}-{method}")
    for (name, build, expected), role, (i, method) in itertools.product(TABLE, ROLES, enumerate(("GET", "POST")))
    if name not in NETWORK
]


def test_the_table_covers_every_ui_route():
    # The outbound webhook pages (admins only) have a table of their own: tests/api/test_webhook_pages.py; the
    # booking webhook pages (admins only) theirs: tests/meetings/test_pages.py.
    names = {p.name for p in ui_urls.urlpatterns
             if not str(p.pattern).startswith(("outbound-webhooks/", "booking-webhooks/"))}
    assert names == {name for name, _, _ in TABLE} - {"admin:index", "rq_home"}
    assert len(CASES) == (len(TABLE) - len(NETWORK)) * 4 * 2 == 368 + 32 + 24 + 32 + 8 + 24 + 8 + 24 + 24 + 24 + 8


def test_every_ui_view_checks_a_permission():
    for pattern in ui_urls.urlpatterns:
        if pattern.name in ("login", "logout"):
            continue
        assert getattr(pattern.callback, "required_perm", ""), f"{pattern.name} has no permission check"


def test_rq_dashboard_is_mounted_under_admin():
    assert get_resolver().resolve("/admin/rq/").url_name == "home"


@pytest.mark.parametrize(("name", "build", "role", "method", "expected"), CASES)
def test_permission_matrix(client: Client, users, world, name, build, role, method, expected):
    if role != A:
        client.force_login(users[role])
    url = build(world)
    response = client.get(url) if method == "GET" else client.post(url)
    if expected in (LOGIN, ADMIN_LOGIN):
        assert response.status_code == 302, response.content[:300]
        prefix = "/login/?next=" if expected == LOGIN else "/admin/login/?next="
        assert response["Location"].startswith(prefix), response["Location"]
        return
    assert response.status_code == expected, (response.status_code, response.content[:500])
    if expected == 403:
        assert b"403 \xe2\x80\x94 not allowed" in response.content  # the clear page, not a bare status
    if expected == 405:
        assert response.has_header("Allow")


@pytest.mark.django_db
def test_forms_are_csrf_protected(users, world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users[OP])
    url = reverse("sequence_pause", args=[world["sequence"].pk])
    assert client.post(url).status_code == 403
    assert Sequence.objects.get(pk=world["sequence"].pk).status == Sequence.Status.ACTIVE
    page = client.get(url)
    token = page.content.decode().split('name="csrfmiddlewaretoken" value="', 2)[2].split('"', 1)[0]
    assert client.post(url, {"csrfmiddlewaretoken": token}).status_code == 302
    assert Sequence.objects.get(pk=world["sequence"].pk).status == Sequence.Status.PAUSED


@pytest.mark.django_db
def test_a_refused_action_says_why(client, users, world):
    """Resuming a suppressed address is refused by the service: a 409 page naming the reason, nothing changes."""
    from sequences.services.suppressions import suppression_add

    suppression_add(value="paused@example.com", reason="complaint", actor="t")
    client.force_login(users[OP])
    response = client.post(reverse("enrollment_resume", args=[world["paused"].pk]))
    assert response.status_code == 409
    assert b"is suppressed" in response.content
    assert Enrollment.objects.get(pk=world["paused"].pk).status == Enrollment.Status.STOPPED
