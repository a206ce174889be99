"""A mailbox's daily cap: one counter row per mailbox and calendar day, kept by the transactions that authorize.

The day is the calendar day in the mailbox's window time zone (the zone its
operator thinks in), so the cap opens again at local midnight. The final
check takes a slot with one conditional upsert (`slot_gate`, in the statement
of the authorization itself): it adds one only while the count is below the
cap, atomically, so two workers cannot both take the last slot; the counter
row is the last lock of `sequences.locks`' order. A job that goes back from
authorized to scheduled (a transient refusal, a held message) did not pass
the hand-off, so its slot is given back (`sequences.states` calls
`slot_give_back` on that edge). Every function requires the caller's
transaction.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.db import connection

from mailboxes.models import Mailbox

from .models import DailySendCount, SendJob
from .window import RECIPIENT

TABLE = DailySendCount._meta.db_table


def cap_zone(mailbox: Mailbox) -> str:
    """The zone the mailbox's days are counted in: its window's, or its fallback zone for a window that opens
    in each recipient's own zone (one counter per mailbox and day, whatever the recipients' zones)."""
    if mailbox.window_timezone == RECIPIENT:
        return mailbox.window_fallback_timezone or "UTC"
    return mailbox.window_timezone or "UTC"


def cap_day(mailbox: Mailbox, moment: datetime) -> date:
    """The calendar day of `moment` in the mailbox's cap zone."""
    return moment.astimezone(ZoneInfo(cap_zone(mailbox))).date()


def day_end(mailbox: Mailbox, day: date) -> datetime:
    """Local midnight after `day`: when a mailbox that reached its cap may send again."""
    zone = ZoneInfo(cap_zone(mailbox))
    return datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(ZoneInfo("UTC"))


def slot_gate(*, mailbox: Mailbox, day: date, job_id: int, state: str, version: int) -> tuple[str, list]:
    """The statement that takes one more message for the mailbox on `day`, unless that would pass its daily cap,
    and only while the job is still in `state` at `version`: (SQL, params), RETURNING a row when it took one.

    `sequences.states.job_move` runs it as the gate of the authorization (`gate=`): on PostgreSQL in the
    move's own statement, so the slot and the move are one round trip; the job moves only if the slot was
    taken. The upsert is atomic: two workers cannot both take the last slot. A job that is no longer in that
    state takes no slot (the lease sweeper moves claims without the enrollment lock; should it win the
    race inside the very statement, the day counts one message more than left, never one less).
    """
    return (
        f"INSERT INTO {TABLE} (mailbox_id, day, sent) SELECT %s, %s, 1 WHERE EXISTS "
        f"(SELECT 1 FROM {SendJob._meta.db_table} WHERE id = %s AND state = %s AND version = %s) "
        f"ON CONFLICT (mailbox_id, day) DO UPDATE SET sent = {TABLE}.sent + 1 WHERE {TABLE}.sent < %s "
        "RETURNING sent",
        [mailbox.pk, day, job_id, state, version, mailbox.daily_cap],
    )


def slot_give_back(*, mailbox_id: int, tz: str, authorized_at: datetime | None) -> None:
    """The slot a job took when it was authorized (at `authorized_at`) is free again."""
    if authorized_at is None:
        return
    day = authorized_at.astimezone(ZoneInfo(tz or "UTC")).date()
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {TABLE} SET sent = sent - 1 WHERE mailbox_id = %s AND day = %s AND sent > 0", [mailbox_id, day]
        )


def sent_on(mailbox: Mailbox, day: date) -> int:
    """Messages counted for the mailbox on `day` (for pages and tests)."""
    row = DailySendCount.objects.filter(mailbox=mailbox, day=day).values_list("sent", flat=True).first()
    return row or 0
