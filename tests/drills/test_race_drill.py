"""`manage.py drill race` end to end: a real worker process, the configured database (PostgreSQL or SQLite) and
Redis."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

import pytest
import redis
from django.db import connection

from proving.harness.smtp import SmtpServer
from proving.harness.stack import PrivateRedis, database_url
from proving.harness.tls import make_certificates
from tests.drills.conftest import database_exists, process_is_worker
from tests.factories import MailboxFactory

pytestmark = pytest.mark.slow


def test_both_fixtures_pass_and_the_drill_cleans_up(run_drill, neighbour):
    """Also: the drill runs on a redis-server of its own and leaves the machine's Redis indexes as they were."""
    conn, prefix, expected = neighbour

    done = run_drill("race", "--order", "both")

    assert _snapshot(conn, prefix + "*") == expected
    assert done.returncode == 0
    out = done.stdout
    assert re.search(r"redis\s+private redis-server redis://127\.0\.0\.1:\d+/0", out)
    assert "drill race: PASS (reply-first PASS, send-first PASS)" in out
    assert "OUTREACH_PAUSE_AT=claimed" in out and "OUTREACH_PAUSE_AT=authorized" in out
    for row in ("claimed", "final check", "reply committed", "stop committed", "authorized", "submitted",
                "cancel reason", "SMTP received", "label"):
        assert re.search(rf"^\s+(\S+\s+)?{row}\s", out, re.M), f"no {row!r} row in the evidence"
    reply_first, send_first = out.split("[send-first]")
    # reply-first: the raced step never reached the capture server; the final check refused it.
    assert "step 1 x1, step 2 x0" in reply_first
    assert "refused: job was canceled" in reply_first
    assert "Canceled — never sent: the person replied (" in reply_first
    # send-first: it had passed the hand-off: sent once, and said so.
    assert "step 1 x1, step 2 x1" in send_first
    assert re.search(r"label\s+Already submitted at .* — cannot recall", send_first)
    assert "1 job in flight now (authorized, being handed off) — cannot recall" in send_first

    if connection.vendor == "postgresql":
        database = re.search(r"PostgreSQL database (outreach_drill_\w+)", out).group(1)
        assert not database_exists(database)
    else:
        assert not Path(re.search(r"SQLite file (\S+)", out).group(1)).exists()
    pids = [int(p) for p in re.findall(r"pid (\d+)", out)]
    assert len(pids) == 4 and not any(process_is_worker(pid) for pid in pids)


@pytest.mark.one_database("a refusal before the drill makes anything")
@pytest.mark.django_db(transaction=True)
def test_refuses_a_mailbox_not_marked_as_a_drill_target(run_drill):
    MailboxFactory(name="sales", is_drill_target=False)

    done = run_drill("race", "--mailbox", "sales", DATABASE_URL=database_url(connection.settings_dict))

    assert done.returncode != 0
    assert "mailbox 'sales' is not marked as a drill target" in done.stderr
    assert "drill race:" not in done.stdout  # refused before creating anything


@pytest.mark.django_db(transaction=True)
def test_with_the_final_check_bypassed_the_drill_fails(run_drill, smtp_server):
    """The same drill, its worker started with the unchecked authorize: the message leaves after the reply."""
    MailboxFactory(name="staging", is_drill_target=True, smtp_port=smtp_server.port)

    done = run_drill("race", "--order", "reply-first", "--mailbox", "staging",
                     DATABASE_URL=database_url(connection.settings_dict), OUTREACH_DRILL_UNCHECKED="1")

    assert done.returncode == 1
    assert "drill race: FAIL (reply-first FAIL)" in done.stdout
    assert "BYPASSED" in done.stdout
    assert re.search(r"FAIL  job \d+ was authorized at \S+ AFTER the stop committed", done.stdout)
    # --mailbox used that mailbox's SMTP server: this test's own, which got step 1 and the raced step 2.
    assert len(smtp_server.received) == 2



# Index 1 of the machine's Redis: the first index a drill hunting for a "free" index would try. No test uses it
# (the suite's own are 14 and 15).
NEIGHBOUR_URL = "redis://127.0.0.1:6379/1"


