"""Jobs that report on the database connection of the process they run in (tests/test_worker.py)."""

from __future__ import annotations

import os

from django.db import connection

# The connection objects `touch` used, kept alive (so no later object takes the address of one) to be recognised
# in a process forked afterwards.
TOUCHED: list = []


def shares_a_connection_of_its_parent() -> bool:
    """Whether this process's database connection is one that `touch` used in the process it was forked from."""
    return any(connection.connection is held for held in TOUCHED)


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
        value = cursor.fetchone()[0]
    TOUCHED.append(connection.connection)
    return value
