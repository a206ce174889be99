"""Every list page on a 390 px phone: no sideways scroll, every control on screen; at 1366 px, still tables.

Built with the longest names an operator meets (proving.harness.long_names), through the real services, and
checked in Debian's Chromium with getBoundingClientRect.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page

from proving.harness.long_names import long_names_create, long_names_pages
from tests.ui.test_browser import log_in

pytestmark = [pytest.mark.one_database("the layout at 390 and 1366 px", on="sqlite"),
              pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "timezone_id": "Europe/Berlin"}  # the operator's own zone, not the server's

# What sticks out: the page's own width, and each visible control whose box leaves the viewport or is cut
# off by a box that scrolls or clips (a table scrolled sideways hides its last column's buttons).
OFF_SCREEN = """() => {
  const width = window.innerWidth;
  const out = [];
  for (const el of document.querySelectorAll('a, button, input, select, textarea, summary')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // not rendered (a closed <details>, a hidden input)
    let left = 0, right = width;
    for (let box = el.parentElement; box; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible') {
        const b = box.getBoundingClientRect();
        left = Math.max(left, b.left);
        right = Math.min(right, b.right);
      }
    }
    if (r.left < left - 0.5 || r.right > right + 0.5) {
      out.push(`${el.tagName.toLowerCase()} "${(el.textContent || el.value || el.name || '').trim().slice(0, 40)}"`
               + ` at ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  return {scroll: document.documentElement.scrollWidth, width, out};
}"""
# How the first list of the page is laid out: a table (header row shown, cells side by side) or cards.
LAYOUT = """() => {
  const table = document.querySelector('.table-wrap table');
  const head = table.querySelector('thead th');
  const cell = table.querySelector('tbody td');
  return {head: head ? head.getBoundingClientRect().height : 0, cell: getComputedStyle(cell).display};
}"""


def test_every_list_page_fits_a_phone_and_stays_a_table_on_a_desktop(live_server, page: Page, users):
    pages = long_names_pages(long_names_create(smtp_port=1))
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, f"{live_server.url}/", users["admin"].username)
    problems = {}
    for name, path in pages.items():
        page.goto(f"{live_server.url}{path}")
        found = page.evaluate(OFF_SCREEN)
        found["cards"] = page.evaluate(LAYOUT)["cell"] == "block"
        if found["scroll"] > found["width"] or found["out"] or not found["cards"]:
            problems[name] = found
    assert not problems, problems

    # A list's times: to the minute in the operator's time zone; the exact database-clock value in the title.
    page.goto(f"{live_server.url}{pages['operator-log']}")
    shown = page.locator("time.local").first
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d (CET|CEST)", shown.inner_text()), shown.inner_text()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} UTC", shown.get_attribute("title"))

    page.set_viewport_size({"width": 1366, "height": 900})
    for name, path in pages.items():
        page.goto(f"{live_server.url}{path}")
        layout = page.evaluate(LAYOUT)
        assert layout["cell"] == "table-cell" and layout["head"] > 0, f"{name}: not a table at 1366 px"
        found = page.evaluate(OFF_SCREEN)
        assert found["scroll"] <= found["width"] and not found["out"], (name, found)
