"""Requests per token and minute, counted in Redis (a fixed one-minute window).

Redis only counts: losing it forgets the counts and lets a minute's requests
through again, which decides nothing about what is sent.
"""

from __future__ import annotations

import time

import django_rq

KEY = "outreach:api-rate:{token}:{window}"


def rate_check(*, token_id: int, limit: int) -> int:
    """Count one request; 0 when it is allowed, else the seconds until the next window (for Retry-After)."""
    now = time.time()
    window = int(now // 60)
    key = KEY.format(token=token_id, window=window)
    conn = django_rq.get_connection("default")
    pipe = conn.pipeline()
    pipe.incr(key)
    pipe.expire(key, 120)
    count, _ = pipe.execute()
    if count <= limit:
        return 0
    return max(int((window + 1) * 60 - now) + 1, 1)
