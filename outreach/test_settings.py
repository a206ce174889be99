"""Settings for the test suite: real PostgreSQL and a Redis database of its own."""

import os
import secrets

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/outreach")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("OUTREACH_PUBLIC_URL", "http://testserver")
# A key of the test run only (child processes inherit it); plain http on loopback.
os.environ.setdefault("DJANGO_SECRET_KEY", "tests-" + secrets.token_urlsafe(50))
os.environ.setdefault("OUTREACH_HTTPS", "0")

from .settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# One test database per pytest process, so that concurrent runs on one machine
# (a developer's and a drill's, say) never flush each other's tables.
if DATABASES["default"]["ENGINE"].endswith("postgresql"):  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": f"test_outreach_{os.getpid()}"}  # noqa: F405
