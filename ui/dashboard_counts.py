"""The dashboard's numbers over all time, counted once a minute in the background.

At a million jobs, counting every sequence's results, the enrollments by status and the sends per day takes
about a second: too long for each view of the dashboard. The scheduler counts them once a minute (`count_task`,
registered in outreach/cron.py) into one row (DashboardCounts); the dashboard reads that row and says when it
was counted. When the row is missing or older than STALE (no scheduler running), the page counts itself, and
a sequence created since the last count is counted on the spot. Reply → stop over the last days (the receipts'
quantiles per mailbox) is counted with them. What is happening now (emails on their way,
outcomes unknown, mailboxes, replies waiting) is always counted live, and so is a sequence's own page.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from db.clock import db_now
from inbound.replies import receipts
from sequences.models import DashboardCounts, Sequence

from . import charts, results

STALE = timedelta(minutes=3)
ROW = 1  # the one row


def count() -> DashboardCounts:
    """Count everything the dashboard shows over all time, and keep it, stamped with when the count began."""
    began = db_now()
    numbers: dict[str, Any] = {
        **charts.enrollment_numbers(),
        "activity": charts.activity_numbers(),
        "sequences": {str(pk): counts.numbers()
                      for pk, counts in results.sequence_counts(Sequence.objects.all()).items()},
        "reply_to_stop": [{"mailbox": x.mailbox, "replies": x.replies, "quantiles": list(x.quantiles.items())}
                          for x in receipts.reply_to_stop_latencies()],
    }
    row, _ = DashboardCounts.objects.update_or_create(pk=ROW, defaults={"counted_at": began, "numbers": numbers})
    return row


def count_task() -> str:
    """The scheduler's job: count, and say when."""
    return f"dashboard counted at {count().counted_at.isoformat()}"


def latest() -> DashboardCounts:
    """The last count, or a new one when there is none or it is older than STALE."""
    row = DashboardCounts.objects.filter(pk=ROW).first()
    if row is None or row.counted_at < db_now() - STALE:
        row = count()
    return row


def sequence_results(row: DashboardCounts, limit: int = 20) -> list[tuple[Sequence, results.Counts]]:
    """The first *limit* sequences by name with their results as counted in *row*, or counted now for those
    created since."""
    sequences = list(Sequence.objects.order_by("name")[:limit])
    kept = row.numbers.get("sequences", {})
    missing = results.sequence_counts(Sequence.objects.filter(pk__in=[s.pk for s in sequences
                                                                       if str(s.pk) not in kept]))
    return [(s, (missing.get(s.pk) or _counts(kept[str(s.pk)])).finish(sequence_id=s.pk)) for s in sequences]


def reply_to_stop(row: DashboardCounts) -> list[receipts.Latency]:
    """Reply → stop per mailbox over the last days, as counted in *row* (counted now for a row kept before it
    held them)."""
    kept = row.numbers.get("reply_to_stop")
    if kept is None:
        return receipts.reply_to_stop_latencies()
    return [receipts.Latency(mailbox=x["mailbox"], replies=x["replies"], quantiles=dict(map(tuple, x["quantiles"])))
            for x in kept]


def _counts(numbers: dict[str, int]) -> results.Counts:
    """Counts from a kept row; a column the row does not know (it was counted before a release) reads 0."""
    return results.Counts(**{name: n for name, n in numbers.items() if name in results.COLUMNS})
