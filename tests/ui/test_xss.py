"""Hostile input renders inert: inbound subject, body, From name and headers; contact fields; search terms."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from inbound.models import InboundMessage
from sequences.services.enrollments import contact_upsert, enrollment_create
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, make_sequence

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert('xss')</script>"
IMG = '"><img src=x onerror=alert(1)>'
SVG = "<svg/onload=alert(2)>"
REMOTE = '<img src="https://tracker.example/pixel.gif">'
PAYLOADS = [SCRIPT, IMG, SVG, REMOTE]


@pytest.fixture
def hostile(users):
    mailbox = MailboxFactory(name="xss-box", display_name=SCRIPT)
    sequence = make_sequence(mailbox=mailbox, steps=2, name=f"seq {SVG}")
    contact = contact_upsert(email="victim@example.com", first_name=IMG, last_name=SCRIPT,
                                      company=SVG, fields={"title": REMOTE, IMG: "key"})
    enrollment = enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk)
    job = enrollment.jobs.get()
    message = InboundMessage.objects.create(
        mailbox=mailbox, folder=f"INBOX{SVG}", uidvalidity=1, uid=1, message_id=f"<{SVG}@example.com>",
        from_address="victim@example.com", from_name=IMG, subject=SCRIPT,
        headers={"Subject": SCRIPT, "X-Evil": IMG}, kind="human_reply",
        reply_text=f"Hi {SCRIPT}\n{REMOTE}\n<a href=\"javascript:alert(3)\">click</a>",
        raw=(f"Subject: {SCRIPT}\r\nContent-Type: text/html\r\n\r\n"
             f"<html><body onload=alert(4)>{REMOTE}</body></html>").encode(),
        classification_reason=SVG, effect=IMG, job=job, enrollment=enrollment, correlation_rule="in_reply_to",
    )
    suppression_add(value="victim@example.com", reason="manual", note=SCRIPT, source=f"operator {IMG}",
                             actor=SVG)
    return {"sequence": sequence, "enrollment": enrollment, "message": message, "job": job}


def pages(h):
    return [
        reverse("dashboard"),
        reverse("sequence_list"),
        reverse("sequence_detail", args=[h["sequence"].pk]),
        reverse("enrollment_detail", args=[h["enrollment"].pk]),
        reverse("enrollment_stop", args=[h["enrollment"].pk]),
        reverse("inbound_list"),
        reverse("inbound_detail", args=[h["message"].pk]),
        reverse("incident_search") + "?q=victim@example.com",
        reverse("incident_job", args=[h["job"].pk]),
        reverse("suppression_list"),
        reverse("suppression_history") + "?value=victim@example.com",
        reverse("mailbox_list"),
        reverse("operator_log"),
    ]


def test_payloads_render_as_text_everywhere(client, users, hostile):
    client.force_login(users["admin"])
    for url in pages(hostile):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        for payload in PAYLOADS:
            assert payload not in html, f"{payload!r} rendered raw on {url}"
        # The one script a page may carry is a file of ours (the local times of static/localtime.js), never inline.
        own = re.sub(r'<script src="/static/[\w.-]+\.js" defer></script>', "", html)
        assert "<script" not in own.lower(), url
        assert 'src="https://tracker' not in html
        # Defence in depth: nothing remote, no inline script, even if escaping failed somewhere.
        csp = response["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp


def test_inbound_body_is_escaped_plain_text(client, users, hostile):
    client.force_login(users["staff"])
    html = client.get(reverse("inbound_detail", args=[hostile["message"].pk])).content.decode()
    assert "Hi &lt;script&gt;alert(&#x27;xss&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=&quot;https://tracker.example/pixel.gif&quot;&gt;" in html
    assert "&lt;body onload=alert(4)&gt;" in html  # the raw source, as text
    assert 'href="javascript:' not in html


def test_search_terms_are_escaped(client, users, hostile):
    client.force_login(users["staff"])
    for name in ("incident_search", "sequence_list", "inbound_list", "suppression_list", "operator_log"):
        html = client.get(reverse(name), {"q": SCRIPT}).content.decode()
        assert SCRIPT not in html, name


def test_admin_shows_payloads_inert(client, users, hostile):
    client.force_login(users["admin"])
    for url in (f"/admin/inbound/inboundmessage/{hostile['message'].pk}/change/", "/admin/inbound/inboundmessage/",
                f"/admin/sequences/enrollment/{hostile['enrollment'].pk}/change/", "/admin/sequences/suppression/"):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        for payload in PAYLOADS:
            assert payload not in html, (payload, url)
