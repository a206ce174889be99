"""Delivering one outbox row: claim it, POST it signed (no transaction open), record the answer.

claim (short transaction: a guarded UPDATE takes a lease) -> HTTP -> record
(short transaction). Two workers never send the same row at once; a worker
that dies leaves a lease that expires, and the next `webhooks_due` pass sends
again. A 2xx answer delivers; anything else is retried with exponential
backoff (OUTREACH_WEBHOOK_RETRY_BASE_SECONDS, doubling, at most an hour apart)
until a day after the event, then the row is given up and says so.
"""

from __future__ import annotations

import time
from datetime import timedelta

import requests
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q

from db.clock import DbClock, db_now
from mailboxes.secrets import SecretRefused, secret_from_env
from mailboxes.targets import TargetRefused, guard, url_problem
from sequences.webhooks_out.models import REFUSED_TARGET, WebhookAttempt, WebhookDelivery

from .signing import HEADER, signature_header

D = WebhookDelivery.State
LEASE = timedelta(seconds=60)
GIVE_UP_AFTER = timedelta(days=1)
MAX_BACKOFF_SECONDS = 3600
TIMEOUT_SECONDS = 10


def retry_base_seconds() -> int:
    return int(getattr(settings, "OUTREACH_WEBHOOK_RETRY_BASE_SECONDS", 30))


def backoff_seconds(attempts: int) -> int:
    """The wait after the n-th failed attempt: base, 2 x base, 4 x base, ... at most an hour."""
    return min(retry_base_seconds() * 2 ** max(attempts - 1, 0), MAX_BACKOFF_SECONDS)


def webhook_delivery_claim(*, delivery_id: int) -> WebhookDelivery | None:
    """Take a due delivery's lease (one guarded UPDATE, its own transaction); None if not due or leased."""
    with transaction.atomic(durable=True):
        now = db_now()
        moved = WebhookDelivery.objects.filter(
            Q(lease_until__isnull=True) | Q(lease_until__lt=now),
            pk=delivery_id,
            state=D.PENDING,
            next_attempt_at__lte=now,
        ).update(lease_until=now + LEASE, attempts=F("attempts") + 1)
        if not moved:
            return None
        return WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)


def webhook_deliver(*, delivery_id: int) -> str:
    """Send one delivery if it is due; returns what happened, in words."""
    delivery = webhook_delivery_claim(delivery_id=delivery_id)
    if delivery is None:
        return "not due (delivered, given up, waiting for its retry, or being sent by another worker)"
    assert not connection.in_atomic_block, "a webhook is never sent from inside a transaction"
    if problem := url_problem(delivery.endpoint.url):
        # A target the install does not allow (now, whatever it resolved to at save): no request, and neither a
        # time nor an answer recorded that would tell an operator what listens there.
        return webhook_delivery_record(delivery=delivery, status=None, error=REFUSED_TARGET + problem, duration_ms=0)
    status, error, started = None, "", time.monotonic()
    try:
        secret = secret_from_env(delivery.endpoint.secret_env)
        if not secret:
            raise SecretRefused(f"{delivery.endpoint.secret_env} is not set")
        body = delivery.body.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "outreach-webhooks/1",
            "Outreach-Event": delivery.event_type,
            "Outreach-Delivery": str(delivery.pk),
            HEADER: signature_header(secret=secret, timestamp=int(time.time()), body=body),
        }
        with guard(requests.Session()) as session:  # connects only to the address it has just checked
            response = session.post(
                delivery.endpoint.url, data=body, headers=headers, timeout=TIMEOUT_SECONDS, allow_redirects=False
            )
        status = response.status_code
        if not 200 <= status < 300:
            error = f"the receiver answered {status}"
    except SecretRefused as exc:
        error = f"no signing secret: {exc}"
    except TargetRefused as exc:  # the name resolved elsewhere since the check above (DNS rebinding)
        return webhook_delivery_record(delivery=delivery, status=None, error=REFUSED_TARGET + str(exc),
                                       duration_ms=0)
    except requests.RequestException as exc:
        error = f"no answer: {type(exc).__name__}"
    return webhook_delivery_record(
        delivery=delivery, status=status, error=error, duration_ms=int((time.monotonic() - started) * 1000)
    )


def webhook_delivery_record(*, delivery: WebhookDelivery, status: int | None, error: str, duration_ms: int) -> str:
    """Record one attempt and decide: delivered, retry later, or give up a day after the event."""
    with transaction.atomic(durable=True):
        WebhookAttempt.objects.create(delivery=delivery, status_code=status, error=error, duration_ms=duration_ms)
        fields: dict = {"lease_until": None, "last_status": status, "last_error": error}
        if not error:
            fields |= {"state": D.DELIVERED, "delivered_at": DbClock()}
            outcome = "delivered"
        elif db_now() + timedelta(seconds=backoff_seconds(delivery.attempts)) > delivery.created_at + GIVE_UP_AFTER:
            fields |= {"state": D.GAVE_UP}
            outcome = f"gave up after {delivery.attempts} attempts over a day: {error}"
        else:
            wait = backoff_seconds(delivery.attempts)
            fields |= {"next_attempt_at": db_now() + timedelta(seconds=wait)}
            outcome = f"{error}; retry in {wait} s"
        WebhookDelivery.objects.filter(pk=delivery.pk, state=D.PENDING).update(**fields)
        return outcome


def webhook_deliveries_due(*, limit: int = 500) -> list[int]:
    """Pending deliveries whose time has come and that nobody holds (a retry, or an RQ job Redis lost)."""
    now = db_now()
    return list(
        WebhookDelivery.objects.filter(
            Q(lease_until__isnull=True) | Q(lease_until__lt=now), state=D.PENDING, next_attempt_at__lte=now
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
