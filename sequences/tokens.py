"""Signed per-message unsubscribe tokens (no guessable ids in the URL)."""

from __future__ import annotations

from django.conf import settings
from django.core import signing

SALT = "outreach.unsubscribe"
MAX_AGE_SECONDS = 365 * 24 * 3600


def unsubscribe_token(*, job_id: int, email: str) -> str:
    return signing.dumps({"j": job_id, "e": email}, salt=SALT, compress=True)


def unsubscribe_token_read(token: str) -> dict:
    """{'j': job_id, 'e': email}; raises signing.BadSignature (or SignatureExpired) when tampered or old."""
    return signing.loads(token, salt=SALT, max_age=MAX_AGE_SECONDS)


def unsubscribe_url(*, job_id: int, email: str) -> str:
    base = settings.OUTREACH_PUBLIC_URL.rstrip("/")
    return f"{base}/u/{unsubscribe_token(job_id=job_id, email=email)}/"
