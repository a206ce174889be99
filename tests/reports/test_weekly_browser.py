"""The weekly report in Debian's Chromium at 390 px: its settings page and the mail itself (as a mail client that
shows HTML draws it) fit a phone without sideways scroll, and the mail's chart bars are drawn."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from reports.figures import week_of
from reports.rollup import rollup
from reports.weekly import weekly_message, weekly_report
from reports.weekly_send import weekly_recipients_set
from tests.reports.test_reports_browser import WIDER
from tests.reports.test_weekly import people  # noqa: F401 - the weekly report's users
from tests.ui.test_browser import log_in
from tests.ui.test_phone_width import OFF_SCREEN

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.one_database("a page's and a mail's layout in a browser", on="sqlite")]


def _fits(page: Page, width: int) -> None:
    fit = page.evaluate(OFF_SCREEN)
    assert fit["scroll"] <= width, f"scrolls sideways at {width} px ({fit['scroll']} px): {page.evaluate(WIDER)}"
    assert not fit["out"], f"controls off screen at {width} px: {fit['out']}"


def test_the_weekly_page_and_the_mail_fit_a_phone(live_server, page: Page, campaign, people, screenshot):  # noqa: F811
    rollup()
    weekly_recipients_set(user_ids=[people["admin"].pk, people["staff"].pk], actor="tester")
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, f"{live_server.url}/reports/weekly/", people["admin"].username)
    expect(page.locator("h1")).to_have_text("Weekly report by email")
    page.wait_for_load_state("load")
    expect(page.locator("#weekly-recipients input[type=checkbox]:checked")).to_have_count(2)
    expect(page.locator("#weekly-sequences input[type=checkbox]:checked")).to_have_count(2)
    _fits(page, 390)
    screenshot("weekly-report-phone")

    built = weekly_report(week=week_of(campaign.messages[0].day))
    page.goto("about:blank")  # a page of its own: the UI's Content-Security-Policy forbids inline styles
    page.set_content(weekly_message(built, to=["admin@install.test"]).html)
    _fits(page, 390)
    bars = page.evaluate("""() => [...document.querySelectorAll('#weekly-chart td[bgcolor]')]
                              .map(td => Math.round(td.getBoundingClientRect().width))""")
    # Other list: no reply, no bar; Spring launch: reply rate 21.4 % and positive rate 14.3 %, in proportion.
    assert len(bars) == 2 and abs(bars[1] / bars[0] - 14.3 / 21.4) < 0.05, bars
    expect(page.locator("table[data-total] td[data-figure='sent']")).to_have_text("15")
    screenshot("weekly-report-mail-phone")
