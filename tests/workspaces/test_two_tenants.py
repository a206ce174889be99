"""Two workspaces of one install: a member of B, handed every URL a member of A reached by following links, and
API calls with A's ids, answers 404, 403 or a redirect, and no page or answer carries A's names or addresses.
With one manager's filter removed, the same crawl finds the leak."""

from __future__ import annotations

import re
from html import escape
from urllib.parse import parse_qs, urldefrag, urlparse

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from api.tokens import api_token_create
from inbound.models import InboundMessage
from mailboxes.models import Mailbox
from sequences.models import Enrollment, OperatorAction, SendJob, Sequence
from sequences.services.stops import enrollment_pause
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.conftest import PASSWORD, roles, users  # noqa: F401 - fixtures
from workspaces.models import Membership, Workspace
from workspaces.scoping import _ScopedManager, workspace_scope

HREF = re.compile(r'href="(/[^"]*)"')
# Never followed: they end the session, change state on GET (none should), or are static files.
SKIP = ("/logout", "/static/", "/admin/rq/", "/api/docs", "/favicon")


def tenant(name: str, prefix: str) -> dict:
    """A workspace with a mailbox, a sequence, two people (one paused) and a reply, all named after `prefix`."""
    workspace = Workspace.objects.create(name=name)
    with workspace_scope(workspace.pk):
        mailbox = MailboxFactory(name=f"{prefix}-box", address=f"sender@{prefix}-agency.test")
        sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name=f"{prefix.title()} launch")
        active = enroll(sequence, f"active@{prefix}-leads.test")
        paused = enroll(sequence, f"paused@{prefix}-leads.test")
        enrollment_pause(enrollment_id=paused.pk, actor="fixture")
        suppression_add(value=f"blocked@{prefix}-leads.test", reason="manual", note="fixture", actor="fixture")
        job = SendJob.objects.filter(enrollment=active).first()
        InboundMessage.objects.create(
            mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=1, message_id=f"<reply-1@{prefix}-leads.test>",
            from_address=f"active@{prefix}-leads.test", from_name="Active", subject=f"Re: {prefix} offer",
            kind="human_reply", reply_text="Thanks!", job=job, enrollment=active, correlation_rule="in_reply_to")
    # A command's entry in the operator log, written outside any workspace: seen by no member once there are two.
    OperatorAction.objects.create(actor="command", action="sequence_pause", target=f"sequence {prefix.title()} launch")
    user = get_user_model().objects.create_user(username=f"{prefix}-admin", password=PASSWORD, is_staff=True)
    Membership.objects.create(user=user, workspace=workspace, role="admin")
    secrets = [f"{prefix}-box", f"{prefix}-agency.test", f"{prefix}-leads.test", f"{prefix.title()} launch"]
    return {"workspace": workspace, "user": user, "sequence": sequence, "active": active, "secrets": secrets}


@pytest.fixture
def tenants(roles, redis_conn):  # noqa: F811 - roles: the groups a membership's role reads
    return tenant("Acme Corp", "acme"), tenant("Beta Ltd", "beta")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def crawl(client: Client, start: str = "/", limit: int = 400) -> dict[str, str]:
    """Every page reached from `start` by following links on the site (GET only): url -> body."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo and len(seen) < limit:
        url = urldefrag(todo.pop(0))[0]
        if url in seen or url.startswith(SKIP):
            continue
        response = client.get(url)
        body = text_of(response) if response.status_code == 200 else ""
        seen[url] = body
        if response.status_code == 200 and "html" in response.get("Content-Type", ""):
            todo += [link.replace("&amp;", "&") for link in HREF.findall(body) if link not in seen]
    return seen


def text_of(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return raw.decode(errors="replace")


def leaks(client: Client, urls: list[str], secrets: list[str], own_ids: set[str]) -> list[str]:
    """What B's client sees of A: a page carrying one of A's names or addresses, or an A object's page opened."""
    found = []
    for url in urls:
        response = client.get(url)
        body = text_of(response)
        for typed in (v for values in parse_qs(urlparse(url).query).values() for v in values):
            body = body.replace(escape(typed), "").replace(typed, "")  # a search box shows what B typed in it
        named = [s for s in secrets if s.lower() in body.lower()]
        if named:
            found.append(f"{url} ({response.status_code}) shows {named}")
        ids = set(re.findall(r"/(\d+)(?=/|$)", urlparse(url).path)) - own_ids
        if ids and response.status_code == 200:
            found.append(f"{url} opens an object of the other workspace")
    return found


