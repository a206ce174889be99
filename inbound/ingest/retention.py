"""Retention: the content of stored inbound mail and of provider events is kept OUTREACH_INBOUND_RETENTION_DAYS,
then removed.

Content is what a person or a mail system wrote: the raw source, the subject, the sender's name, the headers,
the reply text, and an ESP event's payload. What stays is what the ledger and the timelines need to explain
every stop: the row's kind, correlation, status codes, the classifier's reason and the effect, in words.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction

from db.clock import db_now
from mailboxes.models import ProviderEvent

from ..models import InboundMessage

PURGE_BATCH = 1000  # rows per transaction

# Each field of an inbound row that holds content, and its value once removed.
INBOUND_CONTENT_REMOVED = {"raw": b"", "subject": "", "from_name": "", "headers": {}, "reply_text": ""}


def inbound_raw_purge(*, days: int | None = None) -> int:
    """Remove the content of inbound mail and provider events received more than *days* ago (short batched
    transactions); returns how many inbound rows."""
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
                break
            purged += InboundMessage.objects.filter(pk__in=ids).update(
                **INBOUND_CONTENT_REMOVED, content=InboundMessage.Content.PURGED, raw_purged_at=db_now()
            )
    provider_events_purge(cutoff=cutoff)
    return purged


def provider_events_purge(*, cutoff) -> int:
    """Empty the payload of ESP events received before *cutoff*; the event's type, recipient, job and effect
    stay."""
    emptied = 0
    while True:
        with transaction.atomic(durable=True):
            ids = list(ProviderEvent.objects.filter(received_at__lt=cutoff).exclude(raw={})
                       .order_by("pk").values_list("pk", flat=True)[:PURGE_BATCH])
            if not ids:
                return emptied
            emptied += ProviderEvent.objects.filter(pk__in=ids).update(raw={})
