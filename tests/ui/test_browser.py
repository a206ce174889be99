"""The operator UI in a real browser (Debian's Chromium via pytest-playwright) against live_server.

Few and fast on purpose: the permission matrix, XSS and CSV tests cover the
rest with Django's test client.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sequences.models import SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.races.helpers import Gate, Worker
from tests.ui.conftest import PASSWORD

pytestmark = [pytest.mark.django_db(transaction=True)]
S = SendJob.State


def log_in(page: Page, url: str, username: str) -> None:
    """Open a page while logged out: the UI sends us to the login form, then back."""
    page.goto(url)
    expect(page).to_have_url(re.compile(r"/login/\?next="))
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("#login")


def test_operator_pauses_a_sequence_with_one_job_mid_send_and_one_already_submitted(
    live_server, page: Page, smtp_server, users, screenshot
):
    mailbox = MailboxFactory(smtp_port=smtp_server.port)
    sequence = make_sequence(mailbox=mailbox, steps=1, name="Spring launch")
    enroll(sequence, "already-sent@example.com", first_name="Sent")
    (first,) = dispatch_due()
    assert send_job_process(job_id=first, worker_id="worker-a").state == S.SUBMITTED
    enroll(sequence, "held@example.com", first_name="Held")
    (second,) = dispatch_due()
    gate = Gate("claimed")
    worker = Worker(lambda: send_job_process(job_id=second, worker_id="worker-b"))
    worker.start()
    gate.wait()  # the second job is claimed and its worker is paused before the final check
    try:
        log_in(page, f"{live_server.url}/sequences/{sequence.pk}/", users["operator"].username)
        expect(page.locator("h1")).to_contain_text("Spring launch")
        page.click("#pause-sequence")
        confirm = page.locator(".card")
        expect(confirm).to_contain_text("1 email waiting to be sent will be canceled — it will not be sent")
        expect(confirm).to_contain_text("1 is being prepared right now")
        expect(confirm).to_contain_text("1 already sent — cannot be recalled")
        screenshot("operator-pause-confirm")
        page.click("#confirm")
        result = page.locator("#result")
        expect(result).to_contain_text("Paused Spring launch.")
        expect(result).to_contain_text("1 email canceled — it will not be sent.")
        expect(result).to_contain_text("1 had already been sent before you paused; it cannot be recalled.")
        result.locator("#result-people > summary").click()
        canceled = result.locator(".label.never-sent")
        expect(canceled).to_have_count(1)
        expect(canceled).to_have_text("canceled — will not be sent")
        recalled = result.locator(".label.cannot-recall")
        expect(recalled).to_have_count(1)
        expect(recalled).to_have_text(re.compile(r"^sent .+ UTC — cannot be recalled$"))
        screenshot("operator-pause-result")
    finally:
        gate.release()
    assert worker.outcome().state == "lost"  # its final check saw the pause
    assert len(smtp_server.received) == 1, "only the job submitted before the pause left"
    held = SendJob.objects.get(pk=second)
    assert (held.state, held.cancel_reason) == (S.CANCELED, "sequence_paused")

    # The held enrollment's timeline: database-clock times to the millisecond, the worker, the versions.
    page.click("text=held@example.com >> nth=0")
    expect(page.locator("h1")).to_contain_text("held@example.com")
    timeline = page.locator("table").last
    expect(timeline).to_contain_text("job_claimed")
    expect(timeline).to_contain_text("worker-b")
    expect(timeline).to_contain_text("sequence_paused")
    expect(timeline.locator("td.mono").first).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$"))
    screenshot("operator-enrollment-timeline")
    page.goto(f"{live_server.url}/incidents/jobs/{first}/")
    expect(page.locator("svg.lanes")).to_be_visible()
    screenshot("operator-incident-lanes")
    page.goto(f"{live_server.url}/")
    screenshot("operator-dashboard")


def test_staff_sees_no_pause_button_and_gets_a_403_page(live_server, page: Page, users, world, screenshot):
    sequence = world["sequence"]
    log_in(page, f"{live_server.url}/sequences/{sequence.pk}/", users["staff"].username)
    expect(page.locator("h1")).to_contain_text(sequence.name)
    expect(page.locator("#pause-sequence")).to_have_count(0)
    expect(page.locator("text=Pause sequence")).to_have_count(0)
    screenshot("staff-sequence-no-pause-button")
    response = page.goto(f"{live_server.url}/sequences/{sequence.pk}/pause/")
    assert response.status == 403
    expect(page.locator("h1")).to_have_text("403 — not allowed")
    expect(page.locator(".msg.error")).to_contain_text("operators or admins role")
    screenshot("staff-403")


def test_admin_lifts_a_suppression_with_a_justification_and_history_keeps_both(
    live_server, page: Page, users, screenshot
):
    suppression_add(value="lifted@example.com", reason="complaint", note="marked as spam", actor="ops",
                             source="inbound:7")
    log_in(page, f"{live_server.url}/suppressions/?q=lifted@example.com", users["admin"].username)
    page.click("text=Lift…")
    page.fill("#id_note", "Customer asked by phone on 2026-03-02 to hear from us again")
    screenshot("admin-lift-form")
    page.click("#lift")
    expect(page.locator(".msg.success")).to_contain_text("Lifted lifted@example.com")
    rows = page.locator("#history tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("lifted")
    expect(rows.nth(0)).to_contain_text("Customer asked by phone on 2026-03-02 to hear from us again")
    expect(rows.nth(0)).to_contain_text(users["admin"].username)
    expect(rows.nth(1)).to_contain_text("suppressed")
    expect(rows.nth(1)).to_contain_text("marked as spam")
    screenshot("admin-suppression-history")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot("admin-suppression-history-phone")
