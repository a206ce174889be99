"""Percentiles and plain-text tables. No Django."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of *values*; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary_ms(seconds: Sequence[float]) -> dict[str, Any]:
    """n, p50, p99, max and mean of durations given in seconds, reported in milliseconds."""
    ms = [s * 1000 for s in seconds]
    if not ms:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None, "mean_ms": None}
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "max_ms": round(max(ms), 3),
        "mean_ms": round(sum(ms) / len(ms), 3),
    }


def redis_summary_ms(redis, key: str) -> dict[str, Any]:
    """summary_ms of the durations (seconds) the workers pushed to the Redis list `key`."""
    return summary_ms([float(x) for x in redis.lrange(key, 0, -1)])


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    if a is None or b in (None, 0):
        return None
    return round(a / b, digits)


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}" if abs(value) >= 0.1 else f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]], notes: Sequence[str] = ()) -> str:
    """A fixed-width text table (also valid Markdown)."""
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        padded = (v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True)))
        return "| " + " | ".join(padded) + " |"

    out = [f"### {title}", "", line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells]
    if notes:
        out.append("")
        out += [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


class StatementCounter:
    """Counts (and keeps) the SQL statements a connection sends: `with connection.execute_wrapper(counter)`."""

    def __init__(self):
        self.sql: list[str] = []

    def __call__(self, execute, sql, params, many, context):
        self.sql.append(sql)
        return execute(sql, params, many, context)