def _fill(conn) -> tuple[str, dict]:
    """Another tenant's data: a few keys of several types under a fresh prefix; returns (prefix, snapshot)."""
    prefix = f"tenant-{os.getpid()}-{secrets.token_hex(3)}:"
    conn.set(prefix + "string", "kept")
    conn.hset(prefix + "hash", mapping={"a": "1", "b": "2"})
    conn.rpush(prefix + "list", "x", "y", "z")
    conn.sadd(prefix + "set", "m", "n")
    snapshot = _snapshot(conn, prefix + "*")
    assert len(snapshot) == 4
    return prefix, snapshot


def _snapshot(conn, match: str = "*") -> dict:
    values = {"string": conn.get, "hash": conn.hgetall, "list": lambda k: conn.lrange(k, 0, -1), "set": conn.smembers}
    found = {}
    for key in conn.scan_iter(match=match):
        kind = conn.type(key).decode()
        found[key.decode()] = (kind, values[kind](key) if kind in values else None)
    return found


@pytest.fixture
def neighbour():
    conn = redis.Redis.from_url(NEIGHBOUR_URL)
    prefix, expected = _fill(conn)
    yield conn, prefix, expected
    conn.delete(*expected)


def test_in_a_given_redis_index_and_a_named_database(run_drill, tmp_path):
    """--redis-url: the drill adds and removes only its own keys there; --database: the name it creates."""
    server = PrivateRedis(tmp_path).start()
    try:
        base = server.url.rsplit("/", 1)[0]
        given, other = redis.Redis.from_url(f"{base}/3"), redis.Redis.from_url(f"{base}/4")
        _, in_given = _fill(given)
        _, in_other = _fill(other)
        if connection.vendor == "postgresql":
            name = f"outreach_race_named_{os.getpid()}_{secrets.token_hex(3)}"
        else:
            name = str(tmp_path / "named-drill.sqlite3")

        done = run_drill("race", "--order", "reply-first", "--redis-url", f"{base}/3", "--database", name)

        assert done.returncode == 0, done.stderr
        assert "drill race: PASS (reply-first PASS)" in done.stdout
        assert f"redis     {base}/3 (given;" in done.stdout
        assert _snapshot(given) == in_given  # the drill's queues, jobs, workers and marks are gone; the rest kept
        assert _snapshot(other) == in_other
        if connection.vendor == "postgresql":
            assert f"PostgreSQL database {name} on " in done.stdout
            assert not database_exists(name)
        else:
            assert f"SQLite file {name} " in done.stdout
            assert not Path(name).exists()
    finally:
        server.stop()


@pytest.mark.one_database("a refusal before the drill makes anything")
def test_a_given_redis_index_where_outreach_works_is_refused(run_drill, tmp_path):
    server = PrivateRedis(tmp_path).start()
    try:
        server.client().set("outreach:send-enqueued:1", 1)

        done = run_drill("race", "--order", "reply-first", "--redis-url", server.url)

        assert done.returncode != 0
        assert "is in use by outreach (it holds outreach: keys)" in done.stderr
        assert _snapshot(server.client()) == {"outreach:send-enqueued:1": ("string", b"1")}
    finally:
        server.stop()


@pytest.mark.one_database("the SMTP login and TLS; the bypassed test copies a named mailbox on each database")
@pytest.mark.django_db(transaction=True)
def test_a_named_mailbox_sends_with_its_own_tls_ca_file_and_login(run_drill, tmp_path):
    """The drill's copy of the mailbox is the mailbox: STARTTLS to a server whose CA only its ca_file names."""
    certs = make_certificates(tmp_path / "tls")
    with SmtpServer(starttls=certs.server_context(), credentials={"drill-user": "drill-pw"}) as server:
        MailboxFactory(name="private-ca", is_drill_target=True, smtp_port=server.port, smtp_security="starttls",
                       ca_file=str(certs.ca_file), smtp_username="drill-user",
                       smtp_password_env="OUTREACH_SECRET_RACE_DRILL")

        done = run_drill("race", "--order", "reply-first", "--mailbox", "private-ca",
                         DATABASE_URL=database_url(connection.settings_dict), OUTREACH_SECRET_RACE_DRILL="drill-pw")

    assert done.returncode == 0, done.stderr
    assert "drill race: PASS (reply-first PASS)" in done.stdout
    assert (f"transport SMTP 127.0.0.1:{server.port} security starttls, CA {certs.ca_file}, "
            "login password from OUTREACH_SECRET_RACE_DRILL as drill-user") in done.stdout
    assert len(server.received) == 1  # step 1; the raced step 2 was refused by the final check
