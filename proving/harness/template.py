"""A migrated database to copy: within one test run, the drills and benchmarks migrate once, then copy.

Every drill and benchmark makes a database of its own and migrates it, as an operator's run does: about 6 s
of CPU each on these machines, and the test suite starts some twenty of them per database. When
OUTREACH_MIGRATED_TEMPLATE holds a tag (tests/conftest.py sets it for its run; nothing else does), the first
database of the run is migrated and then copied to a template named after the tag; the later ones are copies
of that template -- on PostgreSQL `CREATE DATABASE ... TEMPLATE` on the same server, on SQLite the file,
through SQLite's backup. A copy that cannot be made (no template yet, someone connected) falls back to the
migration. The run drops its templates at the end (`drop`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import tempfile
from pathlib import Path

import psycopg

TEMPLATE_ENV = "OUTREACH_MIGRATED_TEMPLATE"
PREFIX = "outreach_template_"


def tag() -> str:
    value = os.environ.get(TEMPLATE_ENV, "")
    return value if re.fullmatch(r"[0-9a-z_]{1,30}", value) else ""


def pg_name() -> str:
    return PREFIX + tag() if tag() else ""


def sqlite_path() -> Path | None:
    return Path(tempfile.gettempdir()) / f"{PREFIX}{tag()}.sqlite3" if tag() else None


def _connect(server: dict[str, str]) -> psycopg.Connection:
    """The maintenance database of the server (`host`, `port`, `user`, `password`)."""
    return psycopg.connect(host=server.get("host") or None, port=server.get("port") or None,
                           user=server.get("user") or None, password=server.get("password") or None,
                           dbname="postgres", autocommit=True, connect_timeout=10)


def pg_copy(server: dict[str, str], name: str) -> bool:
    """CREATE DATABASE `name` as a copy of the run's template: True if it was made (and needs no migration)."""
    template = pg_name()
    if not template:
        return False
    try:
        with _connect(server) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template]).fetchone() is None:
                return False
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    except psycopg.Error:
        return False
    return True


def pg_save(server: dict[str, str], name: str) -> None:
    """Copy the just-migrated database `name` (nobody connected) to the run's template, if there is none yet."""
    template = pg_name()
    if template:
        with contextlib.suppress(psycopg.Error), _connect(server) as conn:
            conn.execute(f'CREATE DATABASE "{template}" TEMPLATE "{name}"')


def sqlite_copy(path: Path) -> bool:
    """Write the run's template into the new database file `path`: True if it was (no migration needed)."""
    template = sqlite_path()
    if template is None or not template.exists():
        return False
    _backup(template, path)
    return True


def sqlite_save(path: Path) -> None:
    """Copy the just-migrated database file `path` to the run's template, if there is none yet."""
    template = sqlite_path()
    if template is None or template.exists():
        return
    part = template.with_name(f"{template.name}.{os.getpid()}.part")
    _backup(path, part)
    os.replace(part, template)


def _backup(source: Path, target: Path) -> None:
    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def drop(server: dict[str, str] | None) -> None:
    """Remove the run's templates: the SQLite file, and the PostgreSQL database on `server` if given."""
    path = sqlite_path()
    if path is not None:
        path.unlink(missing_ok=True)
    if server is not None and pg_name():
        with contextlib.suppress(psycopg.Error), _connect(server) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{pg_name()}" WITH (FORCE)')
