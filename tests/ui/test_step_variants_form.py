"""The step editor of a step with A/B variants, in Debian's Chromium: it says plainly that the step sends its
variants (named, with links), and folds the step's own subject and body away as what they are: used only for
people who reach the step after every variant is stopped (`sequences.services.scheduling.schedule_next` gives a
job no variant then, and `messages.step_texts` sends the step's own text)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sequences.models import Step, StepVariant
from sequences.services.campaigns import step_save
from sequences.services.variants import variant_save, variant_stop
from tests.factories import MailboxFactory, make_sequence
from tests.ui.test_browser import log_in

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_step_with_variants_says_it_sends_them_and_folds_its_own_text(live_server, page: Page, users, screenshot):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 86400), name="Variants")
    step = sequence.steps.get(position=2)
    # Its own body emptied: while a variant runs nothing of it is sent, so the form need not ask for one.
    step_save(sequence_id=sequence.pk, step_id=step.pk, subject="", body="", wait_seconds=86400, thread=True,
              actor="fixture")
    a = variant_save(step_id=step.pk, variant_id=None, name="A", subject="", body="Short one", weight=1, actor="ops")
    b = variant_save(step_id=step.pk, variant_id=None, name="B", subject="", body="Long one", weight=1, actor="ops")

    log_in(page, f"{live_server.url}/steps/{step.pk}/edit/", users["operator"].username)
    sends = page.locator("#sends-variants")
    expect(sends).to_contain_text("This step sends its A/B variants: A, B.")
    expect(sends.get_by_role("link", name="A", exact=True)).to_have_attribute("href", f"/variants/{a.pk}/edit/")
    expect(sends.get_by_role("link", name="B", exact=True)).to_have_attribute("href", f"/variants/{b.pk}/edit/")
    own = page.locator("#own-text")
    expect(own.locator("summary")).to_have_text(
        "The step's own subject and body: used only if every variant is stopped")
    expect(page.locator("#id_body")).to_be_hidden()  # folded: not shown as if it mattered
    expect(page.locator("body")).not_to_contain_text("are not used")
    screenshot("step-with-variants")

    page.fill("#id_wait", "2 days")
    page.click("#save-step")
    expect(page).to_have_url(re.compile(rf"/sequences/{sequence.pk}/$"))
    assert Step.objects.get(pk=step.pk).wait_seconds == 2 * 86400

    page.goto(f"{live_server.url}/steps/{step.pk}/edit/")
    own.locator("summary").click()
    expect(own).to_contain_text("people who reach this step after every variant is stopped get this text")
    expect(page.locator("#id_body")).to_be_visible()


def test_once_every_variant_is_stopped_the_step_says_its_own_text_is_sent(live_server, page: Page, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, name="All stopped")
    step = sequence.steps.get()
    a = variant_save(step_id=step.pk, variant_id=None, name="A", subject="Hi", body="A text", weight=1, actor="ops")
    variant_stop(variant_id=a.pk, actor="ops")

    log_in(page, f"{live_server.url}/steps/{step.pk}/edit/", users["operator"].username)
    expect(page.locator("#sends-variants")).to_contain_text(
        "Every A/B variant of this step is stopped (A): people who reach it from now on get the step's own "
        "subject and body below.")
    expect(page.locator("#own-text")).to_have_count(0)
    expect(page.locator("#id_body")).to_be_visible()


def test_the_variant_form_says_when_the_steps_own_text_is_used(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, name="Variant form")
    step = sequence.steps.get()
    a = variant_save(step_id=step.pk, variant_id=None, name="A", subject="Hi", body="A text", weight=1, actor="ops")
    b = variant_save(step_id=step.pk, variant_id=None, name="B", subject="Hey", body="B text", weight=1, actor="ops")
    client.force_login(users["operator"])
    page = client.get(f"/variants/{a.pk}/edit/").content.decode()
    assert ("While one of its variants runs, the step sends only its variants' text; its own subject and body are "
            "sent only to people who reach it after every variant is stopped.") in page
    assert f'Other variants of this step: <a href="/variants/{b.pk}/edit/">B</a>.' in page
    assert StepVariant.objects.filter(step=step).count() == 2
