"""The outbox: one delivery row per subscribed endpoint, written in the transaction of the timeline event.

Called from exactly one place, `sequences.timeline.event_written` (which
follows every event, written by `event_record` or by a state move's own
statement), so every event the product records is considered and none is
sent from inside a transaction: the rows are enqueued for delivery only after commit, and a lost
RQ job is picked up again by the periodic `webhooks_due` pass (the row, not
Redis, is the record).
"""

from __future__ import annotations

import json

from django.db import transaction

from ..models import TimelineEvent, WebhookDelivery, WebhookEndpoint
from ..queues import enqueue_webhook_deliveries
from .events import KINDS, webhook_event_for

ACTIVE_ENDPOINTS_SQL = (
    "SELECT json_agg(json_build_array(w.id, w.event_types) ORDER BY w.id)::text "
    f"FROM {WebhookEndpoint._meta.db_table} w WHERE w.active"
)


def endpoints_column(kind: str) -> str:
    """For a statement that writes an event of `kind`: the extra column that reads the active endpoints with it
    (", (ACTIVE_ENDPOINTS_SQL)"), or "" for a kind no webhook carries."""
    return f", ({ACTIVE_ENDPOINTS_SQL})" if kind in KINDS else ""


def endpoints_parse(value: str | None) -> list[tuple[int, list[str]]]:
    """The (id, event types) pairs ACTIVE_ENDPOINTS_SQL returns as one JSON text ([] for none)."""
    return [(pk, types) for pk, types in json.loads(value)] if value else []


def outbox_write(event: TimelineEvent, *, endpoints: list[tuple[int, list[str]]] | None = None) -> list[int]:
    """Write a delivery for each active endpoint subscribed to what `event` becomes; requires the transaction.

    `endpoints`: the active endpoints as (id, event types), when the caller's statement read them with the
    event (a state move reads them with ACTIVE_ENDPOINTS_SQL in its one statement); None reads them here.
    """
    if event.kind not in KINDS:
        return []
    found = webhook_event_for(
        event.kind, email=event.email, enrollment_id=event.enrollment_id, job_id=event.job_id, data=event.data
    )
    if found is None:
        return []
    event_type, data = found
    if endpoints is None:
        endpoints = list(WebhookEndpoint.objects.filter(active=True).values_list("pk", "event_types"))
    subscribed = [pk for pk, types in endpoints if event_type in types]
    if not subscribed:
        return []
    body = json.dumps({"id": f"evt_{event.pk}", "type": event_type.value, "data": data}, sort_keys=True, default=str)
    deliveries = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(endpoint_id=pk, event=event, event_type=event_type.value, body=body) for pk in subscribed]
    )
    ids = [d.pk for d in deliveries]
    transaction.on_commit(lambda: enqueue_webhook_deliveries(ids))
    return ids
