"""Long data on a phone and a desktop: no page scrolls sideways, none runs on for metres, no table is cut off.

The longest names an operator meets (proving.harness.long_names) and 50 more people in the sequence with
60-80-character names, each with step 1 scheduled, paused and resumed once: "What will send when" has 50 rows,
the operator log more than a page, the first enrollment a long timeline. Measured in Debian's Chromium: at
390 px the page is no wider than the screen and no taller than MAX_HEIGHT (long lists are folded or paged);
at 1366 px the same height, and the dashboard's results table shows its last column (Held) without
scrolling. Every folded row stays one click away.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from mailboxes.models import Mailbox
from proving.harness.data import enroll, mailbox_create, sequence_create
from proving.harness.long_names import long_names_create, long_names_pages, long_names_people
from sequences.models import Sequence
from sequences.services.variants import variant_save
from tests.ui.test_browser import log_in

pytestmark = [pytest.mark.one_database("the layout of long pages", on="sqlite"),
              pytest.mark.django_db(transaction=True)]

MAX_HEIGHT = 6000  # px: longer than this, a list must be folded or paged
DOMAIN = "@procurement-department.example-enterprise.de"
# The page's size, and the widest box inside the dashboard's results table that scrolls or is cut off.
SIZE = """() => ({
  width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
  view: window.innerWidth,
})"""
# Every table whose box scrolls sideways (its last columns cut off until scrolled), by its first heading.
TABLES_CUT = """() => [...document.querySelectorAll('.table-wrap')]
  .filter(w => w.scrollWidth > w.clientWidth + 1)
  .map(w => (w.querySelector('th') || w).textContent.trim().slice(0, 30))"""
TABLE_CUT = """(selector) => {
  const wrap = document.querySelector(selector).parentElement;
  const last = wrap.querySelector('thead th:last-child').getBoundingClientRect();
  return {overflow: wrap.scrollWidth - wrap.clientWidth, lastRight: Math.round(last.right), view: window.innerWidth};
}"""


def _long_pages(data: dict) -> dict[str, str]:
    pages = long_names_pages(data)
    contact = data["enrollments"][0].contact
    return {
        **pages,
        "incidents-domain": f"/incidents/?q={DOMAIN}",
        "incidents-address": f"/incidents/?q={contact.email}",
        "replies": "/replies/?status=all",
        "launch": f"/sequences/{data['sequence'].pk}/launch/",
    }


def _measure(page: Page, base: str, pages: dict[str, str]) -> dict[str, dict]:
    sizes = {}
    for name, path in pages.items():
        page.goto(f"{base}{path}")
        sizes[name] = {**page.evaluate(SIZE), "cut": page.evaluate(TABLES_CUT)}
    return sizes


def _too_big(sizes: dict[str, dict]) -> dict[str, dict]:
    """The pages wider than the screen, taller than MAX_HEIGHT, or (on a desktop) with a table cut off."""
    return {name: s for name, s in sizes.items()
            if s["width"] > s["view"] or s["height"] > MAX_HEIGHT or (s["view"] > 700 and s["cut"])}


def test_long_pages_fit_a_phone_and_a_desktop_with_their_lists_folded(live_server, page: Page, users):
    data = long_names_create(smtp_port=1)
    long_names_people(data, count=50)
    pages = _long_pages(data)
    log_in(page, f"{live_server.url}/", users["admin"].username)

    page.set_viewport_size({"width": 390, "height": 844})
    phone = _measure(page, live_server.url, pages)
    page.set_viewport_size({"width": 1366, "height": 900})
    desktop = _measure(page, live_server.url, pages)
    page.goto(f"{live_server.url}/")
    cut = page.evaluate(TABLE_CUT, "#sequence-results")
    print("390 px:", phone, "\n1366 px:", desktop, "\ndashboard table at 1366 px:", cut)  # the numbers, with -s
    assert not _too_big(phone), _too_big(phone)
    assert not _too_big(desktop), _too_big(desktop)
    assert cut["overflow"] <= 0 and cut["lastRight"] <= cut["view"], cut

    # Folded, not gone: every person on their way is one click away on the sequence page.
    page.goto(f"{live_server.url}{pages['sequence']}")
    links = page.locator(".send-when a[href^='/enrollments/']")
    assert links.count() == 50, links.count()
    expect(links.nth(49)).to_be_hidden()
    page.locator("#send-when-rest > summary").click()
    expect(links.nth(49)).to_be_visible()

    # The enrollment's whole timeline, and the operator log's older entries, are there behind "show all" / a page.
    page.goto(f"{live_server.url}{pages['enrollment']}")
    older = page.locator("#timeline-older tbody tr")
    expect(older.first).to_be_hidden()
    page.locator("#timeline-older > summary").click()
    expect(older.first).to_be_visible()
    page.goto(f"{live_server.url}{pages['operator-log']}?page=2")
    expect(page.locator(".pager")).to_contain_text("Page 2 of")

    # The pause's result, with 53 people in its folded list, fits too.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/sequences/{data['sequence'].pk}/pause/")
    page.click("#confirm")
    expect(page.locator("#result")).to_be_visible()
    paused = page.evaluate(SIZE)
    print("pause result at 390 px:", paused)
    assert paused["width"] <= 390 and paused["height"] <= MAX_HEIGHT, paused


def test_launch_warns_that_follow_ups_will_be_held_and_the_steps_show_their_variants(live_server, page: Page,
                                                                                      users):
    blind = mailbox_create(name="no-inbox", address="sales@no-inbox.example", smtp_port=1, display_name="Sales",
                           daily_cap=100, follow_ups_without_reply_view=False)
    sequence = sequence_create(mailbox=blind, name="Blind follow-ups", waits=(0, 86400, 86400))
    Sequence.objects.filter(pk=sequence.pk).update(status=Sequence.Status.DRAFT)
    enroll(sequence, "reader@example.org")
    step = sequence.steps.get(position=1)
    for name in ("A", "B"):
        variant_save(step_id=step.pk, variant_id=None, name=name, subject=f"Subject {name}", body="Hi", weight=1,
                     actor="test")

    log_in(page, f"{live_server.url}/sequences/{sequence.pk}/launch/", users["admin"].username)
    warning = page.locator(".no-reply-view")
    expect(warning).to_contain_text("no-inbox reads no replies")
    expect(warning).to_contain_text("every follow-up (steps 2 and 3) will be held, not sent")
    expect(warning).to_contain_text("everyone gets step 1 only")

    # A mailbox that reads its replies (or may send follow-ups without) gets no such warning.
    Mailbox.objects.filter(pk=blind.pk).update(follow_ups_without_reply_view=True)
    page.reload()
    expect(page.locator("#confirm")).to_be_visible()
    expect(page.locator(".no-reply-view")).to_have_count(0)

    page.goto(f"{live_server.url}/sequences/{sequence.pk}/")
    expect(page.locator("#step-1 .variants")).to_have_text("2 variants: A, B")
    expect(page.locator("#step-2 .variants")).to_have_count(0)
