"""Bad input is never a 5xx: every operator page and its forms, every API operation and the ESP webhooks, driven
with NUL, lone surrogates, huge and negative numbers, 1 MB values, nested arrays and bodies of the wrong type
(issue 34, item 7); on SQLite's pass, only the values SQLite refuses its own way (tests/security/sweep.py). The routes
come from the URL resolver and the API's OpenAPI schema, the form fields from the pages themselves; a new route or
field is swept without a change here. docs/security.md lists what this found.

Each test sends everything and then lists every 5xx with its exception, so one run names them all.
"""

from __future__ import annotations

import base64
import inspect
import itertools
import json
import re
import sys
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.template import PartialTemplate, Template
from django.test import Client
from django.test.utils import _TestState
from django.urls import URLPattern, URLResolver, get_resolver

from api.main import api
from api.tokens import api_token_create
from inbound.models import Conversation, InboundMessage, ReplyMatch
from inbound.replies.services import conversation_record_in_transaction
from inbound.webhook_events import tracking_patterns
from meetings.models import BookingSource
from sequences.models import SendJob, StepVariant
from sequences.services.stops import enrollment_pause
from sequences.services.suppressions import suppression_add
from sequences.webhooks_out.models import WebhookEndpoint
from tests.api.conftest import api_roles  # noqa: F401 - the admins' webhook permission
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.security.sweep import (
    BAD_BODIES,
    FORM_VALUES,
    JSON_VALUES,
    NOT_READ,
    WORD_CHOICE_VALUES,
    Form,
    Found,
    bad_bodies,
    form_body,
    forms_of,
    full_sweep,
    hostile,
    names_read,
    query,
)

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.filterwarnings("ignore::anymail.exceptions.AnymailNotSupportedWarning")]

# Where the operator UI's routes live; the admin, the API, the webhooks and the public pages are swept apart.
NOT_UI = ("admin/", "api/", "webhooks/", "u/", "healthz", "metrics")
HUGE_ID = str(10**30)
PROJECT = ("sequences.", "inbound.", "mailboxes.", "outreach.")
FORM = "application/x-www-form-urlencoded"
FORMSET_ROW = re.compile(r"-[1-9][0-9]*-")
# A formset's form count past its most forms: 10**30 and 987654 both build the same most forms (Django's
# absolute_max, a thousand or more on a page of inline rows: seconds a request), so only the first is sent.
FORM_COUNT = re.compile(r"-TOTAL_FORMS$")
PAST_MOST_FORMS = {"no such row"}
# The bodies a form parser could trip on (the rest of BAD_BODIES are JSON or text, which no page reads).
FORM_BODIES = [b for b in BAD_BODIES if b[1].startswith(("multipart/", FORM))]


