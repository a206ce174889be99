"""What a database column can hold, for values that arrive as request text.

Text: no NUL (PostgreSQL refuses it, also in a lookup) and no lone surrogate (no UTF-8 encodes one; JSON's
"\\ud800" decodes to one). Row ids: ASCII digits up to the largest id a column holds; "²" passes `str.isdigit`
and `int()` refuses it, and 10**30 is past every column, so either one names no row. Other integers: the range of
PostgreSQL's integer, which every integer column here is (SQLite holds 64 bits, but a value one database refuses is
refused on both), so a form, the TOML loader and the API refuse a larger number in words before any write.
"""

from __future__ import annotations

import re

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MAX_ROW_ID = 2**63 - 1  # a bigint primary key; Django's own user ids (integer) are looked up, never written blind
INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # an integer column (PositiveIntegerField: from 0)
_ROW_ID = re.compile(r"[0-9]{1,19}")


def unstorable(text: str) -> bool:
    """Whether the text holds a NUL character or a lone surrogate."""
    return UNSTORABLE.search(text) is not None


def shown(text: str, limit: int = 320) -> str:
    """The text as it may be stored and shown back: each unstorable character replaced, at most `limit` long."""
    return UNSTORABLE.sub("\ufffd", text[:limit])


def integer_problem(value: int, *, low: int = INT_MIN, high: int = INT_MAX) -> str | None:
    """Why an integer cannot be stored in a column that holds `low` to `high`, in words; None when it can."""
    if value > high:
        return f"{str(value)[:40]} is out of range: a number here is at most {high}"
    if value < low:
        return f"{str(value)[:40]} is out of range: a number here is at least {low}"
    return None


def row_id(value: object) -> int | None:
    """The row id a form or query value names, or None when it can name no row."""
    text = str(value or "")
    if _ROW_ID.fullmatch(text) is None:
        return None
    number = int(text)
    return number if number <= MAX_ROW_ID else None


class RowIdConverter:
    """`<id:pk>` in a URL: an id a column can hold. A longer or larger number matches no route (a 404) instead of
    reaching a lookup that SQLite cannot even compare with a key that is a relation."""

    regex = _ROW_ID.pattern

    def to_python(self, value: str) -> int:
        number = row_id(value)
        if number is None:
            raise ValueError(f"{value[:40]} is past every id")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
