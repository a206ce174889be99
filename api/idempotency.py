"""Idempotency keys on every POST (`Idempotency-Key` header, as Stripe has them).

The first response to (token, key) is stored with a fingerprint of the
request (method, path, body). A retry with the same key and the same request
gets that response again (header `Idempotent-Replayed: true`) and acts
nothing; the same key with another request is a 422.

Two requests with the same key at the same time: the first claims the key by
inserting its row, marked in progress, in a transaction of its own (the
unique constraint on (token, key) lets only one insert succeed, on SQLite and
PostgreSQL alike, with no lock held across requests, so it works behind a
transaction-mode pooler). The second waits for that row's answer, up to WAIT,
and replays it; still running after WAIT, it is a 409 to retry later. A row
left in progress by a request that died (its process killed) is taken over
after ABANDONED.

Not stored (the request never reached its action, so a retry may run it):
401 (no live token) and 429 (rate limited). Stored answers are kept for
KEEP (24 hours, as Stripe keeps them); the hourly `api_housekeeping` pass
deletes older ones, after which the key may be used again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import timedelta
from functools import wraps

from django.db import IntegrityError, transaction
from django.http import HttpResponse, JsonResponse

from api.models import IdempotencyKey
from db.clock import db_now

from .tokens import api_token_lookup

HEADER = "Idempotency-Key"
KEEP = timedelta(hours=24)
NOT_STORED = {401, 429}
IN_PROGRESS = 0  # the status of a claimed key whose request still runs
WAIT = 30.0  # seconds a second request with the same key waits for the first one's answer
POLL = 0.05
ABANDONED = timedelta(minutes=5)  # a key in progress this long: its request died; another may claim it


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


def still_running(key: str) -> JsonResponse:
    return JsonResponse(
        {"detail": f"a request with Idempotency-Key {key!r} is still running; retry it later to get its answer"},
        status=409,
    )


def _claim(token, key: str, print_: str) -> IdempotencyKey | None:
    """The key's row, inserted in progress and committed; None when another request holds the key."""
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(token=token, key=key, fingerprint=print_,
                                                 status_code=IN_PROGRESS, content_type="", body="")
    except IntegrityError:
        return None


def _answer(token, key: str, print_: str) -> HttpResponse | None:
    """The answer for a key another request claimed: its replay, a mismatch, or 409 when it still runs after
    WAIT; None when the key is free again (the other request stored nothing, or died)."""
    deadline = time.monotonic() + WAIT
    while True:
        stored = IdempotencyKey.objects.filter(token=token, key=key).first()
        if stored is None:
            return None
        if stored.fingerprint != print_:
            return mismatch(key)
        if stored.status_code != IN_PROGRESS:
            return replay(stored)
        if stored.created_at < db_now() - ABANDONED:
            IdempotencyKey.objects.filter(pk=stored.pk, status_code=IN_PROGRESS).delete()
            return None
        if time.monotonic() > deadline:
            return still_running(key)
        time.sleep(POLL)


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
        claimed = _claim(token, key, print_)
        while claimed is None:
            answer = _answer(token, key, print_)
            if answer is not None:
                return answer
            claimed = _claim(token, key, print_)
        try:
            response = view(request, *args, **kwargs)
        except BaseException:
            claimed.delete()  # no answer to keep: a retry runs the request again
            raise
        if response.status_code in NOT_STORED or response.streaming:
            claimed.delete()
        else:
            IdempotencyKey.objects.filter(pk=claimed.pk).update(
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
