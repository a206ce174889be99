"""The Add-mailbox form in Debian's Chromium at 390 and 1366 px: the OAuth block only for OAuth login, styled ports.

With password login chosen no OAuth field is on screen and the page is shorter than it was with every block shown
one field under another (3,653 px at 390 px, 3,304 px at 1366 px); choosing "OAuth sign-in" shows them. Without
JavaScript every block shows (the form still works: the server ignores the fields of the login not chosen).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import log_in

pytestmark = [pytest.mark.one_database("the layout of one form"), pytest.mark.django_db(transaction=True)]

OAUTH_FIELDS = ("oauth2_provider", "oauth2_client_id", "oauth2_client_secret", "oauth2_scope")
# Measured with password login (before -> after): 390 px 3,653 -> 2,632; 1366 px 3,304 -> 1,533 (the OAuth block
# hidden, TLS, domain authentication, pace and the Sent folder folded).
MAX_HEIGHT = {390: 2800, 1366: 1700}
HEIGHT = "() => document.documentElement.scrollHeight"


def _field(page: Page, name: str):
    return page.locator(f"#mailbox-form [name={name}]")


def _box_style(page: Page, selector: str) -> dict:
    return page.locator(selector).evaluate(
        "el => { const s = getComputedStyle(el); return {border: s.borderTopStyle + ' ' + s.borderTopColor, "
        "radius: s.borderTopLeftRadius, padding: s.paddingLeft}; }")


@pytest.mark.parametrize("width", [390, 1366])
def test_the_add_form_shows_the_oauth_block_only_for_oauth_login(live_server, page: Page, users, width):
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, f"{live_server.url}/mailboxes/new/?preset=other", users["operator"].username)
    expect(page.get_by_label("Log in with", exact=True)).to_have_value("password")
    for name in OAUTH_FIELDS:
        expect(_field(page, name)).to_be_hidden()
    expect(_field(page, "smtp_password")).to_be_visible()
    height = page.evaluate(HEIGHT)
    print(f"add form at {width} px, password login: {height} px tall")
    assert height < MAX_HEIGHT[width]

    # The ports look like the other inputs (the text inputs' border, radius and padding).
    assert _box_style(page, "#id_smtp_port") == _box_style(page, "#id_smtp_host")
    assert _box_style(page, "#id_imap_port") == _box_style(page, "#id_imap_host")

    page.get_by_label("Log in with", exact=True).select_option("oauth2")
    for name in OAUTH_FIELDS:
        expect(_field(page, name)).to_be_visible()
    expect(_field(page, "smtp_password")).to_be_hidden()  # a password is not used with OAuth
    print(f"add form at {width} px, OAuth login: {page.evaluate(HEIGHT)} px tall")
    page.get_by_label("Log in with", exact=True).select_option("password")
    expect(_field(page, "oauth2_provider")).to_be_hidden()


@pytest.mark.parametrize("preset", ["google", "microsoft"])
def test_an_oauth_preset_shows_its_block_at_once(live_server, page: Page, users, preset):
    log_in(page, f"{live_server.url}/mailboxes/new/?preset={preset}", users["operator"].username)
    expect(page.get_by_label("Log in with", exact=True)).to_have_value("oauth2")
    expect(_field(page, "oauth2_provider")).to_be_visible()


def test_without_javascript_every_block_shows(live_server, browser, users):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        log_in(page, f"{live_server.url}/mailboxes/new/?preset=other", users["operator"].username)
        expect(page.get_by_label("Log in with", exact=True)).to_have_value("password")
        for name in (*OAUTH_FIELDS, "smtp_password"):
            expect(_field(page, name)).to_be_visible()  # hidden without a script to show it, it could not be filled
    finally:
        context.close()
