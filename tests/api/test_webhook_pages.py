"""The admins' webhook pages: register an endpoint, read the delivery log with response codes; others get 403."""

from __future__ import annotations

import itertools

import pytest
from django.urls import reverse

from sequences.webhooks_out.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from ui import urls as ui_urls

pytestmark = pytest.mark.django_db

A, ST, OP, AD = "anonymous", "staff", "operator", "admin"
ADMIN_ONLY = {A: "login", ST: 403, OP: 403, AD: 200}
TABLE = [
    ("webhook_list", lambda w: reverse("webhook_list")),
    ("webhook_edit", lambda w: reverse("webhook_edit", args=[w.pk])),
    ("webhook_deliveries", lambda w: reverse("webhook_deliveries")),
]


@pytest.fixture
def endpoint(api_roles):
    endpoint = WebhookEndpoint.objects.create(url="https://crm.example/hooks", secret_env="OUTREACH_SECRET_CRM",
                                              event_types=["contact.replied"])
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, event_type="contact.replied", body="{}")
    WebhookAttempt.objects.create(delivery=delivery, status_code=503, error="the receiver answered 503")
    return endpoint


def test_the_table_covers_every_webhook_page():
    assert {p.name for p in ui_urls.urlpatterns if str(p.pattern).startswith("outbound-webhooks/")} == {
        name for name, _ in TABLE}


@pytest.mark.parametrize(("name", "build", "role"), [(n, b, r) for (n, b), r in itertools.product(TABLE, ADMIN_ONLY)])
def test_only_admins_see_the_webhook_pages(client, users, endpoint, name, build, role):
    if role != A:
        client.force_login(users[role])
    response = client.get(build(endpoint))
    if ADMIN_ONLY[role] == "login":
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    else:
        assert response.status_code == ADMIN_ONLY[role]


@pytest.mark.parametrize("role", [ST, OP, AD])
def test_the_menu_links_the_webhook_pages_for_those_who_may_open_them(client, users, role):
    client.force_login(users[role])
    page = client.get(reverse("dashboard")).content.decode()
    link = f'href="{reverse("webhook_list")}"'
    assert (link in page) == (ADMIN_ONLY[role] == 200), role
    if role == AD:
        listed = client.get(reverse("webhook_list")).content.decode()
        assert f'{link} class="on">Webhooks</a>' in listed, "the menu marks the page it is on"


def test_an_admin_registers_an_endpoint_and_reads_the_log(client, users, endpoint):
    client.force_login(users[AD])
    refused = client.post(reverse("webhook_list"), {"url": "http://crm.example/hooks", "secret_env": "DATABASE_URL",
                                                    "event_types": ["contact.replied"]})
    assert refused.status_code == 400
    page = refused.content.decode()
    assert "use https" in page and "may not hold a webhook secret" in page
    made = client.post(reverse("webhook_list"), {"url": "https://crm.example/v2", "secret_env": "OUTREACH_SECRET_V2",
                                                 "event_types": ["enrollment.stopped", "mailbox.paused_by_guardrail"],
                                                 "active": "on"})
    assert made.status_code == 302
    assert WebhookEndpoint.objects.get(url="https://crm.example/v2").event_types == [
        "enrollment.stopped", "mailbox.paused_by_guardrail"]
    log = client.get(reverse("webhook_deliveries")).content.decode()
    assert "HTTP 503" in log and "the receiver answered 503" in log and "contact.replied" in log
