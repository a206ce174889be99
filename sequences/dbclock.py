"""The database clock: one clock for every worker and host."""

from __future__ import annotations

from django.db import connection
from django.db.models import DateTimeField, Func
from django.utils import timezone


class DbClock(Func):
    """clock_timestamp(): wall time at the moment the statement runs, in µs.

    Unlike now(), which is frozen at transaction start, it orders events
    inside one transaction and across workers by when they really happened.
    """

    template = "clock_timestamp()"
    output_field = DateTimeField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return "STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'NOW')", []


def clock_sql() -> str:
    """The database clock as SQL for a statement written by hand (with parameters: a literal % is doubled)."""
    if connection.vendor == "postgresql":
        return DbClock.template
    return DbClock().as_sqlite(None, connection)[0]


def db_now():
    """Read the database clock (a datetime, UTC)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT clock_timestamp()")
            return cursor.fetchone()[0]
        return timezone.now()


def iso(moment) -> str:
    """A timestamp for a timeline event's data: ISO 8601, or '' when there is none."""
    return moment.isoformat() if moment else ""
