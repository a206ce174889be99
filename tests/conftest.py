from __future__ import annotations

import pytest

from sequences import checkpoints
from tests.factories import MailboxFactory
from tests.servers.dovecot import dovecot  # noqa: F401  (fixture: a real Dovecot per test)
from tests.servers.smtp import SmtpServer


@pytest.fixture
def smtp_server():
    server = SmtpServer().start()
    yield server
    server.stop()


@pytest.fixture
def mailbox(smtp_server, db):
    return MailboxFactory(smtp_port=smtp_server.port)


@pytest.fixture(autouse=True)
def _clean_checkpoints():
    yield
    checkpoints._hooks.clear()


@pytest.fixture
def redis_conn(settings):
    import redis

    conn = redis.Redis.from_url(settings.REDIS_URL)
    conn.flushdb()
    yield conn
    conn.flushdb()


@pytest.fixture
def imap_mailbox(mailbox, dovecot, monkeypatch):  # noqa: F811
    """The SMTP test mailbox, reading replies from alice's IMAP account on the test Dovecot."""
    monkeypatch.setenv("TEST_IMAP_PASSWORD", "alicepw")
    mailbox.imap_host, mailbox.imap_port = dovecot.host, dovecot.port
    mailbox.imap_username, mailbox.imap_password_env = "alice", "TEST_IMAP_PASSWORD"
    mailbox.imap_folders = ["INBOX"]
    mailbox.save()
    return mailbox
