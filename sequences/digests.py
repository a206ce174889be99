"""The hashed ledger of erased people: a keyed hash of each address, and the reads that refuse it (a leaf)."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db.models import Q

from .models import ErasedAddress
from .selectors import normalize_email


def address_digest(email: str) -> str:
    """The keyed hash (HMAC-SHA256) of a normalized address: what stays of an erased person.

    The key is OUTREACH_ERASURE_KEY (or its earlier name OUTREACH_SECRET_ERASURE_KEY), or one derived from SECRET_KEY
    for this purpose only.
    """
    key = settings.OUTREACH_ERASURE_KEY or f"outreach.erasure:{settings.SECRET_KEY}"
    return hmac.new(key.encode(), normalize_email(email).encode(), hashlib.sha256).hexdigest()


def _ledger(workspace_id: int | None):
    """The hashed ledger's parts that hold a person of *workspace_id*: its own and the agency's; without one, the
    scope's (the request's workspace and the agency's; outside any workspace, every part: the safe side)."""
    if workspace_id is None:
        return ErasedAddress.objects.all()
    return ErasedAddress._base_manager.filter(Q(workspace_id=workspace_id) | Q(workspace__isnull=True))


def address_erased(email: str, workspace_id: int | None = None) -> bool:
    """Whether the address belongs to an erased person (never imported or mailed again); one indexed lookup."""
    return _ledger(workspace_id).filter(digest=address_digest(email)).exists()


def addresses_erased(emails: list[str], workspace_id: int | None = None) -> set[str]:
    """Which of many addresses belong to erased people, in one read."""
    digests = {address_digest(email): email for email in emails}
    found = _ledger(workspace_id).filter(digest__in=list(digests)).values_list("digest", flat=True)
    return {digests[digest] for digest in found}
