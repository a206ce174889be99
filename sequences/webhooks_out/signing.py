"""Signatures of webhook deliveries: HMAC-SHA256 over "<timestamp>.<body>", as Stripe signs its events.

Header: `Outreach-Signature: t=<unix seconds>,v1=<hex digest>`. A receiver
recomputes the digest with its copy of the secret, compares in constant time,
and refuses a timestamp older than its tolerance (replays).
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "Outreach-Signature"


def signature(*, secret: str, timestamp: int, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(*, secret: str, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={signature(secret=secret, timestamp=timestamp, body=body)}"


def signature_valid(*, header: str, secret: str, body: bytes, now: int, tolerance: int = 300) -> bool:
    """What a receiver checks: a v1 digest that matches, over a timestamp within the tolerance."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(parts.get("v1", ""), signature(secret=secret, timestamp=timestamp, body=body))
