"""Providers' tracking events (delivered, bounced, complained, unsubscribed, rejected), applied once.

Each event is recorded once per (provider, event id) in the ProviderEvent
ledger and applied through the suppression ledger and the send-job state
machine, which has no backward edges: an event that arrives after a later
one is recorded with "no effect".

An event acts only on evidence that we sent: it must name a job by its
provider message id, and its recipient (when it gives one) must be that job's
contact. Anything else is recorded with why it did nothing. An event never
names a domain.

A large batch is recorded a chunk at a time (`provider_events_record_quiet`):
most of its events (opens, clicks, deferrals, news of mail that is not ours)
change nothing but their own ledger row and timeline event, and those are
written for the whole chunk in one short transaction; the rest are applied one
by one by `provider_event_record`, each in its own transaction as always.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction

from db.clock import DbClock
from mailboxes.models import ProviderEvent
from mailboxes.refusals import refusal_reason, refusal_words

from ..models import SendJob, Suppression, TimelineEvent
from ..selectors import job_workspace_id, normalize_email, suppression_active_for
from ..sending_mailbox import enrollment_mailbox
from ..states import job_move
from ..timeline import Event, event_record, events_record_many, iso
from .common import ServiceError
from .guardrails import guardrail_refusal_record
from .suppressions import suppression_add_in_transaction

S = SendJob.State


@dataclass(frozen=True)
class TrackingEvent:
    """A provider's tracking event, normalized (plain values, no anymail types)."""

    provider: str  # "sendgrid", "brevo", ...
    event_id: str
    event_type: str  # anymail's EventType: delivered, bounced, complained, unsubscribed, rejected, ...
    message_id: str = ""
    recipient: str = ""
    occurred_at: datetime | None = None
    hard_bounce: bool = False  # for "bounced": the address does not exist
    reject_reason: str = ""
    description: str = ""  # MTA response or the provider's words
    raw: dict[str, Any] = field(default_factory=dict)


# A rejection for one of these reasons says something about the address itself.
REJECT_SUPPRESSION = {
    "bounced": Suppression.Reason.HARD_BOUNCE,
    "invalid": Suppression.Reason.HARD_BOUNCE,
    "unsubscribed": Suppression.Reason.UNSUBSCRIBE,
    "spam": Suppression.Reason.COMPLAINT,
}


# NUL (which PostgreSQL refuses in text) and the other control characters but tab, newline, return; and lone
# surrogates (JSON's "\ud800" decodes to one): no database can store them and no page can show them.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def tracking_event_problem(event: TrackingEvent) -> str:
    """Why EVENT is malformed and must be rejected, or ""."""
    for name in ("provider", "event_id", "event_type", "message_id", "recipient", "reject_reason", "description"):
        if CONTROL.search(getattr(event, name)):
            return f"{name} holds a control character or a lone surrogate"
    if _has_control(event.raw):
        return "the payload holds a control character or a lone surrogate"
    recipient = normalize_email(event.recipient)
    if recipient and (recipient.startswith("@") or "@" not in recipient):
        return f"recipient {recipient[:100]!r} is not one address (an event never names a domain)"
    return ""


def provider_event_reject(*, provider: str, raw: Any, reason: str) -> str:
    """Record a malformed event as rejected (once per payload); it changes nothing else. Returns the effect."""
    clean = _without_control(raw if isinstance(raw, dict) else {"payload": raw})
    digest = hashlib.sha256(json.dumps(clean, sort_keys=True, default=str).encode()).hexdigest()
    recipient = str(clean.get("email") or clean.get("recipient") or "")[:320]
    effect = f"rejected: {reason}; nothing applied"
    with transaction.atomic(durable=True):
        _, created = ProviderEvent.objects.get_or_create(
            provider=_without_control(provider)[:40], event_id=f"rejected:sha256:{digest}",
            defaults={"event_type": "malformed", "recipient": recipient, "raw": clean, "effect": effect},
        )
    return effect if created else "duplicate"


