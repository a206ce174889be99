"""A stored secret goes only where it was entered for (mailboxes.bound), whoever edits the mailbox and however.

The red team's reproductions: on Edit mailbox, change only the SMTP or IMAP host and port (or the OAuth token URL),
leave the password empty ("keep stored") and press Check: the server logged in there with the stored secret. And
an operator named OUTREACH_SECRET_ERASURE_KEY as a password variable. Here each listener is a real server on
loopback that records every byte (tests/security/trap.py): it must receive none of the secrets, nor a connection.
"""

from __future__ import annotations

import pytest

from mailboxes.bound import SecretNotBound
from mailboxes.checks import connection_check
from mailboxes.models import Mailbox
from mailboxes.sealed import seal, unseal
from mailboxes.selectors import mailbox_secret, transport_for
from mailboxes.signin import SigninError, signin_client
from sequences.models import OperatorAction
from sequences.webhooks_out.models import WebhookEndpoint
from tests.mailboxes.checking import submit
from tests.mailboxes.test_mailbox_form import IMAP_PASSWORD, SMTP_PASSWORD, key, smtp_auth  # noqa: F401 - fixtures
from tests.security.trap import Trap
from tests.ui.conftest import roles, users  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db
ERASURE_KEY = "erasure-key-d41d8cd98f00b204"


def login(client, users, role):  # noqa: F811
    client.force_login(users[role])
    return client


def form_data(smtp_auth, dovecot, **over) -> dict:
    data = {
        "preset": "other", "name": "sales", "address": "sales@acme.test", "auth": "password",
        "smtp_host": "127.0.0.1", "smtp_port": smtp_auth.port, "smtp_security": "none", "smtp_username": "",
        "smtp_password": "", "imap_enabled": "on", "imap_host": dovecot.host, "imap_port": dovecot.port,
        "imap_security": "none", "imap_username": "alice", "imap_password": "", "imap_folders": ["INBOX"],
        "daily_cap": 50, "window_timezone": "UTC", "action": "check",
    }
    data.update(over)
    return data


@pytest.fixture
def stored(client, users, smtp_auth, dovecot):  # noqa: F811
    """A mailbox saved through the form by an operator, its passwords stored encrypted."""
    operator = login(client, users, "operator")
    saved = submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, smtp_password=SMTP_PASSWORD,
                                                       imap_password=IMAP_PASSWORD, action="save"))
    assert saved.status_code == 302, saved.content.decode()[:2000]
    return Mailbox.objects.get(name="sales")


@pytest.mark.parametrize("action", ["check", "save", "save_anyway"])
def test_a_changed_smtp_host_is_not_sent_the_stored_smtp_password(client, stored, smtp_auth, dovecot, action):
    with Trap("smtp") as trap:
        page = submit(client, f"/mailboxes/{stored.pk}/edit/",
                           form_data(smtp_auth, dovecot, smtp_port=trap.port, action=action))
    assert not trap.got(SMTP_PASSWORD) and trap.connections == 0
    text = page.content.decode()
    assert page.status_code == 400
    assert "type the SMTP password again" in text and f"127.0.0.1:{smtp_auth.port}" in text  # where it was entered
    stored.refresh_from_db()
    assert stored.smtp_port == smtp_auth.port  # nothing saved


def test_a_changed_imap_host_is_not_sent_the_stored_imap_password(client, stored, smtp_auth, dovecot):
    with Trap("imap") as trap:
        page = submit(client, f"/mailboxes/{stored.pk}/edit/", form_data(smtp_auth, dovecot, imap_port=trap.port))
    assert not trap.got(IMAP_PASSWORD) and trap.connections == 0
    assert page.status_code == 400 and "type the IMAP password again" in page.content.decode()


def test_a_changed_username_asks_for_the_password_again_and_a_typed_one_goes_there(client, stored, smtp_auth,
                                                                                     dovecot):
    page = submit(client, f"/mailboxes/{stored.pk}/edit/",
                  form_data(smtp_auth, dovecot, smtp_username="other@acme.test"))
    assert page.status_code == 400 and "type the SMTP password again" in page.content.decode()
    # Typed again for the new server: the check goes there with it, and the log names where it connected.
    with Trap("smtp") as trap:
        submit(client, f"/mailboxes/{stored.pk}/edit/",
                    form_data(smtp_auth, dovecot, smtp_port=trap.port, smtp_password="typed-for-the-trap"))
    assert trap.got("typed-for-the-trap") and not trap.got(SMTP_PASSWORD)
    row = OperatorAction.objects.filter(action="mailbox_form_check").latest("id")
    assert row.result["connected"] == [f"SMTP 127.0.0.1:{trap.port}", f"IMAP {dovecot.host}:{dovecot.port}"]


