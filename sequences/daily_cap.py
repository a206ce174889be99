"""A mailbox's daily cap: one counter row per mailbox and calendar day, kept by the transactions that authorize.

The day is the calendar day in the mailbox's window time zone (the zone its
operator thinks in), so the cap opens again at local midnight. The final
check takes a slot (`slot_take`): it adds one only while the count is below
the cap, atomically, so two workers cannot both take the last slot; the
counter row is the last lock of `sequences.locks`' order. A job that goes back from
authorized to scheduled (a transient refusal, a held message) did not pass
the hand-off, so its slot is given back (`sequences.states` calls
`slot_give_back` on that edge). Every function requires the caller's
transaction.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db.models import F

from mailboxes.models import Mailbox

from .models import DailySendCount
from .window import RECIPIENT, UTC, zone_of


def cap_zone(mailbox: Mailbox) -> str:
    """The zone the mailbox's days are counted in: its window's, or its fallback zone for a window that opens
    in each recipient's own zone (one counter per mailbox and day, whatever the recipients' zones)."""
    if mailbox.window_timezone == RECIPIENT:
        return mailbox.window_fallback_timezone or "UTC"
    return mailbox.window_timezone or "UTC"


def cap_day(mailbox: Mailbox, moment: datetime) -> date:
    """The calendar day of `moment` in the mailbox's cap zone."""
    return moment.astimezone(zone_of(cap_zone(mailbox))).date()


def day_end(mailbox: Mailbox, day: date) -> datetime:
    """Local midnight after `day`: when a mailbox that reached its cap may send again."""
    zone = zone_of(cap_zone(mailbox))
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)


def slot_take(*, mailbox: Mailbox, day: date) -> bool:
    """Take one more message for the mailbox on `day` unless that would pass its daily cap; False when full.

    One UPDATE adds one only while the count is below the cap: PostgreSQL re-checks that condition on the
    newest row after waiting for its lock, so two workers cannot both take the last slot; SQLite lets one
    writer in at a time. The day's first message creates the row first (a conflict with a concurrent creator
    is ignored) and tries again.
    """
    day_row = DailySendCount.objects.filter(mailbox=mailbox, day=day)
    if day_row.filter(sent__lt=mailbox.daily_cap).update(sent=F("sent") + 1):
        return True
    if day_row.exists():
        return False  # the cap is reached
    DailySendCount.objects.bulk_create([DailySendCount(mailbox=mailbox, day=day, sent=0)], ignore_conflicts=True)
    return bool(day_row.filter(sent__lt=mailbox.daily_cap).update(sent=F("sent") + 1))


def slot_give_back(*, mailbox_id: int, tz: str, authorized_at: datetime | None) -> None:
    """The slot a job took when it was authorized (at `authorized_at`) is free again."""
    if authorized_at is None:
        return
    day = authorized_at.astimezone(zone_of(tz)).date()
    DailySendCount.objects.filter(mailbox_id=mailbox_id, day=day, sent__gt=0).update(sent=F("sent") - 1)


def sent_on(mailbox: Mailbox, day: date) -> int:
    """Messages counted for the mailbox on `day` (for pages and tests)."""
    row = DailySendCount.objects.filter(mailbox=mailbox, day=day).values_list("sent", flat=True).first()
    return row or 0
