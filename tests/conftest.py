from __future__ import annotations

import os

import pytest
from django.db import connections, transaction
from django.test import TransactionTestCase

from proving.bench.env import BenchSetupError, PgServer
from proving.harness import template
from proving.harness.dns import SERVFAIL, ZONE, DnsServer
from proving.harness.dovecot import DEFAULT_USERS, Dovecot
from proving.harness.smtp import SmtpServer
from sequences import checkpoints
from tests.factories import MailboxFactory


@pytest.fixture(scope="session", autouse=True)
def _migrated_template(request):
    """The drills and benchmarks of this run migrate their first database and copy it for the others
    (proving.harness.template); the copies are dropped at the end. Not with --nomigrations: the drills then
    build their tables from the models."""
    if request.config.getoption("nomigrations", default=False):
        yield
        return
    from django.conf import settings

    os.environ[template.TEMPLATE_ENV] = f"t{os.getpid()}"
    yield
    try:
        server = PgServer.from_settings(settings.DATABASES)
    except BenchSetupError:  # not on loopback: no bench ran, no PostgreSQL template to drop
        template.drop(None)
    else:
        template.drop({"host": server.host, "port": str(server.port), "user": server.user,
                       "password": server.password})
    del os.environ[template.TEMPLATE_ENV]


# Rows that every flush would delete and the post_migrate signal would write again, the same each time: the
# content types and the permissions. Kept, and the signal not sent.
FLUSH_KEEPS = frozenset({"django_content_type", "auth_permission"})
_django_fixture_teardown = TransactionTestCase._fixture_teardown


def _fixture_teardown_by_delete(self):
    """A transactional test ends by emptying every table, as Django's `flush` does, in one transaction of DELETEs
    (the foreign keys are deferred to its commit) rather than a TRUNCATE of every table followed by the
    post_migrate signal, which writes the content types and permissions again: ~0.05 s a test rather than
    ~0.5 s on a busy machine, over some 650 transactional tests a pass."""
    if self.available_apps is not None or self.serialized_rollback:
        return _django_fixture_teardown(self)
    for name in self._databases_names(include_mirrors=False):
        connection = connections[name]
        tables = set(connection.introspection.django_table_names(only_existing=True, include_views=False))
        with transaction.atomic(using=name), connection.cursor() as cursor:
            for table in sorted(tables - FLUSH_KEEPS):
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")
    return None


TransactionTestCase._fixture_teardown = _fixture_teardown_by_delete


@pytest.fixture
def dovecot():
    """A started Dovecot with users alice/alicepw and bob/bobpw, fresh per test.

    Function scope: start ~50 ms, teardown (kill + rmtree) ~10 ms. Fails (does
    not skip) when dovecot is missing: CI installs it. Deliberately not built
    on tmp_path_factory (0700 parents, long socket paths: see proving/harness/dovecot.py).
    """
    with Dovecot(DEFAULT_USERS) as server:
        yield server


@pytest.fixture
def smtp_server():
    server = SmtpServer().start()
    yield server
    server.stop()


@pytest.fixture
def dns_server(settings):
    """A local authoritative DNS server (proving.harness.dns.ZONE) that every lookup of the test goes to."""
    with DnsServer(ZONE, servfail=SERVFAIL) as server:
        settings.OUTREACH_DNS_RESOLVER = server.address
        yield server


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
def imap_mailbox(mailbox, dovecot, monkeypatch):
    """The SMTP test mailbox, reading replies from alice's IMAP account on the test Dovecot."""
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")
    mailbox.imap_host, mailbox.imap_port = dovecot.host, dovecot.port
    mailbox.imap_username, mailbox.imap_password_env = "alice", "OUTREACH_SECRET_TEST_IMAP"
    mailbox.imap_folders = ["INBOX"]
    mailbox.save()
    return mailbox