def _has_control(value: Any) -> bool:
    if isinstance(value, str):
        return bool(CONTROL.search(value))
    if isinstance(value, dict):
        return any(_has_control(k) or _has_control(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_control(v) for v in value)
    return False


def _without_control(value: Any) -> Any:
    """VALUE with every control character replaced by U+FFFD, so that it can be stored and shown."""
    if isinstance(value, str):
        return CONTROL.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_control(str(k)): _without_control(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_control(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return _without_control(str(value))


def provider_event_record(*, event: TrackingEvent) -> str:
    """Record one tracking event once per (provider, event id) and apply it; one durable transaction.

    Returns the effect in words, or "duplicate". Lock order as everywhere:
    the suppression locks enrollments, then the job moves.
    """
    with transaction.atomic(durable=True):
        job = None
        if event.message_id:
            job = (SendJob.objects.select_related("enrollment__contact", "step")
                   .filter(provider_message_id=event.message_id).order_by("-id").first())
        # The unique (provider, event_id) index serializes a concurrent duplicate behind this insert.
        row, created = ProviderEvent.objects.get_or_create(
            provider=event.provider, event_id=event.event_id, defaults=_ledger_fields(event, job),
        )
        if not created:
            return "duplicate"
        effect = _event_apply(event, job)
        ProviderEvent.objects.filter(pk=row.pk).update(effect=effect)
        event_record(
            kind=Event.PROVIDER_EVENT, email=normalize_email(event.recipient),
            enrollment=job.enrollment_id if job else None, job=job, version_seen=job.version if job else None,
            **_timeline_data(event, effect=effect, entry=row.pk),
        )
        return effect


def provider_events_record_quiet(*, events: list[TrackingEvent]) -> list[TrackingEvent]:
    """Record the events of a chunk that change nothing but their own rows; one durable transaction.

    Returns the events left to apply, in their order, for `provider_event_record`
    one by one: those that would change something (a delivery, a hard bounce, a
    complaint... that names our job), which so hold their locks no longer than an
    event posted alone. An event already in the ledger, or repeated within the
    chunk, is a duplicate: only its first occurrence counts. A concurrent
    delivery that records one of the same events first makes this raise
    IntegrityError (nothing of the chunk is written); the caller then records
    the events one by one, where each finds its own answer.
    """
    first: dict[tuple[str, str], TrackingEvent] = {}
    for event in events:
        first.setdefault((event.provider, event.event_id), event)
    if not first:
        return []
    with transaction.atomic(durable=True):
        recorded = set(ProviderEvent.objects.filter(
            provider__in={provider for provider, _ in first}, event_id__in=[event_id for _, event_id in first],
        ).values_list("provider", "event_id"))
        fresh = [event for key, event in first.items() if key not in recorded]
        jobs = _jobs_by_message_id({event.message_id for event in fresh if event.message_id})
        quiet, rest = [], []
        for event in fresh:
            job = jobs.get(event.message_id)
            effect = _effect_without_change(event, job)
            if effect:
                quiet.append((event, job, effect))
            else:
                rest.append(event)
        rows = ProviderEvent.objects.bulk_create([
            ProviderEvent(provider=event.provider, event_id=event.event_id, effect=effect,
                          **_ledger_fields(event, job))
            for event, job, effect in quiet
        ])
        events_record_many([
            TimelineEvent(kind=Event.PROVIDER_EVENT.value, email=normalize_email(event.recipient),
                          enrollment_id=job.enrollment_id if job else None, job=job,
                          version_seen=job.version if job else None,
                          data=_timeline_data(event, effect=effect, entry=row.pk))
            for (event, job, effect), row in zip(quiet, rows, strict=True)
        ])
    return rest


def _jobs_by_message_id(message_ids: set[str]) -> dict[str, SendJob]:
    """Each provider message id's job, the newest when several share one (as provider_event_record reads it)."""
    jobs = (SendJob.objects.select_related("enrollment__contact", "step")
            .filter(provider_message_id__in=message_ids).order_by("id"))
    return {job.provider_message_id: job for job in jobs}


def _ledger_fields(event: TrackingEvent, job: SendJob | None) -> dict[str, Any]:
    return {"event_type": event.event_type, "recipient": event.recipient[:320],
            "provider_message_id": event.message_id[:255], "job": job, "occurred_at": event.occurred_at,
            "raw": event.raw}


def _timeline_data(event: TrackingEvent, *, effect: str, entry: int) -> dict[str, Any]:
    return {"provider": event.provider, "event_type": event.event_type, "event_id": event.event_id,
            "occurred_at": iso(event.occurred_at), "effect": effect, "entry": entry}


# Event types that can change something: a job's state, the suppression ledger, the guardrail.
ACTING = ("delivered", "bounced", "complained", "unsubscribed", "rejected", "failed")


def _effect_without_change(event: TrackingEvent, job: SendJob | None) -> str:
    """The effect in words of an event that changes nothing but its own rows; "" when it must be applied."""
    if job is None:
        return "no job has this provider message id: nothing applied"
    recipient = normalize_email(event.recipient)
    if recipient and recipient != normalize_email(job.enrollment.contact.email):
        return f"recipient {recipient} is not the contact of job {job.pk}: nothing applied"
    kind = event.event_type
    if kind in ("bounced", "rejected", "failed") and refusal_reason(event.description or kind):
        return ""  # counted by the guardrail
    if kind == "bounced" and not event.hard_bounce:
        return "soft bounce: recorded, no suppression"
    if kind in ACTING:
        return ""
    return "recorded; no effect"


def _event_apply(event: TrackingEvent, job: SendJob | None) -> str:
    if quiet := _effect_without_change(event, job):
        return quiet
    assert job is not None  # an event that names no job changes nothing
    email = normalize_email(job.enrollment.contact.email)
    source = f"webhook:{event.provider}:{event.event_id}"[:200]
    note = event.description or event.event_type
    kind = event.event_type
    if kind == "delivered":
        return _job_delivered(job, event)
    if kind in ("bounced", "rejected", "failed") and refusal_reason(note):
        # The ESP relays a receiver's refusal naming authentication or a blocklist (5.7.26, 5.7.515, "blocked"):
        # the guardrail counts it against the mailbox that sent, as it does for an SMTP refusal.
        paused = guardrail_refusal_record(job=job, mailbox=enrollment_mailbox(job.enrollment), reply=note)
        effect = f"{refusal_words(refusal_reason(note))}: counted by the guardrail"
        return "; ".join([effect + (f" (mailbox paused: {paused})" if paused else ""), _event_apply_rest(
            event, job, email=email, source=source, note=note)])
    return _event_apply_rest(event, job, email=email, source=source, note=note)


def _event_apply_rest(event: TrackingEvent, job: SendJob, *, email: str, source: str, note: str) -> str:
    kind = event.event_type
    if kind == "bounced":
        if not event.hard_bounce:
            return "soft bounce: recorded, no suppression"
        return "; ".join([
            _suppress(job, email, Suppression.Reason.HARD_BOUNCE, note=note, source=source),
            _job_fail(job, f"hard bounce ({event.provider}): {note}", allowed_from=(S.SUBMITTED, S.ACCEPTED)),
        ])
    if kind == "complained":
        return _suppress(job, email, Suppression.Reason.COMPLAINT, note=note, source=source)
    if kind == "unsubscribed":
        return _suppress(job, email, Suppression.Reason.UNSUBSCRIBE, note=note, source=source)
    if kind in ("rejected", "failed"):
        effects = []
        reason = REJECT_SUPPRESSION.get(event.reject_reason or "")
        if reason:
            effects.append(_suppress(job, email, reason, note=f"{kind}: {event.reject_reason}: {note}", source=source))
        # Rejected means never sent: only a job still waiting for news can fail.
        effects.append(_job_fail(job, f"{kind} by {event.provider}: {event.reject_reason or note}",
                                 allowed_from=(S.SUBMITTED,)))
        return "; ".join(effects)
    return "recorded; no effect"


def _suppress(job: SendJob | None, email: str, reason: str, *, note: str, source: str) -> str:
    if not email:
        return "no recipient: nothing suppressed"
    # In the ledger's part of the workspace that sent it; an event of no known message: the agency's (everywhere).
    workspace_id = job_workspace_id(job.pk if job is not None else None)
    already = suppression_active_for(email, workspace_id=workspace_id)
    try:
        _, summary = suppression_add_in_transaction(value=email, reason=reason, note=note, source=source,
                                                    workspace_id=workspace_id)
    except ServiceError as exc:  # e.g. a malformed address: record it, do not make the ESP retry forever
        return f"not suppressed: {exc}"
    head = f"already suppressed ({already.reason})" if already else f"{reason} suppression added"
    return (f"{head}; {summary.enrollments} enrollment(s) stopped, {summary.canceled} job(s) canceled, "
            f"{summary.submitted + summary.in_flight} already submitted")


def _job_fail(job: SendJob | None, error: str, *, allowed_from: tuple[str, ...]) -> str:
    if job is None:
        return "no job has this provider message id"
    job.refresh_from_db(fields=["state", "version"])
    if job.state not in allowed_from:
        return f"job {job.pk} is {job.state}: not moved (the state machine never goes back)"
    job_move(job=job, to=S.FAILED, event=Event.JOB_FAILED_AT_PROVIDER, fields={"error": error, "lease_until": None},
             error=error)
    return f"job {job.pk} failed"


def _job_delivered(job: SendJob | None, event: TrackingEvent) -> str:
    if job is None:
        return "no job has this provider message id"
    delivered_at = event.occurred_at or DbClock()
    job.refresh_from_db(fields=["state", "version", "delivered_at"])
    if job.state == S.SUBMITTED:
        job_move(job=job, to=S.ACCEPTED, event=Event.JOB_DELIVERED, fields={"delivered_at": delivered_at},
                 provider=event.provider, occurred_at=iso(event.occurred_at))
        return f"job {job.pk} accepted (delivered)"
    if job.state == S.ACCEPTED and job.delivered_at is None:
        SendJob.objects.filter(pk=job.pk, delivered_at__isnull=True).update(delivered_at=delivered_at)
        return f"job {job.pk} delivered_at recorded"
    return f"job {job.pk} is {job.state}: not moved (the state machine never goes back)"
