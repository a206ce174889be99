"""Durations as the TOML files, forms and pages write them ("90s", "15m", "3d", "4 hours", "1 day 6 hours") and the
seconds the database keeps. Apart from the loader (parse.py), so the admin, the forms and the reply rules read
a duration without loading the mailbox and sign-in checks the loader needs."""

from __future__ import annotations

import re
from typing import Any

DURATION = re.compile(r"^\s*([0-9]+)\s*([smhdw]?)\s*$")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# "3 days", "4 hours", "1 day 6 hours", "90 minutes": a number and a unit in words, one or more times.
DURATION_PART = re.compile(r"([0-9]+)\s*(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|[smhdw])\b", re.I)


# The longest duration any key or form takes (a step's wait, a reply view's age, a guardrail's window): a year,
# well inside the 32-bit column that holds it in seconds. A longer one is refused, never wrapped.
MAX_DURATION = 365 * 86400
MAX_DURATION_WORDS = "365 days"
# More digits than any duration up to MAX_DURATION has: refused before int() reads them.
_MAX_DIGITS = 12


def parse_duration(value: Any) -> int:
    """'90s', '15m', '3d', '1w' or a number of seconds -> seconds; ValueError in words, also over MAX_DURATION."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return _at_most_a_year(value, value)
    match = DURATION.match(str(value)) if isinstance(value, str) else None
    if match:
        return _at_most_a_year(_number(match.group(1), value) * UNITS[match.group(2)], value)
    if isinstance(value, str) and value.strip():
        parts = DURATION_PART.findall(value)
        rest = DURATION_PART.sub("", value).replace(",", " ").replace(" and ", " ").strip()
        if parts and not rest:
            return _at_most_a_year(sum(_number(n, value) * UNITS[unit[0].lower()] for n, unit in parts), value)
    raise ValueError(f"{value!r} is not a duration (use e.g. \"0s\", \"90s\", \"15m\", \"3d\", \"3 days\", "
                     "\"4 hours\")")


class DurationTooLong(ValueError):
    """A duration over MAX_DURATION: its words name the maximum."""


def _shown(value: Any) -> str:
    text = str(value)
    return repr(value) if len(text) <= 40 else repr(text[:40]) + "…"


def _number(digits: str, value: Any) -> int:
    if len(digits) > _MAX_DIGITS:
        raise DurationTooLong(f"{_shown(value)} is too long: a duration is at most {MAX_DURATION_WORDS}")
    return int(digits)


def _at_most_a_year(seconds: int, value: Any) -> int:
    if seconds > MAX_DURATION:
        raise DurationTooLong(f"{_shown(value)} is too long: a duration is at most {MAX_DURATION_WORDS}")
    return seconds


def duration_text(seconds: int) -> str:
    """Seconds as the loader's shortest exact duration: 259200 -> "3d", 5400 -> "90m", 0 -> "0s"."""
    for unit in ("w", "d", "h", "m"):
        if seconds and seconds % UNITS[unit] == 0:
            return f"{seconds // UNITS[unit]}{unit}"
    return f"{seconds}s"
