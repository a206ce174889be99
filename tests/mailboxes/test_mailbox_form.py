"""The add / edit mailbox pages (Django's test client): check before save, save anyway blocks, secrets never shown.

Real servers on loopback: the aiosmtpd server with AUTH and Dovecot with passwords.
"""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV, unseal
from mailboxes.transports.smtp import POOL
from proving.harness.smtp import SmtpServer
from sequences.models import OperatorAction
from tests.mailboxes.checking import submit
from tests.ui.conftest import roles, users  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db
SMTP_PASSWORD = "smtp-Form-5d2b77"  # noqa: S105 - a test server's
IMAP_PASSWORD = "alicepw"  # noqa: S105 - the test Dovecot's (it sits in every Dovecot test)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())


@pytest.fixture
def smtp_auth():
    with SmtpServer(credentials={"sales@acme.test": SMTP_PASSWORD}) as server:
        yield server
    POOL.close_all()


@pytest.fixture
def operator(client, users):  # noqa: F811 - the fixture imported above
    client.force_login(users["operator"])
    return client


def form_data(smtp_auth, dovecot, **over) -> dict:
    data = {
        "preset": "other", "name": "sales", "address": "sales@acme.test", "display_name": "Acme Sales",
        "auth": "password", "smtp_host": "127.0.0.1", "smtp_port": smtp_auth.port, "smtp_security": "none",
        "smtp_username": "", "smtp_password": SMTP_PASSWORD, "imap_enabled": "on", "imap_host": dovecot.host,
        "imap_port": dovecot.port, "imap_security": "none", "imap_username": "alice",
        "imap_password": IMAP_PASSWORD, "imap_folders": ["INBOX"], "daily_cap": 50, "window_timezone": "UTC",
        "reply_view_max_age": "5m", "action": "check",
    }
    data.update(over)
    return {k: v for k, v in data.items() if v is not None}


def test_check_shows_every_smtp_and_imap_step_then_save_stores_the_secrets_encrypted(operator, smtp_auth, dovecot):
    page = operator.get("/mailboxes/new/?preset=other")
    assert b'<label for="id_smtp_password">SMTP password' in page.content
    assert b'<label for="id_reply_view_max_age">Reply view max age' in page.content
    checked = submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot))
    text = checked.content.decode()
    assert "Connection works: SMTP and IMAP pass" in text
    for step in ("SMTP AUTH", "SMTP MAIL FROM", "IMAP login", "IMAP LIST", "IMAP SELECT INBOX"):
        assert step in text, step
    assert SMTP_PASSWORD not in text and IMAP_PASSWORD not in text
    assert "SMTP password (set — replace)" in text
    assert not Mailbox.objects.exists()  # a check saves nothing
    # The passwords typed at the check are kept (encrypted, in the session): Save does not ask again.
    saved = submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, smtp_password="", imap_password="",
                                                       action="save"))
    assert saved.status_code == 302
    mailbox = Mailbox.objects.get(name="sales")
    assert unseal(mailbox.smtp_password_sealed) == SMTP_PASSWORD
    assert unseal(mailbox.imap_password_sealed) == IMAP_PASSWORD
    assert (mailbox.smtp_username, mailbox.reply_view_max_age, mailbox.blocked_at) == ("sales@acme.test", 300, None)
    listing = operator.get("/mailboxes/").content.decode()
    assert "password stored encrypted" in listing and SMTP_PASSWORD not in listing
    log = list(OperatorAction.objects.filter(target="mailbox sales").values_list("action", "result"))
    assert sorted(a for a, _ in log) == ["mailbox_added", "mailbox_form_check"]
    assert not any(SMTP_PASSWORD in str(r) or IMAP_PASSWORD in str(r) for _, r in log)
    added = dict(log)["mailbox_added"]
    assert added["secrets_replaced"] == ["IMAP password", "SMTP password"]


def test_a_failing_check_refuses_save_and_save_anyway_leaves_the_mailbox_blocked(operator, smtp_auth, dovecot):
    refused = submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, imap_password="wrong", action="save"))
    text = refused.content.decode()
    assert "Connection check failed: IMAP login failed" in text
    assert "check the IMAP username and password" in text  # the hint
    assert 'id="save-anyway"' in text
    assert not Mailbox.objects.exists()
    submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, smtp_password="", imap_password="",
                                               action="save_anyway"))
    mailbox = Mailbox.objects.get(name="sales")
    assert mailbox.blocked_at is not None
    assert "saved with a failing check: IMAP login failed" in mailbox.blocked_reason
    assert OperatorAction.objects.get(action="mailbox_added").result["saved_anyway"] is True


def test_edit_never_shows_the_stored_secret_and_an_empty_field_keeps_it(operator, smtp_auth, dovecot):
    submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, action="save"))
    mailbox = Mailbox.objects.get(name="sales")
    page = operator.get(f"/mailboxes/{mailbox.pk}/edit/").content.decode()
    assert "SMTP password (set — replace)" in page and "SMTP password: stored encrypted" in page
    assert SMTP_PASSWORD not in page and mailbox.smtp_password_sealed not in page
    submit(operator, f"/mailboxes/{mailbox.pk}/edit/", form_data(smtp_auth, dovecot, smtp_password="", imap_password="",
                                                              daily_cap=75, action="save"))
    mailbox.refresh_from_db()
    assert mailbox.daily_cap == 75 and unseal(mailbox.smtp_password_sealed) == SMTP_PASSWORD
    changed = OperatorAction.objects.get(action="mailbox_changed").result
    assert changed["fields"] == ["daily_cap"] and changed["secrets_replaced"] == []


def test_without_an_encryption_key_the_form_refuses_to_store_a_secret(operator, smtp_auth, dovecot, monkeypatch,
                                                                      settings, tmp_path):
    monkeypatch.delenv(KEYS_ENV)
    settings.VAR_DIR = tmp_path
    page = submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, action="save")).content.decode()
    assert "cannot store a secret: no encryption key" in page and KEYS_ENV in page
    assert not Mailbox.objects.exists()


@pytest.mark.parametrize("role,status", [("staff", 403), ("operator", 200), ("admin", 200)])
def test_operators_and_admins_add_mailboxes(role, status, client, users):  # noqa: F811
    client.force_login(users[role])
    assert client.get("/mailboxes/new/").status_code == status
    assert (b'id="add-mailbox"' in client.get("/mailboxes/").content) == (status == 200)


def test_a_relay_that_needs_no_login_is_added_checked_and_edited_in_one_pass(operator, dovecot):
    """No SMTP username and no password: no login at all (the demo's capture server, a local relay)."""
    with SmtpServer() as relay:
        data = form_data(relay, dovecot, smtp_password="", imap_enabled=None, action="save")
        saved = submit(operator, "/mailboxes/new/", data)
        assert saved.status_code == 302 and saved.url == "/mailboxes/", saved.content.decode()[:3000]
        mailbox = Mailbox.objects.get(name="sales")
        assert (mailbox.smtp_username, mailbox.blocked_at, mailbox.smtp_password_sealed) == ("", None, "")
        edited = submit(operator, f"/mailboxes/{mailbox.pk}/edit/", {**data, "daily_cap": 80})
        assert edited.status_code == 302
        mailbox.refresh_from_db()
        assert (mailbox.daily_cap, mailbox.smtp_username, mailbox.blocked_at) == (80, "", None)
    POOL.close_all()
