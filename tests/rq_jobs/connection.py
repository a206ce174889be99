"""Jobs that report on the database connection of the process they run in (tests/test_worker.py)."""

from __future__ import annotations

import os

from django.db import connection


def open_when_begun() -> bool:
    """Whether this process began with a live database connection of its parent's (one closed, and left so by
    a transaction of an earlier test that closed it, is not live)."""
    raw = connection.connection
    if raw is None:
        return False
    try:
        raw.cursor().close()  # no statement: a closed connection refuses even a cursor
    except Exception:  # noqa: BLE001 - sqlite3.ProgrammingError, psycopg.OperationalError
        return False
    return True


def backend() -> list[int]:
    """[this process, the database server process serving its connection] (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return [os.getpid(), cursor.fetchone()[0]]


def backend_ended() -> None:
    """The server ends this connection's session: the statement fails, and the connection is dead."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")


def touch() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone()[0]
