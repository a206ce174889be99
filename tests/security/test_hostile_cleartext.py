"""No password in clear text: TLS by default, and no login without TLS except to a server on this machine
(issue 34, item 8).

The servers are real (aiosmtpd with AUTH, Dovecot) and listen on loopback; this machine's own host name, which
resolves to loopback too, stands for a remote host: it is no loopback *address*, so nothing may log in to it
without TLS, and what reaches the server shows whether the password went out.
"""

from __future__ import annotations

import socket
from io import StringIO

import pytest
from django.contrib.admin.sites import site
from django.core.management import CommandError, call_command
from django.test import RequestFactory

from mailboxes.imap.connection import ImapConfig, ImapConnection
from mailboxes.imap.errors import ImapAuthError
from mailboxes.models import Mailbox
from mailboxes.tls import is_loopback
from mailboxes.transports.base import MailboxRefused
from mailboxes.transports.smtp import POOL, SmtpConfig, SmtpTransport
from proving.harness.smtp import SmtpServer
from tests.mailboxes.checking import submit
from tests.mailboxes.test_mailbox_form import SMTP_PASSWORD, form_data, key, operator  # noqa: F401 - fixtures
from tests.sequences.test_commands import GOOD, write

REMOTE = "mail.example.com"  # never contacted: the refusal comes before any connection


def _loopback_name() -> str:
    """A name of this machine that is not a loopback address itself but resolves to one."""
    name = socket.gethostname()
    try:
        address = socket.gethostbyname(name)
    except OSError:
        pytest.skip("this machine's host name does not resolve")
    if is_loopback(name) or not address.startswith("127."):
        pytest.skip("this machine's host name does not resolve to loopback")
    return name


@pytest.fixture
def smtp_auth():
    with SmtpServer(credentials={"sales": SMTP_PASSWORD}) as server:
        yield server
    POOL.close_all()


def _send(host: str, port: int, **config):
    transport = SmtpTransport(SmtpConfig(host=host, port=port, username="sales", password=SMTP_PASSWORD,
                                         timeout=5, keep_alive=0, **config))
    return transport.send(sender="sales@acme.test", recipient="ann@example.com",
                          message=b"From: sales@acme.test\r\nTo: ann@example.com\r\nSubject: Hi\r\n\r\nHello\r\n")


def test_smtp_never_sends_auth_without_tls_except_to_loopback(smtp_auth):
    with pytest.raises(MailboxRefused) as refused:
        _send(_loopback_name(), smtp_auth.port, security="none")
    assert "without encryption" in str(refused.value) and SMTP_PASSWORD not in str(refused.value)
    assert smtp_auth.auth_attempts == 0 and smtp_auth.count == 0  # the password never reached the server

    _send("127.0.0.1", smtp_auth.port, security="none")  # a server on this machine: allowed
    assert smtp_auth.auth_attempts == 1 and smtp_auth.count == 1


def test_imap_never_logs_in_without_tls_except_to_loopback(dovecot):
    config = dict(port=dovecot.port, username="alice", password="alicepw", security="none", timeout=5)  # noqa: S106
    with pytest.raises(ImapAuthError, match="without encryption"):
        ImapConnection(ImapConfig(host=_loopback_name(), **config)).open()
    with ImapConnection(ImapConfig(host=dovecot.host, **config)):
        pass  # loopback: allowed


@pytest.mark.django_db
def test_tls_is_the_default_of_a_new_mailbox_and_of_toml(tmp_path):
    mailbox = Mailbox(name="new", address="sales@acme.test")
    assert (mailbox.smtp_security, mailbox.smtp_port, mailbox.imap_security, mailbox.imap_port) == (
        "starttls", 587, "tls", 993)
    text = GOOD.replace(', security = "none" }', ' }').replace("follow_ups_without_reply_view = true",
                                                              'imap = { host = "imap.acme.test", username = "u", '
                                                              'password_env = "OUTREACH_SECRET_SALES_IMAP" }')
    call_command("load_sequences", write(tmp_path, "tls.toml", text), stdout=StringIO(), stderr=StringIO())
    loaded = Mailbox.objects.get(name="sales")
    assert (loaded.smtp_security, loaded.imap_security, loaded.imap_port) == ("starttls", "tls", 993)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("table", [
    'smtp = { host = "mail.example.com", port = 25, username = "u", password_env = "OUTREACH_SECRET_S", '
    'security = "none" }',
    'smtp = { host = "127.0.0.1", port = 2525, security = "none" }\nimap = { host = "mail.example.com", '
    'port = 143, username = "u", password_env = "OUTREACH_SECRET_I", security = "none" }',
])
def test_load_sequences_refuses_a_login_in_clear_text_with_the_reason(tmp_path, table):
    text = GOOD.replace(GOOD.splitlines()[5], table)
    with pytest.raises(CommandError) as refused:
        call_command("load_sequences", write(tmp_path, "plain.toml", text), stdout=StringIO(), stderr=StringIO())
    assert "without encryption to mail.example.com" in str(refused.value) and "STARTTLS" in str(refused.value)
    assert not Mailbox.objects.exists()
    # Without a login (no username) the same host may be used without TLS, as a relay that trusts this host.
    unauthenticated = GOOD.replace(GOOD.splitlines()[5], 'smtp = { host = "relay.example.com", security = "none" }')
    call_command("load_sequences", write(tmp_path, "relay.toml", unauthenticated), stdout=StringIO(),
                 stderr=StringIO())


@pytest.mark.django_db
@pytest.mark.parametrize("side", ["smtp", "imap"])
def test_the_mailbox_form_refuses_a_login_in_clear_text(operator, smtp_auth, dovecot, side):  # noqa: F811
    page = submit(operator, "/mailboxes/new/", form_data(smtp_auth, dovecot, **{f"{side}_host": REMOTE}))
    text = page.content.decode()
    assert f"would send the password without encryption to {REMOTE}" in text
    assert not Mailbox.objects.exists() and smtp_auth.auth_attempts == 0


@pytest.mark.django_db
def test_the_admin_refuses_a_login_in_clear_text(admin_user):
    mailbox = Mailbox.objects.create(name="sales", address="sales@acme.test", smtp_host="127.0.0.1",
                                     smtp_security="none", smtp_username="u")
    form_class = site._registry[Mailbox].get_form(_request(admin_user), mailbox)
    form = form_class(instance=mailbox)
    data = {name: form.initial.get(name) for name in form.fields if form.initial.get(name) is not None}
    assert form_class(data=data, instance=mailbox).is_valid()  # loopback: allowed
    form = form_class(data=data | {"smtp_host": REMOTE}, instance=mailbox)
    assert not form.is_valid()
    assert "without encryption" in " ".join(form.errors["smtp_security"])
    assert form_class(data=data | {"smtp_host": REMOTE, "smtp_security": "starttls"}, instance=mailbox).is_valid()


def _request(user):
    request = RequestFactory().post("/")
    request.user = user
    return request
