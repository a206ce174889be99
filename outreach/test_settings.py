"""Settings for the test suite: real PostgreSQL (or SQLite) and a Redis database of its own.

OUTREACH_TEST_DATABASE picks the database the suite runs on:
- `postgresql` (the default): DATABASE_URL, or the local server;
- `sqlite`: a file SQLite database, as `scripts/run` uses by default (IMMEDIATE transactions,
  timeout 20). A file, not Django's in-memory test database, so that the threads and the worker and
  watcher processes a test starts share it.
"""

import os
import secrets
import tempfile
from pathlib import Path

# Read once, by the test run's own process: the processes it starts inherit the DATABASE_URL chosen here (or
# the one a test hands them), never the choice itself.
TEST_DATABASE = os.environ.pop("OUTREACH_TEST_DATABASE", "postgresql")
_SQLITE_DIR = Path(tempfile.gettempdir()) / "outreach-tests"
if TEST_DATABASE == "sqlite":
    # The configured database; the tests run in TEST["NAME"] below.
    os.environ["DATABASE_URL"] = f"sqlite:///{_SQLITE_DIR / f'outreach_{os.getpid()}.sqlite3'}"
elif TEST_DATABASE == "postgresql":
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/outreach")
else:
    raise ValueError(f"OUTREACH_TEST_DATABASE must be postgresql or sqlite, got {TEST_DATABASE!r}")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("OUTREACH_PUBLIC_URL", "http://testserver")
# A key of the test run only (child processes inherit it); plain http on loopback.
os.environ.setdefault("DJANGO_SECRET_KEY", "tests-" + secrets.token_urlsafe(50))
os.environ.setdefault("OUTREACH_HTTPS", "0")
# No lookup leaves the machine: DNS checks say "could not check" unless a test runs its own server on loopback.
os.environ.setdefault("OUTREACH_DNS_RESOLVER", "off")
os.environ.setdefault("OUTREACH_DNS_TIMEOUT", "1")
# The suite's servers (SMTP, IMAP, webhook receivers, OAuth) listen on loopback: this process and every process it
# starts with the product's settings may reach them (mailboxes.targets).
os.environ.setdefault("OUTREACH_ALLOW_PRIVATE_TARGETS", "127.0.0.0/8,::1/128,localhost")

from .settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
# `flush` after each transactional test: DELETE on PostgreSQL, not TRUNCATE (tests/flush).
INSTALLED_APPS = [*INSTALLED_APPS, "tests.flush"]  # noqa: F405
# Its test CAs are written to temp dirs.
OUTREACH_CA_DIRS = [*OUTREACH_CA_DIRS, tempfile.gettempdir()]  # noqa: F405

# One test database per pytest process, so that concurrent runs on one machine
# (a developer's and a drill's, say) never flush each other's tables.
if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": f"test_outreach_{os.getpid()}"}  # noqa: F405
else:
    # Django removes the file when the run ends (and a left-over one of a dead process at the next
    # run of the same pid).
    DATABASES["default"]["TEST"] = {"NAME": str(_SQLITE_DIR / f"test_outreach_{os.getpid()}.sqlite3")}  # noqa: F405
