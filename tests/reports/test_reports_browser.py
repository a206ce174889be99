"""The reports page in Debian's Chromium at 390 and 1366 px: no sideways scroll, every control on screen, charts
that a phone can read (their text at least 9 px) with text alternatives, and the numbers beside them."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from reports.rollup import rollup
from tests.reports.conftest import SPRING
from tests.ui.test_browser import log_in
from tests.ui.test_phone_width import OFF_SCREEN

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.one_database("a page's layout in a browser (the figures: tests/reports/test_reports.py)",
                                       on="sqlite")]

# The elements that reach past the right edge of the screen (what makes a page scroll sideways).
WIDER = """() => [...document.querySelectorAll('body *')].filter(el => {
    if (el.getBoundingClientRect().right <= innerWidth + .5) return false;
    for (let box = el.parentElement; box; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible') return false;  // clipped or scrolled inside its box
    }
    return true;
  }).slice(0, 12).map(el => `${el.tagName.toLowerCase()}#${el.id}.${el.className.baseVal ?? el.className}`
                          + ` ${Math.round(el.getBoundingClientRect().right)}`)"""
# Each chart: its role, the words its aria-labelledby points at, its drawn width and the size its 11 px text is
# drawn at on this screen.
CHARTS = """() => [...document.querySelectorAll('svg.report-chart')].map(svg => {
  const ids = (svg.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean);
  const named = ids.map(id => document.getElementById(id));
  const box = svg.getBoundingClientRect();
  return {
    id: svg.id, role: svg.getAttribute('role'),
    title: named.filter(el => el && el.tagName.toLowerCase() === 'title').map(el => el.textContent.trim()).join(''),
    desc: named.filter(el => el && el.tagName.toLowerCase() === 'desc').map(el => el.textContent.trim()).join(''),
    right: box.right, text_px: 11 * box.width / svg.viewBox.baseVal.width,
  };
})"""


def _check(page: Page, width: int) -> list[dict]:
    fit = page.evaluate(OFF_SCREEN)
    assert fit["scroll"] <= width, (f"{page.url} scrolls sideways at {width} px ({fit['scroll']} px wide): "
                                    f"{page.evaluate(WIDER)}")
    assert not fit["out"], f"controls off screen at {width} px: {fit['out']}"
    charts = page.evaluate(CHARTS)
    assert [c["id"] for c in charts] == ["chart-replies", "chart-bounces", "chart-complaints"]
    for chart in charts:
        assert chart["role"] == "img" and chart["title"] and chart["desc"], chart
        assert chart["right"] <= width, chart
        assert chart["text_px"] >= 9, f"{chart['id']}: its text is {chart['text_px']:.1f} px at {width} px"
    return charts


def test_the_reports_page_fits_a_phone_and_a_desktop_and_its_charts_say_what_they_show(
        live_server, page: Page, campaign, users, screenshot):
    rollup()
    spring = campaign.sequences[SPRING]
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, f"{live_server.url}/reports/?by=step&sequence={spring.pk}", users["staff"].username)
    expect(page.locator("h1")).to_have_text("Reports")
    page.wait_for_load_state("load")  # its stylesheet too: the login's redirect is not waited for by log_in
    charts = _check(page, 390)
    replies, bounces, complaints = (c["desc"] for c in charts)
    assert "Step 1: reply rate 20.0 %, positive rate 10.0 %" in replies
    assert "Step 1: bounce rate 10.00 %" in bounces and "Dashed lines: warn 5 %. Dashed lines: stop 10 %." in bounces
    assert "Step 2: complaint rate 25.00 %" in complaints and "stop 0.3 %" in complaints
    # The numbers beside each chart, and the full table as cards, each value named by its column.
    expect(page.locator("#figure-replies table.report-numbers tbody tr")).to_have_count(2)
    expect(page.locator("#report-table tr[data-row='1'] td[data-label='Reply rate (%)']")).to_have_text("20.0")
    expect(page.locator("#report-table tr[data-row='1'] td[data-label='Bounce level']")).to_have_text("Stop")
    screenshot("reports-phone-by-step")
    for by in ("variant", "week", "mailbox"):
        page.goto(f"{live_server.url}/reports/?by={by}")
        _check(page, 390)
    expect(page.locator("#report-table tr[data-row='1'] td[data-label='Mailbox']")).to_have_text("alpha")

    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/reports/?by=variant&sequence={spring.pk}")
    _check(page, 1366)
    expect(page.locator("#ab-verdicts")).to_contain_text("Too early to tell")
    chart = page.locator("#chart-replies").bounding_box()
    numbers = page.locator("#figure-replies table.report-numbers").bounding_box()
    assert numbers["x"] >= chart["x"] + chart["width"], "on a desktop the numbers sit beside the chart"
    head = page.locator("#report-table thead th").first.bounding_box()
    assert head and head["height"] > 0, "on a desktop the report is a table with its header row"
    scroll = page.evaluate("() => { const w = document.querySelector('#report-table').parentElement;"
                           " return [w.scrollWidth, w.clientWidth]; }")
    assert scroll[0] <= scroll[1], f"the report's table scrolls inside its box on a desktop: {scroll}"
    screenshot("reports-desktop-by-variant")
