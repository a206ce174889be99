"""A pause reports what it did in plain words: counts, each step's counts, and the people folded in a paged
list; the page stays short however many people it concerned."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from sequences.models import SendJob
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import enroll, make_sequence
from tests.ui.test_browser import log_in
from tests.ui.test_operations import submit

S = SendJob.State
PEOPLE = 35
SENT = 2


def _sequence_with_people(mailbox, name: str = "Spring launch"):
    """35 people in a two-step sequence; the first two got step 1 (through the real SMTP server)."""
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 86400), name=name)
    for i in range(SENT):
        enroll(sequence, f"sent-{i}@example.com", first_name=f"Sent{i}")
        (job_id,) = dispatch_due()
        assert send_job_process(job_id=job_id, worker_id=f"worker-{i}").state == S.SUBMITTED
    for i in range(PEOPLE - SENT):
        enroll(sequence, f"person-{i:02d}@example.com", first_name=f"Person{i}")
    return sequence


@pytest.mark.django_db(transaction=True)
def test_pausing_35_people_gives_a_short_page_that_says_what_was_canceled_and_what_had_left(
    live_server, page: Page, smtp_server, mailbox, users, screenshot
):
    sequence = _sequence_with_people(mailbox)
    page.set_viewport_size({"width": 1366, "height": 900})
    log_in(page, f"{live_server.url}/sequences/{sequence.pk}/", users["operator"].username)
    page.click("#pause-sequence")
    page.click("#confirm")
    result = page.locator("#result")
    expect(result).to_contain_text("Paused Spring launch.")
    # 33 step-1 emails and the two step-2 follow-ups of the people already mailed.
    expect(result).to_contain_text("35 emails canceled — they will not be sent. "
                                   "2 had already been sent before you paused; they cannot be recalled.")
    expect(result).to_contain_text("Step 1: 33 canceled, 2 already sent.")
    expect(result).to_contain_text("Step 2: 2 canceled.")
    people = page.locator("#result-people")
    expect(people).not_to_have_attribute("open", "")
    height = page.evaluate("document.body.scrollHeight")
    screenshot("pause-summary-35-people")
    print(f"page height after pausing {PEOPLE} people: {height} px")
    assert height <= 3000, f"the page after pausing 35 people is {height} px tall"

    people.locator("summary").first.click()
    expect(people.locator("ul.people > li")).to_have_count(20)
    expect(people).to_contain_text("canceled — will not be sent")
    # Numbers, versions and Message-IDs only behind each row's own "details", folded.
    expect(people.locator("ul.people > li > details:not([open])")).to_have_count(20)
    expect(people.locator("ul.people > li > details").first).to_contain_text("Message-ID")
    people.locator("a", has_text="Next ›").click()
    people = page.locator("#result-people")
    expect(people).to_have_attribute("open", "")
    expect(people.locator("ul.people > li")).to_have_count(PEOPLE + SENT - 20)
    expect(people.locator(".label.cannot-recall")).to_have_count(SENT)
    expect(people.locator(".label.cannot-recall").first).to_have_text(
        re.compile(r"^sent \w{3} \d{1,2} \w{3} \d\d:\d\d UTC — cannot be recalled$"))
    assert SendJob.objects.filter(enrollment__sequence=sequence, state=S.CANCELED).count() == PEOPLE
    assert len(smtp_server.received) == SENT


def test_a_bulk_stop_and_a_resume_say_what_they_did_in_words(client, users, mailbox):
    sequence = make_sequence(mailbox=mailbox, steps=1, name="Bulk words")
    chosen = [enroll(sequence, f"b{i}@example.com") for i in range(3)]
    client.force_login(users["operator"])
    url = reverse("enrollment_bulk", args=[sequence.pk])
    response = client.post(url, {"action": "stop", "ids": [e.pk for e in chosen]})
    assert re.fullmatch(rf"/sequences/{sequence.pk}/\?result=[\w-]+#result", response["Location"])
    html = client.get(response["Location"]).content.decode()
    assert "Stopped 3 of 3 selected enrollments." in html
    assert "3 emails canceled — they will not be sent." in html
    assert "had already been sent" not in html  # nothing had left: nothing is said to have
    assert "Step 1: 3 canceled." in html
    assert " v2" not in html and "job_ids" not in html
    # An ordinary visit to the page does not show it again; the URL that names it does.
    assert 'id="result"' not in client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert 'id="result"' in client.get(response["Location"]).content.decode()

    resumed = client.post(reverse("enrollment_resume", args=[chosen[0].pk]), follow=True).content.decode()
    assert f"Resumed {chosen[0].contact.email} in Bulk words." in resumed


def test_the_enrollment_page_says_what_its_stop_did_in_words(client, users, mailbox):
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="One person")
    enrollment = enroll(sequence, "one@example.com")
    (job_id,) = dispatch_due()
    submit(job_id)
    client.force_login(users["operator"])
    html = client.post(reverse("enrollment_stop", args=[enrollment.pk]), follow=True).content.decode()
    assert "1 email canceled — it will not be sent. 1 had already been sent before you stopped; it cannot be " \
           "recalled." in html
    html = client.get(reverse("enrollment_detail", args=[enrollment.pk])).content.decode()
    assert "1 had already been sent before the stop; it cannot be recalled." in html
