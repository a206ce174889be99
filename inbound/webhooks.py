"""anymail's tracking events -> the provider-event service; and the batches too large to apply in the request.

Normalizes what anymail leaves provider-specific (a hard or soft bounce, an
event id for providers that send none) and hands plain values on.

anymail's signal calls `tracking_received` once per event of a batch
(`inbound.webhook_events` has each event converted on its own, and an event
anymail cannot read at all recorded through `tracking_unreadable`). Each event
stands alone: one that is malformed (a NUL or control character, a domain
where an address belongs, a value that cannot be stored) is recorded as
rejected, for admins to see in the provider-event ledger, and the rest of the
batch is still applied. Only a failure to record anything (the database gone)
reaches the ESP, as a 5xx it will retry.

A batch of more than INLINE_EVENTS events (SendGrid posts up to thousands at
once) is not applied inside the request, which a web worker's time-out would
cut short after an unknown number of events. The request keeps the body as a
`WebhookBatch` row in one short transaction, enqueues its id on the `ingest`
queue after commit, and answers. Each RQ job applies the next CHUNK_EVENTS
events (`tracking_events_apply`) and moves the batch's cursor past them in a
short transaction of its own, then enqueues the next chunk. Nothing depends on
Redis or on a worker staying alive: an event is recorded once per (provider,
event id) by the ledger's unique constraint, so a chunk applied again changes
nothing; the periodic `webhook_batches_resume` enqueues again a batch that has
shown no progress for RESUME_AFTER_SECONDS (its job lost with Redis, its
worker killed), and the ESP's re-delivery of the same body finds its row and
adds nothing. Smaller batches are applied in the request as before: a few
hundred milliseconds, and the ESP's 200 still means "applied".
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import django_rq
from anymail.signals import AnymailTrackingEvent, EventType
from django.db import DataError, IntegrityError, transaction
from django.db.models import F

from db.clock import db_clock_written, db_now
from sequences.services.provider_events import (
    TrackingEvent,
    provider_event_record,
    provider_event_reject,
    provider_events_record_quiet,
    tracking_event_problem,
)

from .models import WebhookBatch

log = logging.getLogger("outreach.inbound.webhooks")

# Enhanced status codes 4.x.x are temporary failures.
TEMPORARY = re.compile(r"\b4\.\d{1,3}\.\d{1,3}\b")


# A batch of more events than this is kept and applied in the background; smaller ones in the request.
INLINE_EVENTS = 100
# Events applied by one RQ job: a second or two, so reply polls on the same queue never wait long behind a batch.
CHUNK_EVENTS = 500
# An unfinished batch without progress for this long is enqueued again; after MAX_RESUMES such times in a row
# it is left for an admin (a chunk that fails every time must not be retried forever).
RESUME_AFTER_SECONDS = 300
MAX_RESUMES = 5
# A finished batch's row (its digest: the ESP's re-delivery finds it) is kept this long; ESPs retry for a day.
KEEP_FINISHED = timedelta(days=3)
BATCH_TASK = "inbound.tasks.webhook_batch_apply"

# What the ledger cannot store or a value no conversion expects: the event is rejected, its neighbours applied.
EVENT_ERRORS = (DataError, ValueError, TypeError, KeyError, AttributeError)


def tracking_received(sender, event: AnymailTrackingEvent, esp_name: str, **kwargs) -> None:
    if normalized := _normalized(esp_name.lower(), event):
        _recorded(normalized)


def tracking_events_apply(*, esp_name: str, events: list[AnymailTrackingEvent | Unreadable]) -> None:
    """Apply a chunk of converted events as `tracking_received` applies each, in fewer transactions.

    The events that change nothing but their own rows are recorded together
    (`provider_events_record_quiet`); the others one by one, as always.
    """
    normalized: list[TrackingEvent] = []
    for event in events:
        if isinstance(event, Unreadable):
            tracking_unreadable(esp_name=esp_name, event=event)
        elif ready := _normalized(esp_name.lower(), event):
            normalized.append(ready)
    try:
        rest = provider_events_record_quiet(events=normalized)
    except (IntegrityError, DataError):
        # Another delivery recorded one of these first, or one holds what a column cannot store: one by one,
        # each event finds its own answer (a duplicate, a rejection) and none is applied twice.
        rest = normalized
    for event in rest:
        _recorded(event)


def _normalized(provider: str, event: AnymailTrackingEvent) -> TrackingEvent | None:
    """EVENT in plain values, or None when it is malformed (then recorded as rejected)."""
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
        problem = tracking_event_problem(normalized)
    except EVENT_ERRORS as exc:
        problem = f"could not be applied: {type(exc).__name__}"
        log.warning("%s webhook event rejected: %s", provider, type(exc).__name__)
    if problem:
        provider_event_reject(provider=provider, raw=raw, reason=problem)
        return None
    return normalized


def _recorded(event: TrackingEvent) -> None:
    try:
        provider_event_record(event=event)
    except EVENT_ERRORS as exc:
        # What this one event carries cannot be applied; its neighbours in the batch still are.
        log.warning("%s webhook event rejected: %s", event.provider, type(exc).__name__)
        provider_event_reject(provider=event.provider, raw=event.raw,
                              reason=f"could not be applied: {type(exc).__name__}")


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


def webhook_batch_store(*, provider: str, body: str, events: int) -> int:
    """Keep a batch for the background, once per body (one short durable transaction); returns its id.

    Its first chunk is enqueued after commit; the ESP's re-delivery of the same
    body finds the row and enqueues nothing. A Redis that cannot take the job
    loses nothing: the resume pass enqueues the batch later.
    """
    digest = hashlib.sha256(body.encode()).hexdigest()
    with transaction.atomic(durable=True):
        batch, created = WebhookBatch.objects.get_or_create(
            provider=provider, digest=digest,
            defaults={"body": body, "events": events, "touched_at": db_clock_written()},
        )
        if created:
            transaction.on_commit(lambda: _enqueue(batch.pk), robust=True)
    return batch.pk


@dataclass(frozen=True)
class ChunkResult:
    batch: int
    applied: int  # events of the batch recorded in the ledger after this job
    events: int
    outcome: str  # in words


def webhook_batch_chunk_apply(*, batch_id: int, converter: Callable[[str], Callable[[Any], Any]]) -> ChunkResult:
    """Apply the next chunk of a stored batch, then move its cursor past the chunk (short durable transaction).

    CONVERTER(provider) converts one raw event of that ESP (`inbound.webhook_events.event_converter`). The next
    chunk is enqueued when this one's cursor move commits. A job that finds the cursor already moved (another
    job applied the same chunk: a duplicate or a resumed job) stops there: its events were duplicates.
    """
    batch = (WebhookBatch.objects.filter(pk=batch_id, finished_at__isnull=True)
             .only("provider", "body", "events", "applied").first())
    if batch is None:
        return ChunkResult(batch=batch_id, applied=0, events=0, outcome="finished or gone: nothing to do")
    start = batch.applied
    raw_events = json.loads(batch.body)[start:start + CHUNK_EVENTS]
    convert = converter(batch.provider)
    tracking_events_apply(esp_name=batch.provider, events=[convert(raw) for raw in raw_events])
    end = start + len(raw_events)
    finished = end >= batch.events
    with transaction.atomic(durable=True):
        done = {"finished_at": db_clock_written(), "body": ""} if finished else {}
        moved = WebhookBatch.objects.filter(pk=batch_id, applied=start).update(
            applied=end, resumes=0, touched_at=db_clock_written(), **done)
        if moved and not finished:
            transaction.on_commit(lambda: _enqueue(batch_id), robust=True)
    if not moved:
        return ChunkResult(batch=batch_id, applied=end, events=batch.events,
                           outcome="another job had applied this chunk: stopped")
    return ChunkResult(batch=batch_id, applied=end, events=batch.events,
                       outcome="finished" if finished else "chunk applied; the next one is enqueued")


def webhook_batches_resume(*, idle_seconds: int = RESUME_AFTER_SECONDS) -> list[int]:
    """Enqueue again the unfinished batches without progress for IDLE_SECONDS; returns their ids.

    Each is taken by a compare-and-set on its `touched_at` (one short transaction each), so two passes at once
    enqueue it once. A batch already enqueued again MAX_RESUMES times without progress is given up instead:
    logged once, left unfinished in the table for an admin.
    """
    cutoff = db_now() - timedelta(seconds=idle_seconds)
    stale = WebhookBatch.objects.filter(finished_at__isnull=True, touched_at__lte=cutoff, resumes__lte=MAX_RESUMES)
    resumed = []
    for batch in stale.only("provider", "applied", "events", "resumes", "touched_at"):
        with transaction.atomic(durable=True):
            if not WebhookBatch.objects.filter(pk=batch.pk, touched_at=batch.touched_at, resumes=batch.resumes).update(
                    touched_at=db_clock_written(), resumes=F("resumes") + 1):
                continue  # another pass took it, or a job moved it on
            if batch.resumes == MAX_RESUMES:
                log.error("%s webhook batch %s given up at %s of %s events: its jobs failed %s times in a row",
                          batch.provider, batch.pk, batch.applied, batch.events, MAX_RESUMES + 1)
                continue
            transaction.on_commit(lambda batch_id=batch.pk: _enqueue(batch_id), robust=True)
            resumed.append(batch.pk)
    return resumed


def webhook_batches_forget() -> int:
    """Delete the rows of batches finished more than KEEP_FINISHED ago; returns how many."""
    deleted, _ = WebhookBatch.objects.filter(finished_at__lt=db_now() - KEEP_FINISHED).delete()
    return deleted


def _enqueue(batch_id: int) -> None:
    django_rq.get_queue("ingest").enqueue(BATCH_TASK, batch_id, result_ttl=600, failure_ttl=86400)
