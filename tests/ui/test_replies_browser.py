"""The replies inbox end to end, in Debian's Chromium: the real worker sends step 1 to two people, both answer
into a real Dovecot, the running IDLE watcher ingests the replies, and they appear on the Replies page with their
suggested categories; the operator answers the keen one from the page (the aiosmtpd server receives it from the
mailbox, threaded under the person's Message-ID), re-labels the other with a keyboard shortcut, and the new
category survives a reload and is in the operator log. The page reads on a 390 px phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from inbound.models import Conversation
from proving.harness import mails
from sequences.models import OperatorAction, SendJob
from sequences.tasks import dispatch
from tests.factories import enroll, make_sequence
from tests.mailboxes.test_mailbox_form_browser import processes, until  # noqa: F401 - the worker and watcher
from tests.ui.test_browser import log_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
KEEN = "Sounds great, tell me more — can you send pricing?"
DECLINING = "Thanks, but we're not interested."


def test_replies_arrive_categorized_are_answered_and_relabelled(
    imap_mailbox, smtp_server, dovecot, processes, live_server, page: Page, users, screenshot  # noqa: F811
):
    sequence = make_sequence(mailbox=imap_mailbox, steps=2, waits=(0, 3600), name="Replies inbox")
    keen = enroll(sequence, "keen@example.com", first_name="Kim")
    nope = enroll(sequence, "nope@example.com", first_name="Noel")
    dispatch()
    until(lambda: SendJob.objects.filter(state=SendJob.State.SUBMITTED).count() == 2, 60,
          "the running worker to send step 1 to both")
    sent = {j.enrollment_id: j.message_id for j in SendJob.objects.filter(state=SendJob.State.SUBMITTED)}
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=sent[keen.pk], sender="keen@example.com",
                                                 name="Kim", body=KEEN, message_id="<kim-1@prospect.example>",
                                                 subject="Re: Hello Kim"))
    dovecot.append("alice", "INBOX", mails.reply(to_message_id=sent[nope.pk], sender="nope@example.com",
                                                 name="Noel", body=DECLINING, subject="Re: Hello Noel"))
    until(lambda: Conversation.objects.count() == 2, 45, "the watcher to ingest both replies")

    log_in(page, f"{live_server.url}/replies/", users["operator"].username)
    cards = page.locator("#reply-cards li")
    expect(cards).to_have_count(2)
    keen_card = cards.filter(has_text="keen@example.com")
    nope_card = cards.filter(has_text="nope@example.com")
    keen_label, nope_label = keen_card.locator(".cat").inner_text(), nope_card.locator(".cat").inner_text()
    screenshot("replies-list")

    # Answer the keen one from its page.
    keen_card.locator(".reply-open").click()
    page.fill("#answer-body", "Pricing attached: 40 EUR a seat.\n\nOperator")
    page.click("#answer-send")
    expect(page.locator(".msg.success")).to_contain_text("Sent to keen@example.com")
    answer = smtp_server.received[-1]
    assert answer.sender == imap_mailbox.address and answer.recipients == ["keen@example.com"]
    assert answer.message["In-Reply-To"] == "<kim-1@prospect.example>"
    assert answer.message["References"].split() == [sent[keen.pk], "<kim-1@prospect.example>"]
    assert answer.message["Subject"] == "Re: Hello Kim"
    expect(page.locator("ol.thread")).to_contain_text("Pricing attached")
    screenshot("replies-answered")

    # Re-label the other one with the keyboard (4: wrong person / referral); it holds after a reload.
    page.goto(f"{live_server.url}/replies/{Conversation.objects.get(enrollment=nope).pk}/")
    page.keyboard.press("4")
    expect(page.locator("#category-now .cat")).to_have_text("Wrong person / referral")
    page.reload()
    expect(page.locator("#category-now .cat")).to_have_text("Wrong person / referral")
    assert OperatorAction.objects.filter(action="reply_categorize", actor=users["operator"].username,
                                         target_id=nope.pk, result__category="wrong_person").exists()
    page.goto(f"{live_server.url}/log/")
    expect(page.locator("main")).to_contain_text("reply_categorize")

    page.set_viewport_size({"width": 390, "height": 800})
    for path in ("/replies/?status=all", f"/replies/{Conversation.objects.get(enrollment=keen).pk}/"):
        page.goto(live_server.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} scrolls sideways on a phone ({width} px)"
    screenshot("replies-phone")

    # The suggested categories, as the classifier gave them when the replies arrived.
    assert keen_label == "Interested"
    assert nope_label == "Not interested"
