"""Signed per-message unsubscribe tokens (no guessable ids in the URL).

A token names one message (the job) and the one address it was sent to. The
signature only proves that we made it; `unsubscribe_target` also checks that
the job exists, left us, and went to that address, so a token can never name
a domain or someone the message was not sent to.
"""

from __future__ import annotations

from django.conf import settings
from django.core import signing

from .models import SendJob
from .selectors import normalize_email

SALT = "outreach.unsubscribe"
MAX_AGE_SECONDS = 365 * 24 * 3600


def unsubscribe_token(*, job_id: int, email: str) -> str:
    return signing.dumps({"j": job_id, "e": email}, salt=SALT, compress=True)


def unsubscribe_token_read(token: str) -> dict:
    """{'j': job_id, 'e': email}; raises signing.BadSignature (or SignatureExpired) when tampered or old."""
    return signing.loads(token, salt=SALT, max_age=MAX_AGE_SECONDS)


class TokenRefused(ValueError):
    """A signed token that does not name an address one of our submitted messages went to."""


def unsubscribe_target(claim: dict) -> tuple[str, int]:
    """(email, job_id) of a read token, or TokenRefused: the job exists, was handed off, and to this address."""
    email, job_id = normalize_email(str(claim["e"])), int(claim["j"])
    if not email or email.startswith("@") or "@" not in email:
        raise TokenRefused("a token names one address, never a domain")
    job = SendJob.objects.select_related("enrollment__contact").filter(pk=job_id).first()
    if job is None:
        raise TokenRefused(f"no job {job_id}")
    if job.submitted_at is None and job.state != SendJob.State.UNKNOWN:
        raise TokenRefused(f"job {job_id} was never handed off")
    if normalize_email(job.enrollment.contact.email) != email:
        raise TokenRefused(f"job {job_id} was not sent to this address")
    return email, job_id


def unsubscribe_url(*, job_id: int, email: str) -> str:
    base = settings.OUTREACH_PUBLIC_URL.rstrip("/")
    return f"{base}/u/{unsubscribe_token(job_id=job_id, email=email)}/"
