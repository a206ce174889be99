"""Contacts and enrollment in Debian's Chromium: a 1,000-row CSV upload, a bulk pause, the phone layout (375 px)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sequences.models import Enrollment, SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_browser import log_in
from tests.ui.test_contacts import run_job

pytestmark = [pytest.mark.django_db(transaction=True)]
S = SendJob.State
PHONE = {"width": 375, "height": 812}


def people_csv(path, n: int = 1000) -> str:
    """n rows: 3 bad ones (lines 11, 501, 1001) and 2 suppressed addresses (lines 21 and 22)."""
    lines = ["email,first_name,last_name,company,timezone,plan"]
    for i in range(2, n + 2):
        if i in (11, 501):
            lines.append(f"not-an-address-{i},Bad,Row,Nowhere,UTC,none")
        elif i == n + 1:
            lines.append(f"p{i}@people.example,Bad,Zone,Acme,Mars/Olympus,none")
        elif i == 21:
            lines.append("Unsubscribed@People.example,Un,Sub,Acme,UTC,gold")
        elif i == 22:
            lines.append(f"p{i}@blocked.example,Dom,Ain,Blocked Inc,UTC,gold")
        else:
            lines.append(f"p{i}@people.example,First{i},Last{i},Company {i % 7},Europe/Berlin,silver")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_enroll_a_thousand_row_csv_through_the_upload(live_server, page: Page, users, screenshot, tmp_path):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 86400), name="Big upload")
    suppression_add(value="unsubscribed@people.example", reason="unsubscribe", note="link", actor="ops")
    suppression_add(value="@blocked.example", reason="manual", note="whole domain", actor="ops")
    log_in(page, f"{live_server.url}/sequences/{sequence.pk}/", users["operator"].username)
    page.click("#enroll-contacts")
    page.set_input_files("#file", people_csv(tmp_path / "people.csv"))
    page.click("#upload")
    expect(page.locator("h1")).to_contain_text("Enroll people.csv")
    expect(page.locator("#col5")).to_have_value("field")  # "plan" is kept as a custom field
    page.click("#dry-run")
    dry = page.locator("#dry-run-result")
    expect(dry.locator("#n-valid")).to_have_text("995 rows will be enrolled")
    expect(dry.locator("#n-rejected")).to_have_text("3 rows rejected (listed below with the reason)")
    expect(dry.locator("#n-already")).to_have_text("0 already enrolled in this sequence (left as they are)")
    expect(dry.locator("#n-suppressed")).to_have_text("2 suppressed addresses — never enrolled")
    expect(dry).to_contain_text("timezone: unknown time zone 'Mars/Olympus'")
    screenshot("enroll-dry-run")
    assert Enrollment.objects.filter(sequence=sequence).count() == 0

    page.click("#enroll")
    expect(page.locator("#progress")).to_be_visible()
    screenshot("enroll-progress")
    run_job(page.url.rstrip("/").rsplit("/", 1)[-1])  # the worker: the page's progress bar sees it finish
    result = page.locator("#enroll-result")
    expect(result).to_contain_text("Enrolled: 995.", timeout=15000)
    expect(result).to_contain_text("Rejected rows: 3; already enrolled: 0; suppressed (never enrolled): 2 — 1000 rows "
                                   "in the file.")
    expect(page.locator("#enroll-rejected tbody tr")).to_have_count(3)
    expect(page.locator("#enroll-suppressed tbody tr")).to_have_count(2)
    screenshot("enroll-result")
    page.reload()
    expect(page.locator("#enroll-result")).to_contain_text("Enrolled: 995.")
    assert Enrollment.objects.filter(sequence=sequence).count() == 995, "reloading the result enrolls nothing"
    assert SendJob.objects.filter(enrollment__sequence=sequence, state=S.SCHEDULED).count() == 995
    assert not Enrollment.objects.filter(
        contact__email__in=["unsubscribed@people.example", "p22@blocked.example"]
    ).exists()

    page.goto(f"{live_server.url}/contacts/?q=First500")
    expect(page.locator("#contacts tbody tr")).to_have_count(1)
    page.click("text=p500@people.example")
    expect(page.locator("#contact-enrollments")).to_contain_text("Big upload")


def test_bulk_pause_with_the_honest_summary(live_server, page: Page, users, screenshot, smtp_server):
    sequence = make_sequence(
        mailbox=MailboxFactory(smtp_port=smtp_server.port), steps=2, waits=(0, 3600), name="Bulk spring"
    )
    sent = enroll(sequence, "long-ago@example.com")
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w").state == S.SUBMITTED
    enroll(sequence, "waiting@example.com")
    enroll(sequence, "untouched@example.com")
    log_in(page, f"{live_server.url}/sequences/{sequence.pk}/", users["operator"].username)
    page.check(f"input[name=ids][value='{sent.pk}']")
    page.check("input[aria-label='Select waiting@example.com']")
    page.click("#bulk-pause")
    confirm = page.locator(".card")
    expect(page.locator("h1")).to_have_text("Pause 2 enrollments in “Bulk spring”?")
    expect(confirm).to_contain_text("2 emails waiting to be sent will be canceled — they will not be sent")
    expect(confirm).to_contain_text("1 already sent — cannot be recalled")
    screenshot("bulk-pause-confirm")
    page.click("#confirm")
    result = page.locator("#result")
    expect(result).to_contain_text("Paused 2 of 2 selected enrollments.")
    expect(result).to_contain_text("2 emails canceled — they will not be sent.")
    expect(result).to_contain_text("1 had already been sent before you paused; it cannot be recalled.")
    result.locator("#result-people > summary").click()
    expect(result.locator(".label.never-sent")).to_have_count(2)
    screenshot("bulk-pause-result")
    statuses = dict(Enrollment.objects.values_list("contact__email", "status"))
    assert statuses == {
        "long-ago@example.com": "paused",
        "waiting@example.com": "paused",
        "untouched@example.com": "active",
    }
    assert len(smtp_server.received) == 1


def _fits(page: Page, selector: str) -> None:
    """Every matching element lies inside the 375 px viewport: nothing is off-screen to the right."""
    boxes = page.locator(selector).evaluate_all("els => els.map(e => e.getBoundingClientRect().right)")
    assert boxes, selector
    assert max(boxes) <= PHONE["width"] + 0.5, (selector, max(boxes))


def test_phone_layout_of_the_enrollment_and_contacts_pages(live_server, page: Page, users, screenshot, world):
    page.set_viewport_size(PHONE)
    log_in(page, f"{live_server.url}/sequences/{world['sequence'].pk}/", users["operator"].username)
    latest = page.locator("#enrollments td[data-label='Latest job']").first
    expect(latest).to_be_visible()
    expect(latest).to_contain_text(re.compile(r"[Ss]tep 1: (Scheduled|Canceled)"))
    _fits(page, "#enrollments td")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("phone-sequence-enrollments")

    page.goto(f"{live_server.url}/enrollments/{world['active'].pk}/")
    _fits(page, "table.cards td")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("phone-enrollment")

    page.goto(f"{live_server.url}/contacts/?q=@example.com")
    expect(page.locator("#contacts tbody tr")).to_have_count(2)
    _fits(page, "#contacts td")
    # An address wraps, if at all, only because it is longer than the screen: never mid-word in a narrow column.
    link = page.locator("#contacts td.address a").first
    assert link.evaluate("a => a.getClientRects().length") == 1
    screenshot("phone-contacts")
    page.click("text=active@example.com")
    expect(page.locator("#contact-enrollments td").first).to_be_visible()
    _fits(page, "table.cards td")
    screenshot("phone-contact")

    page.goto(f"{live_server.url}/")
    chart = page.locator("svg.chart")
    if chart.count():
        box = chart.bounding_box()
        assert box["x"] + box["width"] <= PHONE["width"] + 0.5, "the chart's last days are on screen"
    screenshot("phone-dashboard")


def _overlap(a, b) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and (b["y"] < a["y"] + a["height"])
    )


def test_incident_picture_has_no_overlapping_labels_and_no_guide_across_one(live_server, page: Page, users, screenshot):
    from tests.ui.test_operations import reply_to, submit

    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    enroll(sequence, "late@example.com")
    (job_id,) = dispatch_due()
    submit(job_id)
    job = SendJob.objects.select_related("enrollment__contact", "enrollment__sequence").get(pk=job_id)
    reply_to(job, internaldate=job.claimed_at)
    log_in(page, f"{live_server.url}/incidents/jobs/{job_id}/", users["staff"].username)
    svg = page.locator("svg.lanes")
    expect(svg).to_be_visible()
    texts = svg.locator("text").evaluate_all(
        "els => els.map(e => { const b = e.getBBox(); "
        "return {x: b.x, y: b.y, width: b.width, height: b.height, t: e.textContent}; })"
    )
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            assert not _overlap(a, b), (a, b)
    guides = svg.locator("line.guide").evaluate_all(
        "els => els.map(e => { const b = e.getBBox(); return {x: b.x - 0.5, y: b.y, width: 1, height: b.height}; })"
    )
    assert guides
    for guide in guides:
        for text in texts:
            assert not _overlap(guide, text), (guide, text)
    points = page.locator("#lane-points li")
    expect(points).to_have_count(svg.locator("circle").count())
    expect(points.first).to_contain_text("queued")
    screenshot("incident-lanes-numbered")
