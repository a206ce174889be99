"""Retention: the raw source of stored inbound mail is kept OUTREACH_INBOUND_RETENTION_DAYS, then removed.

The row stays with its kind, correlation, classification and effect (what it did, in words), so the
ledger and the timelines still explain every stop; only the raw source goes.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction

from db.sql import db_now
from mailboxes.models import InboundMessage

PURGE_BATCH = 1000  # rows per transaction


def inbound_raw_purge(*, days: int | None = None) -> int:
    """Remove the raw source of inbound mail committed more than *days* ago; returns how many rows."""
    days = settings.OUTREACH_INBOUND_RETENTION_DAYS if days is None else days
    cutoff = db_now() - timedelta(days=days)
    purged = 0
    while True:
        with transaction.atomic(durable=True):
            ids = list(
                InboundMessage.objects.filter(content=InboundMessage.Content.FULL, committed_at__lt=cutoff)
                .order_by("pk")
                .values_list("pk", flat=True)[:PURGE_BATCH]
            )
            if not ids:
                return purged
            purged += InboundMessage.objects.filter(pk__in=ids).update(
                raw=b"", content=InboundMessage.Content.PURGED, raw_purged_at=db_now()
            )
