"""The outbox: one delivery row per subscribed endpoint, written in the transaction of the timeline event.

A listener of the timeline (`sequences.timeline.listener_add`, registered by this app's `ready`), so every
event the product records is considered and none is sent from inside a transaction: the rows are enqueued for
delivery only after commit, and a lost RQ job is picked up again by the periodic `webhooks_due` pass (the row, not
Redis, is the record).
"""

from __future__ import annotations

import json

from django.db import transaction

from sequences.webhooks_out.models import WebhookDelivery, WebhookEndpoint
from workspaces.current import sole_workspace_id

from ..models import Enrollment, TimelineEvent
from ..queues import enqueue_webhook_deliveries
from .events import KINDS, webhook_event_for


def outbox_write(event: TimelineEvent) -> list[int]:
    """Write a delivery for each active endpoint subscribed to what `event` becomes; requires the transaction."""
    if event.kind not in KINDS:
        return []
    found = webhook_event_for(
        event.kind, email=event.email, enrollment_id=event.enrollment_id, job_id=event.job_id, data=event.data
    )
    if found is None:
        return []
    event_type, data = found
    endpoints = WebhookEndpoint._base_manager.filter(active=True).values_list("pk", "event_types", "workspace_id")
    subscribed = [(pk, workspace_id) for pk, types, workspace_id in endpoints if event_type in types]
    if any(workspace_id is not None for _, workspace_id in subscribed):
        # A workspace's endpoint hears its own workspace's events; the agency's (None) every workspace's.
        own = event_workspace_id(event)
        subscribed = [(pk, workspace_id) for pk, workspace_id in subscribed if workspace_id in (None, own)]
    subscribed = [pk for pk, _ in subscribed]
    if not subscribed:
        return []
    body = json.dumps({"id": f"evt_{event.pk}", "type": event_type.value, "data": data}, sort_keys=True, default=str)
    deliveries = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(endpoint_id=pk, event=event, event_type=event_type.value, body=body) for pk in subscribed]
    )
    ids = [d.pk for d in deliveries]
    transaction.on_commit(lambda: enqueue_webhook_deliveries(ids))
    return ids


def event_workspace_id(event: TimelineEvent) -> int | None:
    """The workspace of an event: its enrollment's sequence's, else the one it was written in, else (written
    outside any) the install's only workspace; None when that says nothing (heard by the agency's endpoints)."""
    if event.enrollment_id is not None:
        return (Enrollment._base_manager.filter(pk=event.enrollment_id)
                .values_list("sequence__workspace_id", flat=True).first())
    if event.workspace_id is not None:
        return event.workspace_id
    return sole_workspace_id()
