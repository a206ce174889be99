"""Building and previewing a campaign in a real browser (Debian's Chromium via pytest-playwright)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sequences.models import OperatorAction, SendJob, Sequence
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_browser import log_in
from tests.ui.test_operations import reply_to

pytestmark = [pytest.mark.django_db(transaction=True)]
S = SendJob.State


def test_an_operator_builds_a_two_step_sequence(live_server, page: Page, users, screenshot):
    MailboxFactory(name="sales", address="sam@acme.test")
    log_in(page, f"{live_server.url}/sequences/", users["operator"].username)
    page.click("#new-sequence")
    page.fill("#id_name", "Autumn launch")
    page.select_option("#id_mailbox", label="sales <sam@acme.test>")
    page.click("#save-sequence")

    expect(page.locator("h1")).to_have_text("New step 1")
    expect(page.locator("#thread-default")).to_contain_text("Step 1 starts the thread")
    expect(page.locator("#impact")).to_contain_text("Nobody is in this sequence yet")
    page.fill("#id_subject", "Quick question, {{ first_name }}")
    page.fill("#id_body", "Hi {{ first_name }},\n\nDoes {{ company|default:\"your team\" }} book demos by hand?\n")
    screenshot("campaign-step-1-form")
    page.click("#save-step")

    expect(page.locator(".msg.success")).to_contain_text("Step 1 saved (wait before sending: no wait)")
    page.click("#add-step")
    expect(page.locator("h1")).to_have_text("New step 2")
    expect(page.locator("#id_thread")).to_be_checked()  # threaded by default after step 1, and the form says so
    expect(page.locator("#step-form")).to_contain_text("On by default for step 2 and later")
    page.fill("#id_wait", "3 days")
    page.fill("#id_body", "Just bumping this up, {{ first_name }}.")
    page.click("#save-step")

    expect(page.locator(".msg.success")).to_contain_text("Step 2 saved (wait before sending: 3 days)")
    expect(page.locator("#step-1")).to_contain_text("starts the thread")
    expect(page.locator("#step-2")).to_contain_text("3 days after step 1")
    expect(page.locator("#step-2")).to_contain_text("reply in the same thread")
    screenshot("campaign-sequence-built")
    sequence = Sequence.objects.get(name="Autumn launch")
    assert list(sequence.steps.values_list("position", "wait_seconds", "thread")) == [(1, 0, False),
                                                                                        (2, 259200, True)]
    assert sequence.mailbox.name == "sales"


def test_preview_shows_a_missing_variable_and_a_fallback_and_sends_a_test_to_me(
    live_server, page: Page, users, smtp_server, screenshot
):
    operator = users["operator"]
    operator.email = "operator@acme.test"
    operator.save(update_fields=["email"])
    sequence = make_sequence(mailbox=MailboxFactory(smtp_port=smtp_server.port), steps=1, name="Preview me")
    step = sequence.steps.get()
    step.body = 'Hi {{ first_name }}, how is {{ company|default:"your team" }} in {{ fields.city }}?'
    step.save(update_fields=["body"])
    enroll(sequence, "nocity@example.com", first_name="Ada", company="Acme")
    enroll(sequence, "nocompany@example.com", first_name="Grace", company="", city="Arlington")

    log_in(page, f"{live_server.url}/steps/{step.pk}/preview/?contact=nocity@example.com", operator.username)
    expect(page.locator("#preview-errors")).to_contain_text("Body: missing value for fields.city")
    expect(page.locator("#send-test")).to_have_count(0)
    screenshot("campaign-preview-missing-variable")

    page.fill("#id_contact", "nocompany@example.com")
    page.click("#show-preview")
    expect(page.locator("#preview-body")).to_have_text("Hi Grace, how is your team in Arlington?")
    fallbacks = page.locator("#preview-fallbacks")
    expect(fallbacks).to_contain_text("company is empty for this contact: the fallback is used")
    screenshot("campaign-preview-fallback")
    page.click("#send-test")
    expect(page.locator(".msg.success")).to_contain_text("Test sent to operator@acme.test")
    assert smtp_server.wait_for(1, timeout=10)
    (received,) = smtp_server.received
    assert received.recipients == ["operator@acme.test"]
    assert received.message["Subject"] == "[Test] Hello Grace"
    assert received.message["X-Outreach-Test"]
    assert not SendJob.objects.filter(message_id=received.message_id).exists()
    assert OperatorAction.objects.filter(action="send_test", actor=operator.username).count() == 1
    screenshot("campaign-test-sent")


def test_per_step_counts_after_sends_and_a_reply_and_the_phone_layout(
    live_server, page: Page, users, smtp_server, screenshot
):
    mailbox = MailboxFactory(smtp_port=smtp_server.port)
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 0), name="Counted")
    for n in range(3):
        enroll(sequence, f"person{n}@example.com")
    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w").state == S.SUBMITTED
    replied = SendJob.objects.get(enrollment__contact__email="person0@example.com", step__position=1)
    reply_to(replied)  # a human reply, through the real ingestion: person0 stops
    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w").state == S.SUBMITTED
    assert len(smtp_server.received) == 5

    log_in(page, f"{live_server.url}/sequences/{sequence.pk}/", users["operator"].username)
    step1 = page.locator("#step-results tr[data-step='1'] td")
    expect(step1.nth(1)).to_have_text("3")  # sent
    expect(step1.nth(2)).to_have_text("1 33.3%")  # replied
    step2 = page.locator("#step-results tr[data-step='2'] td")
    expect(step2.nth(1)).to_have_text("2")
    expect(step2.nth(2)).to_have_text("0 0.0%")
    screenshot("campaign-step-results")
    page.goto(f"{live_server.url}/")
    expect(page.locator("#sequence-results")).to_contain_text("Counted")
    screenshot("campaign-dashboard-results")

    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{live_server.url}/sequences/{sequence.pk}/")
    expect(page.locator("#step-results")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the page scrolls sideways on a phone ({width} px)"
    last_column = "#step-results tr[data-step='2'] td >> nth=8"  # canceled by the final check
    expect(page.locator(last_column)).to_have_attribute("data-label", "Canceled by the final check")
    for selector in ("#add-step", "#export-sequence", "h1", last_column, "#step-2"):
        box = page.locator(selector).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375, (selector, box)
    expect(page.locator("h1")).to_have_text(re.compile(r"^Counted"))
    screenshot("campaign-sequence-phone")
