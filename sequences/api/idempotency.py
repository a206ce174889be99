"""Idempotency keys on every POST (`Idempotency-Key` header, as Stripe has them).

The first response to (token, key) is stored with a fingerprint of the
request (method, path, body). A retry with the same key and the same request
gets that response again (header `Idempotent-Replayed: true`) and acts
nothing; the same key with another request is a 422. Two requests with the
same key at the same time are serialized (`db.sql.advisory_lock`: on
PostgreSQL a session-level advisory lock on (token, key), held while the
first one runs, outside any transaction; on SQLite one write transaction),
so the second waits and then replays the first's answer.

Not stored (the request never reached its action, so a retry may run it):
401 (no live token) and 429 (rate limited). Stored answers are kept for
KEEP (24 hours, as Stripe keeps them); the hourly `api_housekeeping` pass
deletes older ones, after which the key may be used again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from functools import wraps

from django.http import HttpResponse, JsonResponse

from db.sql import advisory_lock, db_now
from sequences.api.models import IdempotencyKey

from .tokens import api_token_lookup

HEADER = "Idempotency-Key"
KEEP = timedelta(hours=24)
NOT_STORED = {401, 429}


def fingerprint(request) -> str:
    return hashlib.sha256(request.method.encode() + b" " + request.path.encode() + b"\n" + request.body).hexdigest()


def replay(stored: IdempotencyKey) -> HttpResponse:
    response = HttpResponse(stored.body, status=stored.status_code, content_type=stored.content_type)
    response["Idempotent-Replayed"] = "true"
    return response


def mismatch(key: str) -> JsonResponse:
    return JsonResponse(
        {"detail": f"Idempotency-Key {key!r} was used with a different request; use a new key for a new request"},
        status=422,
    )


def idempotent(view: Callable) -> Callable:
    """Wrap an API view: POSTs carrying an Idempotency-Key act once per (token, key)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        key = request.headers.get(HEADER, "").strip()
        if request.method != "POST" or not key:
            return view(request, *args, **kwargs)
        if len(key) > 200:
            return JsonResponse({"detail": f"{HEADER} is longer than 200 characters"}, status=422)
        auth = request.headers.get("Authorization", "")
        token = api_token_lookup(auth[7:].strip()) if auth[:7].lower() == "bearer " else None
        if token is None:
            return view(request, *args, **kwargs)  # the API answers 401
        print_ = fingerprint(request)
        with advisory_lock("idempotency", str(token.pk), key):
            stored = IdempotencyKey.objects.filter(token=token, key=key).first()
            if stored is not None:
                return replay(stored) if stored.fingerprint == print_ else mismatch(key)
            response = view(request, *args, **kwargs)
            if response.status_code not in NOT_STORED and not response.streaming:
                IdempotencyKey.objects.create(
                    token=token,
                    key=key,
                    fingerprint=print_,
                    status_code=response.status_code,
                    content_type=response.get("Content-Type", "application/json"),
                    body=response.content.decode(),
                )
            return response

    return wrapped


def idempotency_keys_purge() -> int:
    """Delete stored answers older than KEEP; returns how many."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=db_now() - KEEP).delete()
    return deleted
