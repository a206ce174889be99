"""The operator's second hour in Debian's Chromium, with the worker and the IDLE watcher running as processes:

- a relay that needs no login ("No login to send") is added, checked and saved in one pass, each password typed
  once, and sends;
- the demo mailbox is edited and saved without "Save anyway", and its form says it sends without a login;
- "Send test to me" sends the variant the preview shows.

Real parts: live_server, aiosmtpd servers, Dovecot, `manage.py rqworker` and `watch_mailboxes` (the check of the
form runs as a job of the worker).
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from mailboxes.models import Mailbox
from proving.harness.smtp import SmtpServer
from sequences.models import SendJob
from sequences.tasks import dispatch
from tests.factories import enroll, make_sequence
from tests.mailboxes.test_mailbox_form_browser import processes, until  # noqa: F401 - fixtures
from tests.ui.conftest import PASSWORD, browser_type_launch_args, roles, screenshot, users  # noqa: F401 - fixtures
from tests.ui.test_preview_variant import _setup

pytestmark = [pytest.mark.one_database("the browser's pages and the form's check", on="sqlite"),
              pytest.mark.django_db(transaction=True), pytest.mark.slow]
IMAP_PASSWORD = "imap-Relay-5c1e77"  # noqa: S105 - a test Dovecot account's
S = SendJob.State


def _log_in(page: Page, url: str, username: str) -> None:
    page.goto(url)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("#login")


def test_a_relay_without_login_is_added_checked_and_saved_in_one_pass_and_sends(
    processes, live_server, page: Page, users, dovecot  # noqa: F811
):
    dovecot.add_users({"sales": IMAP_PASSWORD})
    with SmtpServer() as relay:  # takes mail from this host without a login, as a local Postfix does
        _log_in(page, f"{live_server.url}/mailboxes/new/?preset=other", users["operator"].username)
        page.get_by_label("Name", exact=True).fill("relay")
        page.get_by_label("Address", exact=True).fill("sales@acme.test")
        page.get_by_label("SMTP host", exact=True).fill("127.0.0.1")
        page.get_by_label("SMTP port", exact=True).fill(str(relay.port))
        page.get_by_label("SMTP security", exact=True).select_option("none")
        page.get_by_label("No login to send", exact=True).check()
        expect(page.get_by_label("SMTP username", exact=True)).to_be_hidden()
        expect(page.get_by_label("SMTP password", exact=True)).to_be_hidden()
        page.get_by_label("IMAP host", exact=True).fill(dovecot.host)
        page.get_by_label("IMAP port", exact=True).fill(str(dovecot.port))
        page.get_by_label("IMAP security", exact=True).select_option("none")
        page.get_by_label("IMAP username", exact=True).fill("sales")
        page.get_by_label("IMAP password", exact=True).fill(IMAP_PASSWORD)  # typed once, for Check and Save
        page.click("#check-connection")
        check = page.locator("#check")
        expect(check).to_contain_text("Connection works: SMTP and IMAP pass", timeout=30_000)
        expect(check).not_to_contain_text("AUTH")  # nothing logged in to send
        expect(page.get_by_label("No login to send", exact=True)).to_be_checked()
        page.click("#save-mailbox")
        expect(page.locator("#check")).to_contain_text("relay: Saved. SMTP and IMAP pass", timeout=30_000)
        expect(page.locator("#save-anyway")).to_have_count(0)

        mailbox = Mailbox.objects.get(name="relay")
        assert (mailbox.smtp_username, mailbox.smtp_password_sealed, mailbox.blocked_at) == ("", "", None)
        assert mailbox.imap_password_sealed  # the IMAP password typed before Check was kept for Save
        enrollment = enroll(make_sequence(mailbox=mailbox, steps=1, name="Relay"), "ada@example.com")
        dispatch()
        until(lambda: SendJob.objects.filter(enrollment=enrollment, state=S.SUBMITTED).exists(), 60,
              "the running worker to send through the relay")
        assert [r.recipients for r in relay.received] == [["ada@example.com"]]


def test_the_demo_mailbox_is_edited_and_saved_without_save_anyway(
    processes, live_server, page: Page, users, monkeypatch  # noqa: F811
):
    with SmtpServer() as capture:
        monkeypatch.setenv("OUTREACH_CAPTURE_PORT", str(capture.port))
        call_command("setup_demo", stdout=io.StringIO())
        demo = Mailbox.objects.get()
        _log_in(page, f"{live_server.url}/mailboxes/{demo.pk}/edit/", users["operator"].username)
        expect(page.get_by_label("No login to send", exact=True)).to_be_checked()  # what the demo's relay needs
        expect(page.get_by_label("SMTP password", exact=True)).to_be_hidden()
        page.get_by_label("Daily cap", exact=True).fill("75")
        page.click("#save-mailbox")
        expect(page.locator("#check")).to_contain_text(f"{demo.name}: Saved.", timeout=30_000)
        expect(page.locator("#save-anyway")).to_have_count(0)
        demo.refresh_from_db()
        assert (demo.daily_cap, demo.smtp_username, demo.blocked_at) == (75, "", None)


def test_send_test_to_me_sends_the_variant_the_preview_shows(live_server, page: Page, users, smtp_server):
    _client, _sequence, step, got = _setup(users, smtp_server.port)
    email = next(e for e, name in got.items() if name == "A")  # the split gives this person A
    _log_in(page, f"{live_server.url}/steps/{step.pk}/preview/?contact={email}", users["operator"].username)
    page.get_by_label("Variant", exact=True).select_option(label="B")
    page.click("#show-preview")
    expect(page.locator("#preview-variant")).to_have_text("B")
    subject = page.locator("#preview-subject").inner_text()
    assert subject.startswith("Subject B for ")
    page.click("#send-test")
    assert smtp_server.wait_for(1, timeout=20)
    message = smtp_server.received[-1].message
    assert message["Subject"] == f"[Test] {subject}"
    assert "this is text B." in message.get_payload(decode=True).decode()