def _patterns(resolver: URLResolver, prefix: str = ""):
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            yield from _patterns(p, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p


def ui_routes() -> list[tuple[str, URLPattern]]:
    return [(route, p) for route, p in _patterns(get_resolver()) if not route.startswith(NOT_UI)]


@pytest.fixture
def world(api_roles, users):  # noqa: F811 - the fixture imported above
    """One of each row a UI route names, built through the services, and an admin's browser."""
    mailbox = MailboxFactory(name="sweep-box")
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Sweep sequence")
    active, paused = enroll(sequence, "active@example.com"), enroll(sequence, "paused@example.com")
    enrollment_pause(enrollment_id=paused.pk, actor="fixture")
    suppression_add(value="blocked@example.com", reason="manual", note="fixture", actor="fixture")
    job = SendJob.objects.filter(enrollment=active).first()
    world = {"mailbox": mailbox, "sequence": sequence, "active": active, "paused": paused, "job": job}
    step = sequence.steps.get(position=2)
    variant = StepVariant.objects.create(step=step, name="A", body="Hello")
    with transaction.atomic():
        world["inbound"] = InboundMessage.objects.create(
            mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=1, message_id="<r1@example.com>",
            from_address="colleague@example.com", subject="Re: Hello", kind="human_reply", reply_text="Ask Ann",
            job=job, enrollment=active, correlation_rule="in_reply_to")
        reply = InboundMessage.objects.create(
            mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=2, message_id="<r2@example.com>",
            from_address="active@example.com", subject="Re: Hello", kind="human_reply", reply_text="Tell me more",
            job=job, enrollment=active, correlation_rule="in_reply_to")
        conversation = Conversation.objects.get(pk=conversation_record_in_transaction(row=reply))
    match = ReplyMatch.objects.create(inbound=world["inbound"], job=job, enrollment=paused,
                                      replier="colleague@example.com", status=ReplyMatch.Status.PROBABLE)
    endpoint = WebhookEndpoint.objects.create(url="https://crm.example/hooks", secret_env="OUTREACH_SECRET_CRM",
                                              event_types=["contact.replied"])
    booking = BookingSource.objects.create(name="Sweep Calendly", provider="calendly", slug="sweep-source",
                                           secret_sealed="not-a-token")
    admin = Client(raise_request_exception=False)
    admin.force_login(users["admin"])
    upload = admin.post(f"/sequences/{sequence.pk}/enroll/", {"file": _csv("email,first_name\nann@example.com,Ann\n")})
    token = upload["Location"].rstrip("/").rsplit("/", 1)[-1]
    # The route's literal start names the row its <int:pk> is (the longest prefix that matches).
    pks = {"outbound-webhooks/": endpoint.pk, "booking-webhooks/": booking.pk,
           "sequences/": sequence.pk, "steps/": step.pk, "variants/": variant.pk,
           "enrollments/": active.pk, "jobs/": job.pk, "incidents/jobs/": job.pk,
           "contacts/": active.contact_id, "mailboxes/": mailbox.pk, "inbound/probable/": match.pk,
           "inbound/": world["inbound"].pk, "replies/": conversation.pk}
    return world | {"admin": admin, "pks": pks, "slugs": {"token": token, "job_id": "no-such-job"}}


@pytest.fixture
def production_templates(monkeypatch):
    """Templates render as they do outside tests. A test run records every template a response renders, with a copy
    of its context (for `response.context`, which no sweep reads): on the admin's long forms, a widget template per
    field, a third of each page's time."""
    monkeypatch.setattr(Template, "_render", _TestState.saved_data.template_render)
    monkeypatch.setattr(PartialTemplate, "_render", _TestState.saved_data.partial_template_render)


def _csv(text: str):
    return SimpleUploadedFile("people.csv", text.encode(), content_type="text/csv")


def concrete(route: str, world: dict, *, pk: str | None = None) -> str:
    """The route with the world's rows (or `pk` in every <int:…>)."""
    literal = route.split("<", 1)[0]
    owner = max((p for p in world["pks"] if literal.startswith(p)), key=len, default=None)

    def fill(m: re.Match) -> str:
        converter, name = m.group(1), m.group(2)
        if converter in ("int", "id"):
            assert owner is not None, f"{route}: which row is its {name}? add its prefix to the world's pks"
            return pk if pk is not None else str(world["pks"][owner])
        return world["slugs"][name]

    return "/" + re.sub(r"<(\w+):(\w+)>", fill, route)


def _send(client: Client, found: Found, method: str, url: str, what: str, body: bytes = b"",
          content_type: str = FORM, **extra):
    if method == "get":
        response = client.get(url, **extra)
    else:
        response = client.generic(method.upper(), url, body, content_type=content_type, **extra)
    found.check(response, f"{method.upper()} {url[:120]} {what}")
    return response


def _form_requests(form: Form):
    """(method, URL, what, body) for the form with each field in turn given each hostile value."""
    values = hostile(FORM_VALUES)
    for name, (label, value) in itertools.product(sorted(set(form.fields) - NOT_READ), values.items()):
        if FORMSET_ROW.search(name):  # a formset's later rows are its first row again
            continue
        if FORM_COUNT.search(name) and (label in PAST_MOST_FORMS or not full_sweep()):
            continue
        if label not in WORD_CHOICE_VALUES and name in form.choices and not any(
                c.isdigit() for c in form.choices[name]):
            continue
        data = {**form.fields, name: value}
        if form.method == "get":
            yield "get", form.action.split("?")[0] + "?" + "&".join(query(k, v if isinstance(v, bytes) else v.encode())
                                                                     for k, v in data.items()), f"{name}={label}", b""
        else:
            yield "post", form.action, f"{name}={label}", form_body(data)


def view_reads(view) -> set[tuple[str, str]]:
    """(method, name) of the parameters a view reads by name, itself or through the project's functions it calls
    (its module's helpers, `page_of`)."""
    source = inspect.getsource(view)
    called = [f for name, f in vars(sys.modules[view.__module__]).items()
              if inspect.isfunction(f) and f.__module__.startswith(PROJECT) and re.search(rf"\b{name}\(", source)]
    return names_read(source).union(*(names_read(inspect.getsource(f)) for f in called))


def _destructive(url: str) -> bool:
    return bool(re.search(r"delete|stop|dismiss|suppress|erase", url))


def test_every_operator_page_and_form_answers_bad_input_without_a_5xx(world, production_templates):
    """Each route's page, the forms it shows, each parameter its view reads by name, a row id past every column
    and bodies a form parser trips on. The GETs first, then the POSTs, those that delete or stop last."""
    client, found = world["admin"], Found(logged_in=True)
    routes = [(route, p) for route, p in ui_routes() if p.name != "logout"]  # the login test has it
    assert len(routes) > 60, "the resolver lists the operator UI"
    forms: dict[tuple, Form] = {}
    posts: list[tuple[str, str, bytes, str]] = []  # (URL, what, body, content type)
    read_by_post: dict[str, set[str]] = {}  # URL -> the names its view reads from a POST
    for route, pattern in routes:
        url = concrete(route, world)
        page = _send(client, found, "get", url, "the page")
        if page.status_code == 200 and page["Content-Type"].startswith("text/html"):
            for form in forms_of(page.content.decode(), url):
                forms.setdefault(form.key(), form)
        reads = view_reads(inspect.unwrap(pattern.callback))
        for name, (label, value) in itertools.product(sorted(n for m, n in reads if m == "get"),
                                                      hostile(FORM_VALUES).items()):
            _send(client, found, "get", f"{url}?{query(name, value)}", f"?{name}={label}")
        if re.search("<(int|id):", route):
            _send(client, found, "get", concrete(route, world, pk=HUGE_ID), "a row id past every column")
            posts.append((concrete(route, world, pk=HUGE_ID), "a row id past every column", b"", FORM))
        read_by_post[url] = {n for m, n in reads if m == "post"}
        posts += [(url, label, body, content_type) for label, content_type, body in bad_bodies(FORM_BODIES)]
    assert len(forms) > 30, sorted(f.action for f in forms.values())
    for form in forms.values():
        if form.action == "/logout/":
            continue
        for method, url, what, body in _form_requests(form):
            if method == "get":
                _send(client, found, "get", url, what)
            else:
                posts.append((url, what, body, FORM))
        read_by_post.get(form.action, set()).difference_update(form.fields)
    # What a view reads from a POST that no form on the pages sends: on its own.
    for url, names in read_by_post.items():
        for name, (label, value) in itertools.product(sorted(names), hostile(FORM_VALUES).items()):
            posts.append((url, f"{name}={label}", form_body({name: value}), FORM))
    for url, what, body, content_type in sorted(posts, key=lambda p: _destructive(p[0])):
        _send(client, found, "post", url, what, body, content_type=content_type)
    assert not found.rows, found.report()


def test_the_login_page_answers_bad_input_without_a_5xx(world):
    client, found = Client(raise_request_exception=False), Found()
    (login,) = [f for f in forms_of(client.get("/login/").content.decode(), "/login/") if f.method == "post"]
    for method, url, what, body in _form_requests(login):
        _send(client, found, method, url, what, body)
    for label, content_type, body in bad_bodies(BAD_BODIES):
        _send(client, found, "post", "/logout/", label, body, content_type=content_type)
    assert not found.rows, found.report()



# --- the API -------------------------------------------------------------------------------------------------


def _example(schema: dict, components: dict, world: dict):
    """A value of the schema's type, good enough to reach the checks behind the one hostile value."""
    if "$ref" in schema:
        return _example(components[schema["$ref"].rsplit("/", 1)[-1]], components, world)
    if "anyOf" in schema:
        return _example(schema["anyOf"][0], components, world)
    kind = schema.get("type")
    if kind == "object":
        return {k: _example(v, components, world) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_example(schema.get("items", {}), components, world)]
    if kind == "integer":
        return world["sequence"].pk
    if kind == "boolean":
        return False
    if "enum" in schema:
        return schema["enum"][0]
    return "ann@example.com"


def _hostile_bodies(body: dict, properties: dict, components: dict):
    """The body with one property at a time hostile; inside a list of objects, its first item's property."""
    for name, (label, value) in itertools.product(sorted(properties), hostile(JSON_VALUES).items()):
        yield f"{name}={label}", body | {name: value}
        schema = properties[name]
        items = schema.get("items", {})
        if schema.get("type") == "array" and "$ref" in items:
            inner = components[items["$ref"].rsplit("/", 1)[-1]].get("properties", {})
            for key in sorted(inner):
                yield f"{name}[0].{key}={label}", body | {name: [body[name][0] | {key: value}]}
        yield f"{name}=nested arrays", body | {name: json.loads("[" * 500 + "]" * 500)}


def test_every_api_operation_answers_bad_input_without_a_5xx(world, users):
    _, token = api_token_create(name="sweep", role="admin", rate_per_minute=10**6)
    schema = api.get_openapi_schema(path_prefix="/api")
    components = schema["components"]["schemas"]
    client, found = Client(raise_request_exception=False, headers={"Authorization": f"Bearer {token}"}), Found()
    operations = [(path, method, op) for path, ops in schema["paths"].items() for method, op in ops.items()]
    assert len(operations) >= 25

    def send(method: str, path: str, what: str, body: bytes = b"", content_type: str = "application/json"):
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        _send(client, found, method, path, what, body, content_type=content_type, headers=headers)

    for path, method, op in operations:
        params = op.get("parameters", [])
        good_path = {p["name"]: str(_example(p["schema"], components, world)) for p in params if p["in"] == "path"}
        good = path.format(**good_path)
        for p in params:
            for label, value in hostile(FORM_VALUES).items():
                if p["in"] == "path":
                    bad = path.format(**good_path | {p["name"]: re.sub(r"%2F", "/", query("x", value)[2:])})
                    send(method, bad, f"{p['name']}={label}")
                else:
                    send(method, f"{good}?{query(p['name'], value)}", f"?{p['name']}={label}")
        if method != "post":
            continue
        content = op.get("requestBody", {}).get("content", {}).get("application/json")
        if content is not None:
            body_schema = content["schema"]
            body = _example(body_schema, components, world)
            ref = body_schema.get("$ref") or body_schema.get("anyOf", [{}])[0].get("$ref")
            properties = components[ref.rsplit("/", 1)[-1]].get("properties", {})
            for what, bad_body in _hostile_bodies(body, properties, components):
                send(method, good, what, json.dumps(bad_body).encode())
            send(method, good, "a surrogate in a key", json.dumps(body | {"\ud800": 1}).encode())
        for label, content_type, raw in bad_bodies(BAD_BODIES):
            send(method, good, label, raw, content_type)
    # Beside the operations: the API's own pages and a path under /api that names nothing.
    for path in ("/api/openapi.json", "/api/docs", "/api/v1/nothing%00here", f"/api/v1/sequences/{HUGE_ID}"):
        send("get", path, "the page")
    assert not found.rows, found.report()


# --- the ESP webhooks and the public pages -------------------------------------------------------------------


def test_the_webhooks_and_public_pages_answer_bad_input_without_a_5xx(world, settings):
    settings.ANYMAIL = settings.ANYMAIL | {"WEBHOOK_SECRET": "outreach-hooks:sweep-secret"}
    auth = "Basic " + base64.b64encode(b"outreach-hooks:sweep-secret").decode()
    client, found = Client(raise_request_exception=False), Found()
    urls = ["/webhooks/anymail/" + str(p.pattern) for p in tracking_patterns(settings.OUTREACH_WEBHOOK_ESPS)]
    assert urls, "the tracking webhooks are mounted"
    events = [{"event": "bounce", "email": "active@example.com", "timestamp": 1, "sg_event_id": "e1"}]
    for url in urls:
        for label, content_type, body in bad_bodies(BAD_BODIES):
            _send(client, found, "post", url, label, body, content_type=content_type, HTTP_AUTHORIZATION=auth)
        for key, (label, value) in itertools.product(sorted(events[0]), hostile(JSON_VALUES).items()):
            for batch in ([events[0] | {key: value}], events[0] | {key: value}):
                _send(client, found, "post", url, f"{key}={label}", json.dumps(batch).encode(),
                      content_type="application/json", HTTP_AUTHORIZATION=auth)
        for label, value in hostile(FORM_VALUES).items():
            header = "Basic " + base64.b64encode(b"outreach-hooks:" + value).decode()
            _send(client, found, "post", url, f"a password {label}", b"[]", content_type="application/json",
                  HTTP_AUTHORIZATION=header, REMOTE_ADDR="198.51.100.1")
            _send(client, found, "post", url, f"an Authorization header {label}", b"[]",
                  content_type="application/json", HTTP_AUTHORIZATION=value.decode("latin-1"))
    for label, value in hostile(FORM_VALUES).items():
        token = query("t", value)[2:]
        _send(client, found, "get", f"/u/{token}/", f"an unsubscribe token {label}")
        _send(client, found, "post", f"/u/{token}/", f"an unsubscribe token {label}",
              form_body({"List-Unsubscribe": value}))
    assert not found.rows, found.report()
