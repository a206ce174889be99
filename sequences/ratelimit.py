"""Counts per fixed time window in Redis: requests per API token and minute, failed webhook logins per address.

Redis only counts: losing it forgets the counts and lets a window's requests
through again, which decides nothing about what is sent.
"""

from __future__ import annotations

import time

import django_rq

KEY = "outreach:{name}:{window}"


def window_count(*, name: str, seconds: int, add: int = 1) -> tuple[int, int]:
    """Add *add* to NAME's count in the current window of *seconds*: (the count now, seconds until the next
    window). `add=0` reads the count without adding to it."""
    now = time.time()
    window = int(now // seconds)
    key = KEY.format(name=name, window=window)
    conn = django_rq.get_connection("default")
    pipe = conn.pipeline()
    pipe.incrby(key, add)
    pipe.expire(key, 2 * seconds)
    count, _ = pipe.execute()
    return count, max(int((window + 1) * seconds - now) + 1, 1)


def rate_check(*, token_id: int, limit: int) -> int:
    """Count one request; 0 when it is allowed, else the seconds until the next window (for Retry-After)."""
    count, retry_after = window_count(name=f"api-rate:{token_id}", seconds=60)
    return 0 if count <= limit else retry_after
