"""anymail's tracking signal -> the provider-event service. The only signal receiver: a library boundary.

Normalizes what anymail leaves provider-specific (a hard or soft bounce, an
event id for providers that send none) and hands plain values on.

anymail calls this once per event of a batch (`inbound.webhook_urls` has each
event converted on its own, and an event anymail cannot read at all recorded
through `tracking_unreadable`). Each event stands alone: one
that is malformed (a NUL or control character, a domain where an address
belongs, a value that cannot be stored) is recorded as rejected, for admins to
see in the provider-event ledger, and the rest of the batch is still applied.
Only a failure to record anything (the database gone) reaches the ESP, as a
5xx it will retry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from anymail.signals import AnymailTrackingEvent, EventType
from django.db import DataError

from sequences.services.provider_events import (
    TrackingEvent,
    provider_event_record,
    provider_event_reject,
    tracking_event_problem,
)

log = logging.getLogger("outreach.inbound.webhooks")

# Enhanced status codes 4.x.x are temporary failures.
TEMPORARY = re.compile(r"\b4\.\d{1,3}\.\d{1,3}\b")


def tracking_received(sender, event: AnymailTrackingEvent, esp_name: str, **kwargs) -> None:
    provider = esp_name.lower()
    raw = event.esp_event if isinstance(event.esp_event, dict) else {}
    try:
        normalized = TrackingEvent(
            provider=provider,
            event_id=str(event.event_id or synthetic_event_id(raw)),
            event_type=str(event.event_type),
            message_id=str(event.message_id or ""),
            recipient=str(event.recipient or ""),
            occurred_at=event.timestamp,
            hard_bounce=bounce_is_hard(provider, event, raw),
            reject_reason=str(event.reject_reason or ""),
            description=str(event.mta_response or event.description or ""),
            raw=raw,
        )
        if problem := tracking_event_problem(normalized):
            provider_event_reject(provider=provider, raw=raw, reason=problem)
            return
        provider_event_record(event=normalized)
    except (DataError, ValueError, TypeError, KeyError, AttributeError) as exc:
        # What this one event carries cannot be applied; its neighbours in the batch still are.
        log.warning("%s webhook event rejected: %s", provider, type(exc).__name__)
        provider_event_reject(provider=provider, raw=raw, reason=f"could not be applied: {type(exc).__name__}")


@dataclass(frozen=True)
class Unreadable:
    """One event of a batch that anymail could not convert (not an object, a timestamp that is no number)."""

    raw: Any
    reason: str


def tracking_unreadable(*, esp_name: str, event: Unreadable) -> None:
    """Record an event that could not be read as malformed; the rest of its batch is applied without it."""
    provider = esp_name.lower()
    log.warning("%s webhook event rejected: %s", provider, event.reason)
    provider_event_reject(provider=provider, raw=event.raw, reason=event.reason)


def synthetic_event_id(raw: dict) -> str:
    """Providers without event ids (Brevo) resend the same payload: its digest identifies it."""
    return "sha256:" + hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()


def bounce_is_hard(provider: str, event: AnymailTrackingEvent, raw: dict) -> bool:
    """anymail maps soft bounces to "bounced" too for some providers; tell them apart."""
    if event.event_type != EventType.BOUNCED:
        return False
    if provider == "brevo":
        return raw.get("event") in ("hard_bounce", "invalid_email")
    if provider == "sendgrid":
        return raw.get("type", "bounce") != "blocked"  # "blocked": refused for now, not a bad address
    return not TEMPORARY.search(str(event.mta_response or ""))