def test_a_member_of_b_sees_nothing_of_a_through_any_page_a_reaches(tenants):
    a, b = tenants
    pages = crawl(signed_in(a["user"]))
    assert len(pages) > 40, sorted(pages)  # the crawl reached the pages of A's objects
    assert any(f"/{a['sequence'].pk}/" in url for url in pages) and any(a["secrets"][3] in body
                                                                       for body in pages.values())
    b_pages = crawl(signed_in(b["user"]))
    own_ids = {m for url in b_pages for m in re.findall(r"/(\d+)(?=/|$)", urlparse(url).path)}
    assert leaks(signed_in(b["user"]), sorted(pages), a["secrets"], own_ids) == []


@pytest.mark.one_database("a control that the crawl can fail: the crawl itself runs on both databases")
def test_with_one_filter_removed_the_crawl_finds_the_leak(tenants, monkeypatch):
    a, b = tenants
    pages = crawl(signed_in(a["user"]))
    # The guard off: the sequence's manager filters nothing (as a model without its workspace manager would).
    monkeypatch.setattr(type(Sequence.objects), "get_queryset", lambda self: super(_ScopedManager, self).get_queryset())
    found = leaks(signed_in(b["user"]), sorted(pages), a["secrets"], set())
    assert any("Acme launch" in line or "opens an object" in line for line in found), found


def test_the_api_answers_a_workspace_token_with_its_own_rows_only(tenants):
    a, b = tenants
    _, token = api_token_create(name="beta-token", role="admin", workspace_id=b["workspace"].pk)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get(f"/api/v1/sequences/{a['sequence'].pk}").status_code == 404
    assert api.get(f"/api/v1/enrollments/{a['active'].pk}").status_code == 404
    assert api.get("/api/v1/contacts/active@acme-leads.test").status_code == 404
    for url in ("/api/v1/sequences", "/api/v1/enrollments", "/api/v1/contacts", "/api/v1/replies",
                "/api/v1/timeline/active@acme-leads.test", "/api/v1/suppressions"):
        response = api.get(url)
        assert response.status_code in (200, 403, 404), (url, response.status_code)
        assert not any(s in response.content.decode() for s in a["secrets"]), url
    # A's entry is in A's part of the ledger: B's check does not see it (the answer only repeats the address asked).
    assert api.get("/api/v1/suppressions/check?address=blocked@acme-leads.test").json()["entry"] is None
    assert api.get("/api/v1/suppressions/check?address=blocked@beta-leads.test").json()["suppressed"] is True
    own = api.get(f"/api/v1/sequences/{b['sequence'].pk}")
    assert own.status_code == 200 and "Beta launch" in own.content.decode()


def test_an_agency_token_names_its_workspace_per_call(tenants):
    a, b = tenants
    _, token = api_token_create(name="agency-token", role="staff")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    refused = api.get("/api/v1/sequences")
    assert refused.status_code == 400 and "X-Workspace" in refused.json()["detail"]
    in_a = api.get("/api/v1/sequences", HTTP_X_WORKSPACE="Acme Corp").content.decode()
    in_b = api.get("/api/v1/sequences", HTTP_X_WORKSPACE="Beta Ltd").content.decode()
    assert "Acme launch" in in_a and "Beta launch" not in in_a
    assert "Beta launch" in in_b and "Acme launch" not in in_b
    assert api.get("/api/v1/sequences", HTTP_X_WORKSPACE="Nobody").status_code == 400


def test_the_same_address_is_a_contact_in_each_workspace(tenants):
    a, b = tenants
    with workspace_scope(b["workspace"].pk):
        again = enroll(b["sequence"], "active@acme-leads.test")
    assert again.contact.workspace_id == b["workspace"].pk
    assert again.contact_id != a["active"].contact_id
    assert Enrollment.objects.filter(contact__email="active@acme-leads.test").count() == 2


