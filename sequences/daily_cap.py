"""A mailbox's pace: its daily cap (with its ramp-up) and the spacing of its messages, kept by the final check.

The daily cap: one counter row per mailbox and calendar day, kept by the transactions that authorize.

The day is the calendar day in the mailbox's window time zone (the zone its
operator thinks in), so the cap opens again at local midnight. The final
check takes a slot (`slot_take`): it adds one only while the count is below
the cap, atomically, so two workers cannot both take the last slot; the
counter row is the last lock of `sequences.locks`' order. A job that goes back from
authorized to scheduled (a transient refusal, a held message) did not pass
the hand-off, so its slot is given back (`sequences.states` calls
`slot_give_back` on that edge). Every function requires the caller's
transaction.

The day's limit is the daily cap, or on a ramp (`ramp_start`, `ramp_step`) the ramp's figure for the day,
counted from the mailbox's first sending day (its first counter row). The spacing: the final check holds the
mailbox's row lock, reads `next_handoff_at` (`gap_wait`) and, for a message it authorizes, sets it
`min_gap` plus a random extra up to `gap_jitter` later (`gap_take`), so two workers on any hosts never hand
off two messages of one mailbox closer than `min_gap`.
"""

from __future__ import annotations

import random
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


def first_day(mailbox: Mailbox) -> date | None:
    """The mailbox's first sending day (its first counter row), or None before its first message."""
    return DailySendCount.objects.filter(mailbox=mailbox).order_by("day").values_list("day", flat=True).first()


def day_limit(mailbox: Mailbox, day: date) -> int:
    """How many messages the mailbox may send on `day`: its daily cap, or on a ramp the ramp's figure that day."""
    if mailbox.ramp_start is None:
        return mailbox.daily_cap
    began = first_day(mailbox) or day
    return min(mailbox.daily_cap, mailbox.ramp_start + mailbox.ramp_step * max((day - began).days, 0))


def ramp_full_on(mailbox: Mailbox, day: date) -> date | None:
    """The first day the ramp allows the whole daily cap (None without a ramp, or on a ramp that never gets
    there: a step of 0 below the cap)."""
    if mailbox.ramp_start is None:
        return None
    began = first_day(mailbox) or day
    missing = mailbox.daily_cap - mailbox.ramp_start
    if missing <= 0:
        return began
    if mailbox.ramp_step <= 0:
        return None
    return began + timedelta(days=-(-missing // mailbox.ramp_step))


def gap_wait(mailbox: Mailbox, now: datetime) -> datetime | None:
    """When the mailbox may hand off its next message, if that is later than `now` (read under its lock)."""
    if mailbox.min_gap <= 0 or mailbox.next_handoff_at is None or mailbox.next_handoff_at <= now:
        return None
    return mailbox.next_handoff_at


def gap_take(mailbox: Mailbox, now: datetime) -> None:
    """A message of the mailbox is authorized at `now`: the next may leave min_gap (plus jitter) later."""
    if mailbox.min_gap <= 0:
        return
    gap = mailbox.min_gap + (random.uniform(0, mailbox.gap_jitter) if mailbox.gap_jitter else 0)
    mailbox.next_handoff_at = now + timedelta(seconds=gap)
    Mailbox.objects.filter(pk=mailbox.pk).update(next_handoff_at=mailbox.next_handoff_at)


def slot_take(*, mailbox: Mailbox, day: date, limit: int | None = None) -> bool:
    """Take one more message for the mailbox on `day` unless that would pass its daily cap; False when full.

    One UPDATE adds one only while the count is below the cap: PostgreSQL re-checks that condition on the
    newest row after waiting for its lock, so two workers cannot both take the last slot; SQLite lets one
    writer in at a time. The day's first message creates the row first (a conflict with a concurrent creator
    is ignored) and tries again. `limit`: the day's limit (`day_limit`), the daily cap when not given.
    """
    limit = mailbox.daily_cap if limit is None else limit
    day_row = DailySendCount.objects.filter(mailbox=mailbox, day=day)
    if day_row.filter(sent__lt=limit).update(sent=F("sent") + 1):
        return True
    if day_row.exists():
        return False  # the cap is reached
    DailySendCount.objects.bulk_create([DailySendCount(mailbox=mailbox, day=day, sent=0)], ignore_conflicts=True)
    return bool(day_row.filter(sent__lt=limit).update(sent=F("sent") + 1))


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
