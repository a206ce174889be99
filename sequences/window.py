"""Sending windows: pure time arithmetic, no ORM."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def parse_days(value: str) -> frozenset[int]:
    """'mon,tue' -> {0, 1}; '' -> every day. Raises ValueError naming the bad day."""
    if not value.strip():
        return frozenset(range(7))
    out = set()
    for part in value.split(","):
        part = part.strip().lower()[:3]
        if part not in DAYS:
            raise ValueError(f"unknown weekday {part!r} (use {', '.join(DAYS)})")
        out.add(DAYS.index(part))
    return frozenset(out)


def next_open(
    now: datetime, *, days: str, start: time | None, end: time | None, tz: str
) -> datetime | None:
    """None when `now` is inside the window, else the next moment the window opens (UTC-aware)."""
    allowed = parse_days(days)
    zone = ZoneInfo(tz or "UTC")
    local = now.astimezone(zone)
    start = start or time(0, 0)
    end = end or time(23, 59, 59, 999999)

    def inside(moment: datetime) -> bool:
        return moment.weekday() in allowed and start <= moment.time() <= end

    if inside(local):
        return None
    for offset in range(0, 8):
        day = (local + timedelta(days=offset)).date()
        if day.weekday() not in allowed:
            continue
        opening = datetime.combine(day, start, tzinfo=zone)
        if opening > local:
            return opening.astimezone(ZoneInfo("UTC"))
    raise ValueError("sending window never opens")
