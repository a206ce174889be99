"""One upload's counts agree on every page that shows them, in Debian's Chromium: the dry run, its button, the
progress of the run and its result, each count above exactly the rows it lists; rows already in the sequence are
counted as such, never as rejected. The rows that lack a value a step needs move from "rejected" to "will be
enrolled" when the operator chooses to enroll them, and every number follows."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from sequences.models import Enrollment, Step
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_browser import log_in
from tests.ui.test_contacts import run_job

pytestmark = [pytest.mark.django_db(transaction=True)]


def people_csv(path) -> str:
    """42 rows: 35 that can be enrolled, 3 invalid (lines 5, 9, 13), 2 without the city step 2 needs (lines 20,
    21), one already in the sequence (line 30), one suppressed (line 31)."""
    lines = ["email,first_name,company,city"]
    for line in range(2, 44):
        if line in (5, 9, 13):
            lines.append(f"not-an-address-{line},Bad,Row,Oslo")
        elif line in (20, 21):
            lines.append(f"p{line}@people.example,No,City,")
        elif line == 30:
            lines.append("already@people.example,Al,Ready,Rome")
        elif line == 31:
            lines.append("gone@people.example,Gone,Away,Rome")
        else:
            lines.append(f"p{line}@people.example,First{line},Acme,Lima")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("allow_missing", [False, True], ids=["refused", "allowed"])
def test_the_dry_run_the_button_the_progress_and_the_result_count_the_same_rows(live_server, page: Page, users,
                                                                                tmp_path, redis_conn, allow_missing):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 86400), name="Counted",
                             subject="Hi {{ first_name }}", body="Step {position}.")
    Step.objects.filter(sequence=sequence, position=2).update(body="How is {{ city }}?")
    enroll(sequence, "already@people.example", city="Rome")
    suppression_add(value="gone@people.example", reason="unsubscribe", note="asked", actor="ops")
    log_in(page, f"{live_server.url}/sequences/{sequence.pk}/enroll/", users["operator"].username)
    page.set_input_files("#file", people_csv(tmp_path / "people.csv"))
    page.click("#upload")
    page.click("#dry-run")
    dry = page.locator("#dry-run-result")
    expect(dry.locator("#n-rows")).to_have_text("42 rows in the file:")
    expect(dry.locator("#n-valid")).to_have_text("35 rows will be enrolled")
    expect(dry.locator("#n-rejected")).to_have_text("5 rows rejected (listed below with the reason)")
    expect(dry.locator("#n-already")).to_have_text("1 already enrolled in this sequence (left as they are)")
    expect(dry.locator("#n-suppressed")).to_have_text("1 suppressed address — never enrolled")
    expect(dry.locator("#dry-run-rejected tbody tr")).to_have_count(5)
    expect(dry.locator("#dry-run-already tbody tr")).to_have_count(1)
    expect(dry.locator("#dry-run-suppressed tbody tr")).to_have_count(1)
    expect(page.locator("#enroll")).to_have_text("Enroll 35 contacts")
    enrolled, rejected = 35, 5
    if allow_missing:
        page.click("#allow-missing")
        enrolled, rejected = 37, 3
        expect(dry.locator("#n-valid")).to_have_text("37 rows will be enrolled (2 with a note, listed below)")
        expect(dry.locator("#n-rejected")).to_have_text("3 rows rejected (listed below with the reason)")
        expect(dry.locator("#dry-run-rejected tbody tr")).to_have_count(3)
        expect(dry.locator("#dry-run-flagged tbody tr")).to_have_count(2)
        expect(page.locator("#enroll")).to_have_text("Enroll 37 contacts")
    assert Enrollment.objects.filter(sequence=sequence).count() == 1, "a dry run enrolls nobody"

    page.click("#enroll")
    expect(page.locator("#progress-text")).to_have_text(
        f"0 of {enrolled} rows enrolled so far — waiting for a worker.")
    run_job(page.url.rstrip("/").rsplit("/", 1)[-1])
    result = page.locator("#enroll-result")
    expect(result).to_contain_text(f"Enrolled: {enrolled}.", timeout=15000)
    expect(result).to_contain_text(f"Rejected rows: {rejected}; already enrolled: 1; suppressed (never enrolled): 1 "
                                   "— 42 rows in the file.")
    expect(page.locator("#enroll-rejected tbody tr")).to_have_count(rejected)
    expect(page.locator("#enroll-rejected-title")).to_have_text(f"Rejected: {rejected}")
    expect(page.locator("#enroll-already tbody tr")).to_have_count(1)
    expect(page.locator("#enroll-suppressed tbody tr")).to_have_count(1)
    assert Enrollment.objects.filter(sequence=sequence).count() == enrolled + 1