def test_an_agency_user_switches_workspace_and_a_member_cannot_leave_its_own(tenants, users):  # noqa: F811
    a, b = tenants
    agency = signed_in(users["admin"])
    page = agency.get("/sequences/").content.decode()
    assert 'id="workspace-switch"' in page
    first = "Acme launch" in page
    assert agency.post("/workspace/", {"workspace": (b if first else a)["workspace"].pk}).status_code == 302
    page = agency.get("/sequences/").content.decode()
    assert ("Beta launch" if first else "Acme launch") in page
    assert ("Acme launch" if first else "Beta launch") not in page

    member = signed_in(b["user"])
    assert 'id="workspace-switch"' not in member.get("/sequences/").content.decode()
    member.post("/workspace/", {"workspace": a["workspace"].pk})
    page = member.get("/sequences/").content.decode()
    assert "Beta launch" in page and "Acme launch" not in page


def test_a_request_without_a_user_refuses_tenant_queries(db):
    from workspaces.scoping import ScopeRefused, workspace_refused

    with workspace_refused(), pytest.raises(ScopeRefused):
        list(Sequence.objects.all())


def test_a_workspace_webhook_hears_its_own_workspace_only(tenants):
    from sequences.services.stops import enrollment_stop
    from sequences.webhooks_out.models import WebhookDelivery, WebhookEndpoint

    a, b = tenants
    hooks = {}
    for side, name in ((a, "a"), (b, "b")):
        with workspace_scope(side["workspace"].pk):
            hooks[name] = WebhookEndpoint.objects.create(url=f"http://127.0.0.1:9/{name}",
                                                         secret_env="OUTREACH_SECRET_X",
                                                         event_types=["enrollment.stopped"])
    agency = WebhookEndpoint.objects.create(url="http://127.0.0.1:9/agency", secret_env="OUTREACH_SECRET_X",
                                            event_types=["enrollment.stopped"], workspace=None)
    enrollment_stop(enrollment_id=a["active"].pk, reason="replied", actor="fixture")
    heard = set(WebhookDelivery.objects.values_list("endpoint_id", flat=True))
    assert heard == {hooks["a"].pk, agency.pk}
    # B's admin reads B's delivery log: nothing of A's.
    page = signed_in(b["user"]).get("/outbound-webhooks/deliveries/").content.decode()
    assert not any(s in page for s in a["secrets"]) and "active@acme" not in page


def test_a_client_reads_its_results_and_replies_and_changes_nothing(tenants):
    a, b = tenants
    client_user = get_user_model().objects.create_user(username="beta-client", password=PASSWORD)
    Membership.objects.create(user=client_user, workspace=b["workspace"], role="client")
    client = signed_in(client_user)
    for url in ("/", "/sequences/", f"/sequences/{b['sequence'].pk}/", "/reports/", "/replies/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert not any(s in text_of(response) for s in a["secrets"]), url
    assert "Beta launch" in client.get("/sequences/").content.decode()
    # No contact's page, no contact data export, nothing that acts.
    contact = b["active"].contact_id
    for url in ("/contacts/", f"/contacts/{contact}/", f"/contacts/{contact}/ledger.csv",
                f"/sequences/{b['sequence'].pk}/ledger.csv", "/suppressions/export.csv"):
        assert client.get(url).status_code == 403, url
    before = b["sequence"].status
    assert client.post(f"/sequences/{b['sequence'].pk}/pause/").status_code == 403
    b["sequence"].refresh_from_db()
    assert b["sequence"].status == before


def test_a_file_loaded_in_b_never_touches_a_mailbox_named_as_one_of_a(tenants):
    from sequences.config.apply import config_apply
    from sequences.config.parse import parse
    from sequences.config.validate import ConfigError

    a, b = tenants
    text = '[[mailbox]]\nname = "acme-box"\naddress = "taken@beta-agency.test"\n'
    # The words say the name is taken, and nothing of whose it is.
    taken = "mailbox acme-box: this name is not available: choose another"
    with workspace_scope(b["workspace"].pk), pytest.raises(ConfigError, match=taken):
        config_apply(parse(text))
    assert Mailbox.objects.get(name="acme-box").address == "sender@acme-agency.test"
    with workspace_scope(b["workspace"].pk):
        config_apply(parse(text.replace("acme-box", "beta-second")))
    assert Mailbox.objects.get(name="beta-second").workspace_id == b["workspace"].pk
