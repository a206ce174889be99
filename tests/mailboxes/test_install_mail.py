"""The install's own mail (mailboxes.install_mail): to a real SMTP server with STARTTLS and AUTH, or to the outbox."""

from __future__ import annotations

from email import message_from_bytes, policy

import pytest

from mailboxes import install_mail
from mailboxes.install_mail import Attachment, InstallMailError, InstallMessage
from proving.harness.smtp import SmtpServer
from proving.harness.tls import make_certificates

MESSAGE = InstallMessage(to=("ops@example.org",), subject="Weekly report", text="Sent: 3", html="<p>Sent: 3</p>",
                         attachments=(Attachment("week.csv", "sent\n3\n", "text/csv"),))


def test_with_no_server_each_message_is_a_file_in_the_outbox(settings, tmp_path):
    settings.OUTREACH_INSTALL_SMTP_HOST = ""
    settings.OUTREACH_INSTALL_OUTBOX = tmp_path / "outbox"
    install_mail.send(MESSAGE)
    files = list((tmp_path / "outbox").iterdir())
    assert len(files) == 1 and files[0].suffix == ".eml"
    parsed = message_from_bytes(files[0].read_bytes(), policy=policy.default)
    assert parsed["Subject"] == "Weekly report" and parsed["To"] == "ops@example.org"
    assert [part.get_filename() for part in parsed.iter_attachments()] == ["week.csv"]
    assert str(tmp_path / "outbox") in install_mail.where()


def test_starttls_and_login_reach_the_server_with_the_attachment(settings, tmp_path):
    certs = make_certificates(tmp_path)
    with SmtpServer(credentials={"reports": "right"}, starttls=certs.server_context()) as server:
        settings.OUTREACH_INSTALL_SMTP_HOST, settings.OUTREACH_INSTALL_SMTP_PORT = "127.0.0.1", server.port
        settings.OUTREACH_INSTALL_SMTP_SECURITY = "starttls"
        settings.OUTREACH_INSTALL_SMTP_CA_FILE = str(certs.ca_file)
        settings.OUTREACH_INSTALL_SMTP_USERNAME, settings.OUTREACH_INSTALL_SMTP_PASSWORD = "reports", "right"
        settings.OUTREACH_INSTALL_MAIL_FROM = "outreach@install.example"
        install_mail.send(MESSAGE)
        assert server.wait_for(1, 5)
    got = server.received[0]
    assert got.sender == "outreach@install.example" and got.recipients == ["ops@example.org"]
    parsed = message_from_bytes(got.data, policy=policy.default)
    names = [part.get_filename() for part in parsed.iter_attachments()]
    assert names == ["week.csv"]
    assert parsed.get_body(("html",)).get_content().strip() == "<p>Sent: 3</p>"


def test_a_wrong_password_is_an_error_in_words(settings, tmp_path):
    certs = make_certificates(tmp_path)
    with SmtpServer(credentials={"reports": "right"}, starttls=certs.server_context()) as server:
        settings.OUTREACH_INSTALL_SMTP_HOST, settings.OUTREACH_INSTALL_SMTP_PORT = "127.0.0.1", server.port
        settings.OUTREACH_INSTALL_SMTP_CA_FILE = str(certs.ca_file)
        settings.OUTREACH_INSTALL_SMTP_USERNAME, settings.OUTREACH_INSTALL_SMTP_PASSWORD = "reports", "wrong"
        with pytest.raises(InstallMailError, match="refused or could not be reached"):
            install_mail.send(MESSAGE)
        assert server.received == []


def test_the_password_never_goes_in_clear_to_another_host(settings):
    settings.OUTREACH_INSTALL_SMTP_HOST = "smtp.example.net"
    settings.OUTREACH_INSTALL_SMTP_SECURITY = "none"
    settings.OUTREACH_INSTALL_SMTP_USERNAME, settings.OUTREACH_INSTALL_SMTP_PASSWORD = "reports", "secret"
    with pytest.raises(InstallMailError, match="without encryption to smtp.example.net"):
        install_mail.send(MESSAGE)
