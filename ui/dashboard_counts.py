"""The dashboard's numbers over all time, counted once a minute in the background.

At a million jobs, counting every sequence's results, the enrollments by status and the sends per day takes
about a second: too long for each view of the dashboard. The scheduler counts them once a minute (`count_task`,
registered in outreach/cron.py) into one row per workspace (DashboardCounts), each counted inside its workspace
(workspaces.scoping: every count is of that workspace's rows only); the dashboard reads its workspace's row and
says when it was counted. When the row is missing or older than STALE (no scheduler running), the page counts
itself, and a sequence created since the last count is counted on the spot. Reply → stop over the last days (the
receipts' quantiles per mailbox) is counted with them. What is happening now (emails on their way,
outcomes unknown, mailboxes, replies waiting) is always counted live, and so is a sequence's own page.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from db.clock import db_now
from inbound.replies import receipts
from sequences.models import DashboardCounts, Sequence
from workspaces.current import each_workspace, scope_or_only
from workspaces.scoping import scoped_workspace_id

from . import charts, results

STALE = timedelta(minutes=3)


def count() -> DashboardCounts:
    """Count everything the dashboard shows over all time in the scope's workspace (outside one: the install's only
    workspace), and keep it, stamped with when the count began."""
    with scope_or_only():
        return _count(scoped_workspace_id())


def _count(workspace_id: int) -> DashboardCounts:
    began = db_now()
    numbers: dict[str, Any] = {
        **charts.enrollment_numbers(),
        "activity": charts.activity_numbers(),
        "sequences": {str(pk): counts.numbers()
                      for pk, counts in results.sequence_counts(Sequence.objects.all()).items()},
        "reply_to_stop": [{"mailbox": x.mailbox, "replies": x.replies, "quantiles": list(x.quantiles.items())}
                          for x in receipts.reply_to_stop_latencies()],
    }
    row, _ = DashboardCounts.objects.update_or_create(workspace_id=workspace_id,
                                                      defaults={"counted_at": began, "numbers": numbers})
    return row


def count_task() -> str:
    """The scheduler's job: count each workspace's, and say when."""
    rows = [count() for _ in each_workspace()] or [count()]  # none yet: count() makes the install's only one
    suffix = f" ({len(rows)} workspaces)" if len(rows) > 1 else ""
    return f"dashboard counted at {rows[-1].counted_at.isoformat()}{suffix}"


def latest() -> DashboardCounts:
    """The scope's workspace's last count, or a new one when there is none or it is older than STALE."""
    row = DashboardCounts.objects.filter(workspace_id=scoped_workspace_id()).first()
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
