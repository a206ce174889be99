"""API tokens: created by `manage.py api_token` (printed once, stored as a SHA-256), revoked in the admin."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.contrib.auth.models import Permission
from django.db import transaction

from api.models import ApiToken
from db.clock import DbClock
from sequences.services.common import ServiceError

PREFIX = "otk_"
# A token's role holds the permissions of the UI group of that role (sequences/migrations/0002_roles.py).
ROLE_GROUPS = {ApiToken.Role.STAFF: "staff", ApiToken.Role.OPERATOR: "operators", ApiToken.Role.ADMIN: "admins"}


# A rate above this is no limit; the column would wrap a larger number (4294967297 read back as 1).
MAX_RATE_PER_MINUTE = 1_000_000
NAME_MAX = ApiToken._meta.get_field("name").max_length


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def api_token_create(*, name: str, role: str, rate_per_minute: int = 120,
                     workspace_id: int | None = None) -> tuple[ApiToken, str]:
    """A new token of one workspace (None: an agency token, which names the workspace of each call); the plain
    token is returned once and never stored."""
    if role not in ApiToken.Role.values:
        raise ServiceError(f"unknown role {role!r} (use {', '.join(ApiToken.Role.values)})")
    if not name.strip():
        raise ServiceError("a token needs a name")
    if len(name.strip()) > NAME_MAX:
        raise ServiceError(f"a token's name is at most {NAME_MAX} characters")
    if not 1 <= rate_per_minute <= MAX_RATE_PER_MINUTE:
        raise ServiceError(f"the rate limit must be at least 1 and at most {MAX_RATE_PER_MINUTE} requests per "
                           f"minute, not {rate_per_minute}")
    prefix = secrets.token_hex(4)
    token = f"{PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    with transaction.atomic(durable=True):
        # Names are the install's (a credential's, not a workspace's row): looked up across workspaces.
        if ApiToken._base_manager.filter(name=name.strip()).exists():
            raise ServiceError(f"a token named {name.strip()!r} exists already")
        row = ApiToken.objects.create(
            name=name.strip(), role=role, prefix=prefix, digest=digest_of(token), rate_per_minute=rate_per_minute,
            workspace_id=workspace_id,
        )
    return row, token


def api_token_revoke(*, token_id: int) -> bool:
    """Revoke a token for good; False when it was revoked already."""
    return bool(ApiToken.objects.filter(pk=token_id, revoked_at__isnull=True).update(revoked_at=DbClock()))


def api_token_lookup(token: str) -> ApiToken | None:
    """The live token with this value, or None (unknown, malformed or revoked)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    digest = digest_of(token)
    # A credential is found by its digest wherever it belongs; the request then works in the token's workspace.
    row = ApiToken._base_manager.filter(digest=digest, revoked_at__isnull=True).first()
    if row is None or not hmac.compare_digest(row.digest, digest):
        return None
    return row


def token_permissions(token: ApiToken) -> set[str]:
    """The permissions of the token's role, as `app_label.codename`: exactly what the UI checks for that role."""
    rows = Permission.objects.filter(group__name=ROLE_GROUPS[token.role]).values_list(
        "content_type__app_label", "codename"
    )
    return {f"{app}.{codename}" for app, codename in rows}
