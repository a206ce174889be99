"""Items of the operator's second hour seen in Debian's Chromium, as an operator meets them:

- editing a contact cannot take away a value a later step needs: the page refuses in words and keeps the value;
- the riskiest reply-view setting ("reads no replies: follow-ups are sent without reading replies") wears the
  warning colour on the mailboxes page and the dashboard, never the green of a healthy state.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from sequences.models import Step
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_browser import log_in

pytestmark = [pytest.mark.one_database("what the browser shows", on="sqlite"), pytest.mark.django_db(transaction=True)]
COLOUR = "el => getComputedStyle(el).color"


def test_a_contact_edit_that_removes_a_value_a_later_step_needs_is_refused_in_words(live_server, page: Page, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, name="Roles", subject="Hi {{ first_name }}")
    Step.objects.filter(sequence=sequence, position=2).update(body="As {{ role }}, does this fit?")
    contact = enroll(sequence, "ada@example.com", first_name="Ada", role="CTO").contact
    log_in(page, f"{live_server.url}/contacts/{contact.pk}/edit/", users["operator"].username)
    page.get_by_label("role", exact=True).fill("")
    page.click("#save-contact")
    expect(page.locator("body")).to_contain_text("Not saved: ada@example.com is still to get step 2 of “Roles”")
    expect(page.locator("body")).to_contain_text("no value for role")
    contact.refresh_from_db()
    assert contact.fields == {"role": "CTO"}


def test_reading_no_replies_and_sending_follow_ups_anyway_wears_the_warning_colour(live_server, page: Page, users):
    MailboxFactory(name="blind", follow_ups_without_reply_view=True)  # no IMAP: follow-ups leave unread
    log_in(page, f"{live_server.url}/mailboxes/", users["operator"].username)
    for url in ("/mailboxes/", "/"):
        page.goto(f"{live_server.url}{url}")
        badge = page.locator(".label", has_text="reads no replies: follow-ups are sent without reading replies")
        expect(badge.first).to_be_visible()
        warning = page.evaluate("() => getComputedStyle(document.documentElement).getPropertyValue('--recall')")
        healthy = page.evaluate("() => getComputedStyle(document.documentElement).getPropertyValue('--ok')")
        colour = badge.first.evaluate(COLOUR)
        assert colour == _rgb(warning) and colour != _rgb(healthy), (url, colour)


def _rgb(hex_colour: str) -> str:
    value = hex_colour.strip().lstrip("#")
    return "rgb({}, {}, {})".format(*(int(value[i:i + 2], 16) for i in (0, 2, 4)))
