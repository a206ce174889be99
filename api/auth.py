"""Who is calling: a bearer token (401 without a live one), its rate (429), its role's permissions (403).

Permissions are the UI's (`ui.access`): a token of role R may do
through the API exactly what a user of R's group may do in the UI.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import wraps

from django.db.models import DurationField, Q, Value
from ninja.security import HttpBearer

from api.models import ApiToken
from db.clock import DbClock
from sequences.permissions import PERM_TEXT
from sequences.ratelimit import rate_check

from .tokens import api_token_lookup, token_permissions


class RateLimited(Exception):
    def __init__(self, retry_after: int):
        super().__init__(f"too many requests: at most this token's limit per minute; retry in {retry_after} s")
        self.retry_after = retry_after


class Forbidden(Exception):
    pass


_MINUTE = Value(timedelta(minutes=1), output_field=DurationField())


class TokenAuth(HttpBearer):
    """`Authorization: Bearer otk_...`."""

    def authenticate(self, request, token: str) -> ApiToken | None:
        row = api_token_lookup(token)
        if row is None:
            return None
        retry_after = rate_check(token_id=row.pk, limit=row.rate_per_minute)
        if retry_after:
            raise RateLimited(retry_after)
        # Last use, at most once a minute per token (a guarded UPDATE, no read-modify-write).
        ApiToken._base_manager.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=DbClock() - _MINUTE), pk=row.pk
        ).update(last_used_at=DbClock())
        return row


def needs(perm: str) -> Callable:
    """The permission an endpoint needs (the UI's name for it); checked after the token, before the work."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if perm not in token_permissions(request.auth):
                raise Forbidden(PERM_TEXT.get(perm, "This token's role does not include this endpoint."))
            return view(request, *args, **kwargs)

        wrapped.required_perm = perm  # type: ignore[attr-defined]
        return wrapped

    return decorator


def actor_of(request) -> str:
    """The operator log's actor for a request: the token's name."""
    return f"api:{request.auth.name}"
