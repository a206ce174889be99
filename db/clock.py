"""The database's wall clock: one clock for every host and worker, read where a time is written or compared.

- `DbClock`: the clock as an ORM expression. PostgreSQL's `clock_timestamp()` (not `now()`, which is frozen at
  the start of the transaction) orders events inside one transaction and across workers by when they happened;
  SQLite's `strftime('%f')` gives milliseconds.
- `db_now()`: that clock read on its own (the ORM has no SELECT without a table); `db_clock_written()`: that
  clock as a value to write where later queries compare with parameters.

With `db.sql`, the only modules that branch on the database vendor.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection
from django.db.models import DateTimeField, Func
from django.utils import timezone


class DbClock(Func):
    """The database's wall clock when the statement runs: microseconds on PostgreSQL, milliseconds on SQLite."""

    template = "clock_timestamp()"
    output_field = DateTimeField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return "STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'NOW')", []


def db_clock_written() -> DbClock | datetime:
    """The database clock as a value to write into a column that later queries compare with parameters.

    PostgreSQL: the clock expression itself (no statement of its own). SQLite: this process's clock as a value
    (SQLite runs in this process), because SQLite's own clock text has three decimals and a parameter six, so a
    row written with DbClock() would not compare equal to its own value read back (keyset paging would repeat it).
    """
    return DbClock() if connection.vendor == "postgresql" else timezone.now()


def db_now() -> datetime:
    """Read the database clock (an aware datetime, UTC)."""
    if connection.vendor != "postgresql":
        # SQLite runs in this process: its clock is this machine's.
        return timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]
