"""HTML that a contact or a step carries is text on every page: never live markup of the page (issue 34, item 1)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.safestring import SafeData

from sequences.messages import render
from sequences.models import Contact
from sequences.previews import step_preview
from tests.factories import MailboxFactory, enroll, make_sequence

# What the red team stored through the API and a CSV: opening Preview navigated to another origin.
PAYLOAD = '<meta http-equiv="refresh" content="0;url=https://attacker.example/">'
LIVE = "<meta http-equiv"
ESCAPED = "&lt;meta http-equiv=&quot;refresh&quot;"


def _world():
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, name="Spring")
    step = sequence.steps.get(position=1)
    step.subject = "Hello {{ first_name }} " + PAYLOAD
    step.body = ("{{ first_name }} {{ last_name }} of {{ company }}: {{ note }} / {{ fields.note }}\n"
                 + PAYLOAD + "\n")
    step.save(update_fields=["subject", "body"])
    enrollment = enroll(sequence, "victim@example.com", first_name=PAYLOAD, company=PAYLOAD, note=PAYLOAD)
    Contact.objects.filter(pk=enrollment.contact_id).update(last_name=PAYLOAD)
    enrollment.contact.refresh_from_db()
    return sequence, step, enrollment


def test_a_rendered_step_is_plain_text_not_markup_declared_safe():
    text = render("{{ first_name }}", {"first_name": PAYLOAD})
    assert text == PAYLOAD
    assert not isinstance(text, SafeData)


@pytest.mark.django_db
def test_the_preview_shows_html_from_contact_and_step_as_text(users):
    sequence, step, enrollment = _world()
    preview = step_preview(step=step, contact=enrollment.contact)
    assert preview.ok, preview.errors
    assert not isinstance(preview.body, SafeData) and not isinstance(preview.subject, SafeData)

    client = Client()
    client.force_login(users["admin"])
    page = client.get(f"{reverse('step_preview', args=[step.pk])}?{urlencode({'contact': 'victim@example.com'})}")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="preview-body"' in html
    assert LIVE not in html
    assert ESCAPED in html  # shown, as the text the mail carries


@pytest.mark.django_db
def test_no_page_that_shows_a_contact_or_a_step_prints_its_html(users):
    sequence, step, enrollment = _world()
    client = Client()
    client.force_login(users["admin"])
    urls = [
        reverse("step_preview", args=[step.pk]) + "?" + urlencode({"contact": "victim@example.com"}),
        reverse("sequence_detail", args=[sequence.pk]),
        reverse("step_edit", args=[step.pk]),
        reverse("contact_list"),
        reverse("contact_detail", args=[enrollment.contact_id]),
        reverse("enrollment_detail", args=[enrollment.pk]),
        reverse("incident_search") + "?" + urlencode({"q": "victim@example.com"}),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert LIVE not in response.content.decode(), url
