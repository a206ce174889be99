"""The bench's own database: a throwaway PostgreSQL database on loopback.

Used by the outer process only (see `proving.bench`). Nothing here touches
the configured database: the database is created under a name of our own and
dropped at the end. The private Redis is the drills' (`proving.harness.stack`).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlparse

import psycopg

from proving.harness.stack import LOOPBACK_TARGETS

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
DB_PREFIX = "outreach_bench_"
MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


class BenchSetupError(Exception):
    pass


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    password: str = ""

    @classmethod
    def from_settings(cls, databases: dict, override_url: str = "") -> PgServer:
        """The configured PostgreSQL server (or postgres@127.0.0.1:5432 when the app runs on SQLite)."""
        if override_url:
            url = urlparse(override_url)
            server = cls(url.hostname or "127.0.0.1", url.port or 5432, url.username or "postgres", url.password or "")
        else:
            db = databases["default"]
            if db["ENGINE"].endswith("postgresql"):
                server = cls(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432), db.get("USER") or "postgres",
                             db.get("PASSWORD") or "")
            else:
                server = cls("127.0.0.1", 5432, "postgres")
        if server.host not in LOOPBACK:
            raise BenchSetupError(f"benchmarks run against a PostgreSQL on loopback only, not {server.host!r}")
        return server

    def connect(self, dbname: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password or None,
                               dbname=dbname, autocommit=True, connect_timeout=10)

    def url(self, dbname: str) -> str:
        auth = quote(self.user) + (":" + quote(self.password) if self.password else "")
        return f"postgres://{auth}@{self.host}:{self.port}/{dbname}"

    def create_database(self, name: str) -> None:
        _check_name(name)
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def drop_database(self, name: str) -> None:
        _check_name(name)
        with self.connect() as conn:
            # FORCE (PostgreSQL 13+): our own workers may still hold connections.
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _check_name(name: str) -> None:
    # The only databases this module ever creates or drops.
    if not re.fullmatch(DB_PREFIX + r"[0-9a-z_]+", name):
        raise BenchSetupError(f"refusing to create or drop database {name!r}: not a bench database")


def migrate(env: dict[str, str], log: list[str]) -> None:
    """`manage.py migrate` into the bench database.

    If a data-only migration (RunPython, no schema change) fails -- e.g. one
    still being written by another engineer -- it is recorded in *log*, faked
    for this throwaway database, and migrate is run again. A failing schema
    migration stops the bench.
    """
    for _attempt in range(5):
        proc = subprocess.run([sys.executable, str(MANAGE), "migrate", "--noinput", "-v", "1"], env=env,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode == 0:
            return
        failing = re.findall(r"Applying (\w+)\.(\w+)\.\.\.(?! OK)", proc.stdout)
        if not failing:
            raise BenchSetupError(f"migrate failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        app, name = failing[-1]
        if not _data_only(app, name):
            raise BenchSetupError(f"migration {app}.{name} failed and changes the schema:\n{proc.stderr[-3000:]}")
        error = (proc.stderr.strip().splitlines() or ["?"])[-1]
        log.append(f"migration {app}.{name} failed ({error}); it is data-only (RunPython), "
                   "so it was faked for the bench database")
        subprocess.run([sys.executable, str(MANAGE), "migrate", "--noinput", "--fake", app, name], env=env,
                       check=True, capture_output=True, timeout=600)
    raise BenchSetupError("migrate kept failing")


def _data_only(app: str, name: str) -> bool:
    from django.db.migrations.operations.special import RunPython

    module = importlib.import_module(f"{app}.migrations.{name}")
    return all(isinstance(op, RunPython) for op in module.Migration.operations)


def bench_env(database_url: str, redis_url: str) -> dict[str, str]:
    """The environment of the inner process and everything it starts."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        OUTREACH_BENCH_DATABASE_URL=database_url,
        OUTREACH_BENCH_REDIS_URL=redis_url,
        OUTREACH_LOG_LEVEL="WARNING",  # one log line per job would be measured too
        # As in production: with DEBUG on, Django keeps every query of every worker in memory.
        DEBUG="0",
        PYTHONUNBUFFERED="1",
    )
    env.setdefault("DJANGO_SETTINGS_MODULE", "outreach.settings")
    env.setdefault("OUTREACH_ALLOW_PRIVATE_TARGETS", LOOPBACK_TARGETS)  # its servers listen on loopback
    # The bench's own settings module chooses nothing: the product's settings read these variables.
    if env["DJANGO_SETTINGS_MODULE"] == "outreach.test_settings":
        env["DJANGO_SETTINGS_MODULE"] = "outreach.settings"
    return env
