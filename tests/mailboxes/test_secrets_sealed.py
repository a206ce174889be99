"""Mailbox secrets entered in the browser: sealed in the database, used by SMTP and IMAP, rotated, never shown.

Real servers on loopback: the aiosmtpd server with AUTH (proving/harness/smtp.py) and Dovecot with passwords.
"""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from db.clock import db_now
from inbound.ingest.login import login_wait
from mailboxes.imap.session import ImapSession
from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV, NoEncryptionKey, SealedSecretUnreadable, seal, unseal
from mailboxes.selectors import RefusedTransport, imap_config_for, secret_source, transport_for
from mailboxes.transports.smtp import POOL, SmtpTransport
from proving.harness.smtp import SmtpServer
from tests.factories import MailboxFactory

pytestmark = pytest.mark.django_db
SMTP_PASSWORD = "smtp-Pw-7c1e9a"  # noqa: S105 - a test server's
IMAP_PASSWORD = "alicepw"  # noqa: S105 - the test Dovecot's


@pytest.fixture
def key(monkeypatch) -> str:
    value = Fernet.generate_key().decode()
    monkeypatch.setenv(KEYS_ENV, value)
    return value


@pytest.fixture
def smtp_auth():
    with SmtpServer(credentials={"sender": SMTP_PASSWORD}) as server:
        yield server
    POOL.close_all()


def sealed_mailbox(smtp_auth, dovecot, **fields) -> Mailbox:
    return MailboxFactory(
        smtp_port=smtp_auth.port, smtp_username="sender", smtp_password_sealed=seal(SMTP_PASSWORD),
        imap_host=dovecot.host, imap_port=dovecot.port, imap_username="alice",
        imap_password_sealed=seal(IMAP_PASSWORD), imap_folders=["INBOX"], **fields)


def test_a_sealed_password_logs_in_to_smtp_and_imap_and_the_database_holds_only_ciphertext(key, smtp_auth, dovecot):
    mailbox = sealed_mailbox(smtp_auth, dovecot)
    steps = transport_for(mailbox).check(sender=mailbox.address)
    assert [s.step for s in steps if s.ok][-3:] == ["AUTH", "MAIL FROM", "RSET"], steps
    assert smtp_auth.auth_attempts == 1
    with ImapSession(imap_config_for(mailbox)) as session:
        assert session.select("INBOX").uidvalidity
    assert login_wait(mailbox, now=db_now()) == ""
    assert secret_source(mailbox, "smtp_password") == "stored encrypted"
    stored = Mailbox.objects.filter(pk=mailbox.pk).values()[0]
    assert not any(SMTP_PASSWORD in str(v) or IMAP_PASSWORD in str(v) for v in stored.values())
    assert SMTP_PASSWORD not in repr(transport_for(mailbox).config)
    assert IMAP_PASSWORD not in repr(imap_config_for(mailbox))


def test_a_stored_secret_wins_over_the_environment_variable_and_toml_names_still_work(key, smtp_auth, monkeypatch):
    monkeypatch.setenv("OUTREACH_SECRET_SEALED_TEST", "wrong-password")
    mailbox = MailboxFactory(smtp_port=smtp_auth.port, smtp_username="sender",
                             smtp_password_env="OUTREACH_SECRET_SEALED_TEST")
    assert secret_source(mailbox, "smtp_password") == "environment variable OUTREACH_SECRET_SEALED_TEST"
    assert not all(s.ok for s in transport_for(mailbox).check(sender=mailbox.address))
    mailbox.smtp_password_sealed = seal(SMTP_PASSWORD)
    assert all(s.ok for s in transport_for(mailbox).check(sender=mailbox.address))
    monkeypatch.setenv("OUTREACH_SECRET_SEALED_TEST", SMTP_PASSWORD)
    mailbox.smtp_password_sealed = ""
    assert all(s.ok for s in transport_for(mailbox).check(sender=mailbox.address))


def test_without_a_key_the_mailbox_refuses_as_a_whole_with_a_clear_error_and_no_login(key, smtp_auth, dovecot,
                                                                                    monkeypatch, tmp_path, settings):
    mailbox = sealed_mailbox(smtp_auth, dovecot)
    monkeypatch.delenv(KEYS_ENV)
    settings.VAR_DIR = tmp_path  # no key file either
    transport = transport_for(mailbox)
    assert isinstance(transport, RefusedTransport)
    (step,) = transport.check(sender=mailbox.address)
    assert f"{KEYS_ENV} is not set" in step.detail and "scripts/run" in step.detail
    assert "no login attempted" in login_wait(mailbox, now=db_now())
    assert smtp_auth.auth_attempts == 0
    with pytest.raises(NoEncryptionKey, match="is not set"):
        seal("x")


def test_the_key_file_of_the_install_serves_when_the_variable_is_unset(monkeypatch, tmp_path, settings):
    monkeypatch.delenv(KEYS_ENV, raising=False)
    settings.VAR_DIR = tmp_path
    (tmp_path / "encryption_keys").write_text(Fernet.generate_key().decode() + "\n")
    assert unseal(seal("from the file")) == "from the file"


def test_rotation_re_seals_every_secret_so_the_old_key_can_be_removed(key, smtp_auth, dovecot, monkeypatch):
    mailbox = sealed_mailbox(smtp_auth, dovecot, oauth2_refresh_token_sealed=seal("rt-rotate-me"))
    new = Fernet.generate_key().decode()
    monkeypatch.setenv(KEYS_ENV, f"{new},{key}")
    call_command("rotate_encryption_key")
    monkeypatch.setenv(KEYS_ENV, new)  # the old key removed
    mailbox.refresh_from_db()
    assert unseal(mailbox.smtp_password_sealed) == SMTP_PASSWORD
    assert unseal(mailbox.imap_password_sealed) == IMAP_PASSWORD
    assert unseal(mailbox.oauth2_refresh_token_sealed) == "rt-rotate-me"
    assert all(s.ok for s in transport_for(mailbox).check(sender=mailbox.address))


def test_removing_the_old_key_before_rotating_is_named_and_the_command_fails(key, smtp_auth, dovecot, monkeypatch):
    mailbox = sealed_mailbox(smtp_auth, dovecot)
    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())
    with pytest.raises(SealedSecretUnreadable, match="cannot be decrypted"):
        unseal(mailbox.smtp_password_sealed)
    with pytest.raises(CommandError, match="keep the old keys"):
        call_command("rotate_encryption_key")
    assert isinstance(transport_for(mailbox), RefusedTransport)


def test_generate_puts_a_new_key_in_the_file_and_drop_old_removes_the_rest(monkeypatch, tmp_path, settings):
    monkeypatch.delenv(KEYS_ENV, raising=False)
    settings.VAR_DIR = tmp_path
    old = Fernet.generate_key().decode()
    (tmp_path / "encryption_keys").write_text(old + "\n")
    mailbox = MailboxFactory(smtp_password_sealed=seal(SMTP_PASSWORD))
    call_command("rotate_encryption_key", "--generate", "--drop-old")
    keys = (tmp_path / "encryption_keys").read_text().split()
    assert len(keys) == 1 and keys[0] != old
    assert (tmp_path / "encryption_keys").stat().st_mode & 0o777 == 0o600
    mailbox.refresh_from_db()
    assert unseal(mailbox.smtp_password_sealed) == SMTP_PASSWORD
    assert isinstance(transport_for(mailbox), SmtpTransport)
