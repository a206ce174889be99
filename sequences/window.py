"""Sending windows: pure time arithmetic, no ORM."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
UTC = ZoneInfo("UTC")


def zone_of(name: str) -> ZoneInfo:
    """The zone NAME names; UTC for an empty name or one this machine does not know.

    Every path that saves a zone refuses an unknown one (TOML, the UI, the admin: `zone_problem`), so an
    unknown name here was written around them (straight into the table, or a zone dropped from tzdata). It
    counts in UTC, as pages say (`local_and_utc`), rather than crashing every page and worker that reads it.
    """
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name longer than a file name may be
        return UTC


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
    zone = zone_of(tz)
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
            return opening.astimezone(UTC)
    raise ValueError("sending window never opens")


# --- the zone a window opens in -------------------------------------------------------------------

RECIPIENT = "recipient"  # a mailbox's window_timezone: open in each contact's own zone


def zone_problem(name: str) -> str:
    """Why *name* is not a time zone ('' when it is an IANA name this machine knows)."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        shown = repr(name) if len(name) <= 64 else repr(name[:64]) + "…"
        return f"unknown time zone {shown} (use an IANA name such as Europe/Berlin or America/New_York)"
    return ""


def window_zone(*, window_timezone: str, fallback: str, contact_zone: str) -> str:
    """The zone a mailbox's window opens in for one contact.

    A fixed zone for every contact; with "recipient", the contact's own zone,
    or the mailbox's fallback zone where the contact has none (or one that is
    not a zone: enrollment refuses those, so only a later edit leaves one).
    """
    if window_timezone != RECIPIENT:
        return window_timezone or "UTC"
    if contact_zone and not zone_problem(contact_zone):
        return contact_zone
    return fallback or "UTC"


def mailbox_window_zone(mailbox, contact_zone: str) -> str:
    """window_zone for a Mailbox row (its window_timezone and window_fallback_timezone)."""
    return window_zone(window_timezone=mailbox.window_timezone, fallback=mailbox.window_fallback_timezone,
                       contact_zone=contact_zone)


def mailbox_next_open(now: datetime, *, mailbox, contact_zone: str) -> datetime | None:
    """next_open of a Mailbox row's window for one contact."""
    return next_open(now, days=mailbox.window_days, start=mailbox.window_start, end=mailbox.window_end,
                     tz=mailbox_window_zone(mailbox, contact_zone))


def local_and_utc(moment: datetime, zone: str) -> tuple[str, str]:
    """One moment as ('Tue 1 Dec 2026 09:00 Pacific/Auckland', 'Mon 30 Nov 2026 20:00 UTC')."""
    local = moment.astimezone(zone_of(zone))
    utc = moment.astimezone(UTC)
    if zone_problem(zone):
        zone = f"UTC (the unknown zone {zone[:64]!r} counts as UTC)"
    return f"{local:%a} {local.day} {local:%b %Y %H:%M} {zone}", f"{utc:%a} {utc.day} {utc:%b %Y %H:%M} UTC"