def pytest_collection_modifyitems(config, items):
    """On the SQLite pass, skip the tests marked `postgresql` with the reason each gives. A test marked
    `own_postgresql` makes a PostgreSQL database of its own whatever the suite's database: it runs once, on the
    SQLite pass (the shorter of the two, which scripts/test runs side by side), and is skipped on the other. A test
    marked `one_database` checks what no database changes (who may open a page, the API's schema, a layout, a
    parser): it runs once, on the PostgreSQL pass, or on the SQLite pass when it says `on="sqlite"` (the browser
    tests do: the PostgreSQL pass is the longer one, and scripts/test ends when both have)."""
    from django.conf import settings

    this_pass = "postgresql" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "sqlite"
    for item in items:
        once = item.get_closest_marker("one_database")
        runs_on = once.kwargs.get("on", "postgresql") if once is not None else this_pass
        if runs_on not in ("postgresql", "sqlite"):
            raise pytest.UsageError(f"{item.nodeid}: one_database(on=...) is postgresql or sqlite, not {runs_on!r}")
        if runs_on != this_pass:
            item.add_marker(pytest.mark.skip(reason=f"the same on every database ({once.args[0]}): run on the "
                                                    f"{runs_on} pass"))
            continue
        if this_pass == "postgresql":
            if item.get_closest_marker("own_postgresql") is not None:
                item.add_marker(pytest.mark.skip(reason="makes a PostgreSQL database of its own: run on the "
                                                        "SQLite pass"))
            continue
        marker = item.get_closest_marker("postgresql")
        if marker is not None:
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "needs PostgreSQL")
            item.add_marker(pytest.mark.skip(reason=f"PostgreSQL only: {reason}"))
    _shard_deal(config, items)


def _shard() -> tuple[int, int] | None:
    """OUTREACH_TEST_SHARD="K/N" (scripts/test): this process runs the K-th of N shares of the pass."""
    value = os.environ.get("OUTREACH_TEST_SHARD", "").strip()
    if not value:
        return None
    k, _, n = value.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise pytest.UsageError(f"OUTREACH_TEST_SHARD must be K/N with 1 <= K <= N, got {value!r}")
    return int(k), int(n)


def _shard_deal(config, items) -> None:
    """With OUTREACH_TEST_SHARD, keep this shard's test modules: whole modules (their fixtures stay together),
    dealt out longest first by the seconds tests/shard_seconds.json measured for this database (a module it does
    not know counts 5 s), each to the shard with the least so far. Every shard of a pass computes the same deal."""
    shard = _shard()
    if shard is None:
        return
    import json
    from pathlib import Path

    from django.conf import settings

    k, n = shard
    database = "postgresql" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "sqlite"
    table = Path(__file__).with_name("shard_seconds.json")
    seconds = json.loads(table.read_text())[database] if table.exists() else {}
    modules = sorted({item.nodeid.split("::")[0] for item in items})
    loads, owner = [0.0] * n, {}
    for module in sorted(modules, key=lambda m: (-seconds.get(m, 5.0), m)):
        least = loads.index(min(loads))
        owner[module] = least + 1
        loads[least] += seconds.get(module, 5.0)
    kept = [item for item in items if owner[item.nodeid.split("::")[0]] == k]
    config.hook.pytest_deselected(items=[item for item in items if owner[item.nodeid.split("::")[0]] != k])
    items[:] = kept


_module_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """With OUTREACH_TEST_SECONDS_OUT: each module's seconds (set-up, call and tear-down of its tests)."""
    if os.environ.get("OUTREACH_TEST_SECONDS_OUT"):
        module = report.nodeid.split("::")[0]
        _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration


def pytest_sessionfinish(session):
    """Merge this pass's module seconds into OUTREACH_TEST_SECONDS_OUT (`scripts/test --measure-shards` makes
    tests/shard_seconds.json so)."""
    out = os.environ.get("OUTREACH_TEST_SECONDS_OUT")
    if not out or not _module_seconds:
        return
    import fcntl
    import json
    import tempfile
    from pathlib import Path

    from django.conf import settings

    database = "postgresql" if settings.DATABASES["default"]["ENGINE"].endswith("postgresql") else "sqlite"
    path = Path(out)
    with open(Path(tempfile.gettempdir()) / "outreach-shard-seconds.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        table = json.loads(path.read_text()) if path.exists() and path.stat().st_size else {}
        mine = table.setdefault(database, {})
        mine.update({module: round(seconds, 1) for module, seconds in _module_seconds.items()})
        path.write_text(json.dumps({db: dict(sorted(t.items())) for db, t in sorted(table.items())}, indent=1) + "\n")
