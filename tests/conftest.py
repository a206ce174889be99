from __future__ import annotations

import pytest

from sequences import checkpoints
from tests.factories import MailboxFactory
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