def test_unchanged_settings_keep_the_stored_password_and_the_check_passes(client, stored, smtp_auth, dovecot):
    page = submit(client, f"/mailboxes/{stored.pk}/edit/", form_data(smtp_auth, dovecot, daily_cap=75, action="save"))
    assert page.status_code == 302
    stored.refresh_from_db()
    assert stored.daily_cap == 75 and unseal(stored.smtp_password_sealed) == SMTP_PASSWORD
    assert smtp_auth.auth_attempts >= 1
    saved = OperatorAction.objects.filter(action="mailbox_changed").latest("id").result
    assert saved["connected"] == [f"SMTP 127.0.0.1:{smtp_auth.port}", f"IMAP {dovecot.host}:{dovecot.port}"]


def test_a_host_changed_behind_the_form_refuses_the_secret_before_connecting(stored):
    """The admin, a script, a configuration file: whatever changes the host, the stored secret stays behind."""
    with Trap("smtp") as trap:
        stored.smtp_port = trap.port
        stored.save(update_fields=["smtp_port"])
        with pytest.raises(SecretNotBound, match="was entered for SMTP 127.0.0.1"):
            mailbox_secret(stored, "smtp_password")
        steps = transport_for(stored).check(sender=stored.address)
    assert [s.ok for s in steps] == [False] and "enter it again" in steps[0].detail
    assert trap.connections == 0 and not trap.got(SMTP_PASSWORD)


def test_an_operator_cannot_name_a_password_variable_and_an_admin_cannot_name_an_install_secret(
        client, users, smtp_auth, dovecot, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OUTREACH_SECRET_ERASURE_KEY", ERASURE_KEY)
    with Trap("smtp") as trap:
        operator = login(client, users, "operator")
        page = submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, smtp_port=trap.port, smtp_username="x",
                                                          smtp_password_env="OUTREACH_SECRET_ERASURE_KEY"))
        assert 'name="smtp_password_env"' in page.content.decode() and "set by an admin" in page.content.decode()
        admin = login(client, users, "admin")
        refused = submit(admin, "/mailboxes/new/", form_data(smtp_auth, dovecot, smtp_port=trap.port, smtp_username="x",
                                                          smtp_password_env="OUTREACH_SECRET_ERASURE_KEY"))
    assert refused.status_code == 400 and "a secret of the install itself" in refused.content.decode()
    assert not trap.got(ERASURE_KEY)


def test_a_webhook_signing_secret_is_no_mailbox_password(client, users, smtp_auth, dovecot, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OUTREACH_SECRET_CRM_WEBHOOK", "whsec-never-to-a-mail-server")
    WebhookEndpoint.objects.create(url="https://crm.example/hooks", secret_env="OUTREACH_SECRET_CRM_WEBHOOK",
                                   event_types=["reply.received"])
    with Trap("smtp") as trap:
        page = submit(login(client, users, "admin"), "/mailboxes/new/", form_data(
            smtp_auth, dovecot, smtp_port=trap.port, smtp_username="x",
            smtp_password_env="OUTREACH_SECRET_CRM_WEBHOOK"))
    assert page.status_code == 400 and "holds a webhook&#x27;s signing secret" in page.content.decode()
    assert not trap.got("whsec-never-to-a-mail-server")


def test_an_admin_names_a_variable_for_the_servers_it_is_named_with(client, users, smtp_auth, dovecot,
                                                                     monkeypatch):  # noqa: F811
    monkeypatch.setenv("OUTREACH_SECRET_SALES_SMTP", SMTP_PASSWORD)
    monkeypatch.setenv("OUTREACH_SECRET_SALES_IMAP", IMAP_PASSWORD)
    admin = login(client, users, "admin")
    data = form_data(smtp_auth, dovecot, smtp_password_env="OUTREACH_SECRET_SALES_SMTP",
                     imap_password_env="OUTREACH_SECRET_SALES_IMAP", action="save")
    saved = submit(admin, "/mailboxes/new/", data)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    mailbox = Mailbox.objects.get(name="sales")
    assert mailbox_secret(mailbox, "smtp_password") == SMTP_PASSWORD
    # An operator moves the SMTP side elsewhere: the variable an admin named stays with its server.
    with Trap("smtp") as trap:
        page = submit(login(client, users, "operator"), f"/mailboxes/{mailbox.pk}/edit/",
                                                      form_data(smtp_auth, dovecot, smtp_port=trap.port))
    assert page.status_code == 400 and "or an admin names its variable again" in page.content.decode()
    assert trap.connections == 0 and not trap.got(SMTP_PASSWORD)


def oauth_mailbox(token_url: str) -> Mailbox:
    return Mailbox.objects.create(
        name="oauthbox", address="sales@acme.test", auth="oauth2", oauth2_provider="generic",
        oauth2_token_url=token_url, oauth2_client_id="client-1",
        oauth2_client_secret_sealed=seal("client-secret-5f0e"), oauth2_refresh_token_sealed=seal("refresh-77aa1"),
        smtp_host="127.0.0.1", smtp_port=2525, smtp_security="none", smtp_username="sales@acme.test")


def test_a_changed_token_url_is_sent_neither_the_refresh_token_nor_the_client_secret(client, users):  # noqa: F811
    mailbox = oauth_mailbox("https://login.example/token")
    with Trap("http") as trap:
        mailbox.oauth2_token_url = f"http://127.0.0.1:{trap.port}/token"
        mailbox.save(update_fields=["oauth2_token_url"])
        result = connection_check(mailbox)
    assert not result.passed and "was entered for https://login.example/token" in result.text
    assert trap.connections == 0 and not trap.got("refresh-77aa1") and not trap.got("client-secret-5f0e")


def test_the_installs_google_client_signs_in_only_at_googles_endpoints(monkeypatch):
    monkeypatch.setenv("OUTREACH_OAUTH_GOOGLE_CLIENT_ID", "install-id")
    monkeypatch.setenv("OUTREACH_OAUTH_GOOGLE_CLIENT_SECRET", "install-google-secret")
    assert signin_client(provider="google", client_id="", client_secret="").client_secret == "install-google-secret"
    with pytest.raises(SigninError, match="signs in only at Google's own endpoints"):
        signin_client(provider="google", client_id="", client_secret="", token_url="https://attacker.example/token")


def test_an_operator_cannot_set_oauth_endpoints(client, users, smtp_auth, dovecot):  # noqa: F811
    page = submit(login(client, users, "operator"), "/mailboxes/new/", form_data(
        smtp_auth, dovecot, auth="oauth2", oauth2_provider="generic", oauth2_client_id="c",
        oauth2_token_url="https://attacker.example/token", oauth2_authorize_url="https://attacker.example/a",
        oauth2_userinfo_url="https://attacker.example/u"))
    text = page.content.decode()
    assert "an OAuth2 provider needs it" in text  # the endpoints it sent were ignored: none is set
    assert "attacker.example" not in text


def test_a_configuration_file_rebinds_the_variables_it_names_but_not_a_password_entered_in_the_browser(tmp_path,
                                                                                                        monkeypatch):
    from django.core.management import call_command

    monkeypatch.setenv("OUTREACH_SECRET_FILE_SMTP", "from-the-file")

    def load(port: int) -> None:
        path = tmp_path / "mailboxes.toml"
        path.write_text(f'[[mailbox]]\nname = "filebox"\naddress = "sales@acme.test"\n'
                        f'smtp = {{ host = "127.0.0.1", port = {port}, security = "none", username = "u", '
                        f'password_env = "OUTREACH_SECRET_FILE_SMTP" }}\n')
        call_command("load_sequences", str(path), stdout=open(tmp_path / "out", "w"))

    load(2525)
    load(2526)  # the file's author names the variable for the new port
    mailbox = Mailbox.objects.get(name="filebox")
    assert mailbox_secret(mailbox, "smtp_password") == "from-the-file"
    Mailbox.objects.filter(pk=mailbox.pk).update(smtp_password_sealed=seal("typed-in-the-browser"))
    mailbox.refresh_from_db()
    mailbox.secret_endpoints = {**mailbox.secret_endpoints}  # as the form binds it: for port 2526
    load(2527)
    mailbox.refresh_from_db()
    with pytest.raises(SecretNotBound):
        mailbox_secret(mailbox, "smtp_password")
