"""Where the race boundary moves to a provider: scheduled sends, their cancels, and tracking events.

A job handed to an ESP for later delivery is `submitted` with the provider's
schedule id, send time and `cancelable_until`. A stop that reaches it cannot
cancel it in our database; it can only ask the provider. So:

1. the stop's own transaction marks `provider_cancel_status = "requested"`
   (with a timeline event) and enqueues an RQ task after commit;
2. the task calls the provider with no transaction open;
3. a new short transaction records the answer: confirmed / refused (past
   cancelable_until) / failed (provider error). Only a documented success
   that came back before `cancelable_until` is recorded as confirmed.

Tracking webhook events (delivered, bounced, complained, unsubscribed,
rejected) are recorded once per (provider, event id) in the ProviderEvent
ledger and applied through the suppression ledger and the send-job state
machine, which has no backward edges: an event that arrives after a later
one is recorded with "no effect".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.db import connection, transaction
from django.db.models import Q

from mailboxes.models import Mailbox, ProviderEvent
from mailboxes.selectors import transport_for
from mailboxes.transports.esp import MAX_SCHEDULE_AHEAD, CancelAnswer, supports_scheduled_cancel

from . import services
from .dbclock import DbClock, db_now
from .jobstates import job_move
from .labels import stamp
from .models import Enrollment, SendJob, Suppression
from .selectors import normalize_email, suppression_active_for
from .timeline import event_record

log = logging.getLogger("outreach.providers")
S = SendJob.State
REQUESTED = "requested"


def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


# --- early hand-off (dispatcher and pipeline) ---------------------------------------------


def early_handoff_due(*, now: datetime) -> Q:
    """Scheduled jobs that a mailbox hands to its ESP ahead of their time (esp_schedule_ahead_minutes).

    Only providers whose cancel we implement qualify: a message handed off
    early must stay cancelable by a later stop. An empty Q matches nothing extra.
    """
    due = Q()
    mailboxes = Mailbox.objects.filter(transport_kind="anymail", esp_schedule_ahead_minutes__gt=0, paused=False)
    for mailbox in mailboxes:
        esp = mailbox.esp_name.lower()
        if not supports_scheduled_cancel(esp):
            continue
        ahead = min(timedelta(minutes=mailbox.esp_schedule_ahead_minutes), MAX_SCHEDULE_AHEAD[esp])
        due |= Q(enrollment__sequence__mailbox_id=mailbox.pk, scheduled_at__lte=now + ahead)
    return due


def provider_send_at_for(*, job_id: int, mailbox: Mailbox) -> datetime | None:
    """The send time to give the ESP when this job is handed off before it is due; None means send now."""
    if mailbox.transport_kind != "anymail" or mailbox.esp_schedule_ahead_minutes <= 0:
        return None
    if not supports_scheduled_cancel(mailbox.esp_name):
        return None
    scheduled_at = SendJob.objects.values_list("scheduled_at", flat=True).get(pk=job_id)
    # Whole seconds: SendGrid takes a UNIX timestamp, so the recorded time is the one it uses.
    scheduled_at = scheduled_at.replace(microsecond=0)
    return scheduled_at if scheduled_at > db_now() else None


# --- cancel at the provider -------------------------------------------------------------------


def provider_cancel_request(*, enrollment: Enrollment, reason: str, actor: str = "") -> list[int]:
    """Mark the enrollment's jobs waiting at a provider as cancel-requested; requires the stop's transaction.

    The enrollment is locked by the caller. Never calls the provider: the HTTP
    request is an RQ task enqueued after this transaction commits.
    """
    assert connection.in_atomic_block, "a cancel request is recorded inside the stop's transaction"
    waiting = (
        SendJob.objects.filter(enrollment=enrollment, state=S.SUBMITTED, provider_cancel_status="",
                               provider_send_at__gt=DbClock())
        .exclude(provider_schedule_id="")
        .order_by("id")
    )
    requested: list[int] = []
    for job in waiting:
        # Guarded: a second stop (or a retry of this one) finds the status set and requests nothing.
        if not SendJob.objects.filter(pk=job.pk, provider_cancel_status="").update(
            provider_cancel_status=REQUESTED, provider_cancel_detail=f"requested ({reason})"
        ):
            continue
        event_record(
            kind="provider_cancel_requested", email=enrollment.contact.email, enrollment=enrollment, job=job,
            version_seen=job.version, reason=reason, actor=actor, schedule_id=job.provider_schedule_id,
            provider_send_at=_iso(job.provider_send_at), cancelable_until=_iso(job.cancelable_until),
        )
        from .provider_tasks import enqueue_provider_cancel

        # robust: the stop has committed whatever Redis says; a lost enqueue leaves "requested",
        # which provider_cancels_stale() hands out again.
        transaction.on_commit(partial(enqueue_provider_cancel, job.pk), robust=True)
        requested.append(job.pk)
    return requested


def provider_cancels_stale(*, older_than_seconds: int = 300) -> list[int]:
    """Cancel requests unanswered for a while (their RQ job lost) whose send time is still ahead.

    For the dispatcher's periodic pass: enqueue_provider_cancel() each id again.
    """
    now = db_now()
    return list(
        SendJob.objects.filter(provider_cancel_status=REQUESTED, provider_send_at__gt=now,
                               events__kind="provider_cancel_requested",
                               events__at__lt=now - timedelta(seconds=older_than_seconds))
        .values_list("pk", flat=True)
        .distinct()
    )


def send_job_provider_cancel(*, job_id: int) -> str:
    """Ask the provider to cancel a job scheduled there and record its answer; returns the recorded status.

    No transaction is open during the HTTP call; the answer is written in a
    short durable transaction, only over a status still "requested".
    """
    job = SendJob.objects.select_related("enrollment__contact", "enrollment__sequence__mailbox").get(pk=job_id)
    if job.provider_cancel_status != REQUESTED:
        return job.provider_cancel_status or "none"  # a duplicate RQ job: the database decides
    mailbox = job.enrollment.sequence.mailbox
    now = db_now()
    if job.cancelable_until is not None and now >= job.cancelable_until:
        answer = CancelAnswer(
            "refused",
            f"past cancelable_until ({stamp(job.cancelable_until)}; asked at {stamp(now)}): "
            f"{mailbox.esp_name or 'the provider'} does not guarantee a cancel this late, so none was claimed",
        )
    else:
        transport = transport_for(mailbox)
        if not hasattr(transport, "cancel"):
            answer = CancelAnswer("failed", f"mailbox {mailbox.name} no longer sends through an ESP")
        else:
            assert not connection.in_atomic_block, "never hold a transaction across the provider call"
            answer = transport.cancel(schedule_id=job.provider_schedule_id)
            answered = db_now()
            if answer.status == "confirmed" and job.cancelable_until and answered > job.cancelable_until:
                answer = CancelAnswer(
                    "refused",
                    f"{answer.detail}, but answered at {stamp(answered)}, past cancelable_until "
                    f"({stamp(job.cancelable_until)}): not guaranteed, so not claimed",
                )
    return _cancel_answer_record(job=job, answer=answer)


def _cancel_answer_record(*, job: SendJob, answer: CancelAnswer) -> str:
    with transaction.atomic(durable=True):
        enrollment = services.enrollment_lock_in_transaction(enrollment_id=job.enrollment_id)  # lock order
        recorded = SendJob.objects.filter(pk=job.pk, provider_cancel_status=REQUESTED).update(
            provider_cancel_status=answer.status, provider_cancel_detail=answer.detail
        )
        if not recorded:
            return SendJob.objects.values_list("provider_cancel_status", flat=True).get(pk=job.pk)
        event_record(
            kind=f"provider_cancel_{answer.status}", email=job.enrollment.contact.email,
            enrollment=job.enrollment_id, job=job, version_seen=job.version, detail=answer.detail,
            schedule_id=job.provider_schedule_id, provider_send_at=_iso(job.provider_send_at),
            cancelable_until=_iso(job.cancelable_until),
        )
        services.enrollment_after_provider_answer_in_transaction(enrollment=enrollment, answer=answer.status)
    log.info("job %s: provider cancel %s: %s", job.pk, answer.status, answer.detail)
    return answer.status


# --- tracking webhooks ---------------------------------------------------------------------------


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
            provider=event.provider, event_id=event.event_id,
            defaults={"event_type": event.event_type, "recipient": event.recipient[:320],
                      "provider_message_id": event.message_id[:255], "job": job,
                      "occurred_at": event.occurred_at, "raw": event.raw},
        )
        if not created:
            return "duplicate"
        effect = _event_apply(event, job)
        ProviderEvent.objects.filter(pk=row.pk).update(effect=effect)
        event_record(
            kind="provider_event", email=normalize_email(event.recipient),
            enrollment=job.enrollment_id if job else None, job=job, version_seen=job.version if job else None,
            provider=event.provider, event_type=event.event_type, event_id=event.event_id,
            occurred_at=_iso(event.occurred_at), effect=effect, entry=row.pk,
        )
        return effect


def _event_apply(event: TrackingEvent, job: SendJob | None) -> str:
    email = normalize_email(event.recipient or (job.enrollment.contact.email if job else ""))
    source = f"webhook:{event.provider}:{event.event_id}"[:200]
    note = event.description or event.event_type
    kind = event.event_type
    if kind == "delivered":
        return _job_delivered(job, event)
    if kind == "bounced":
        if not event.hard_bounce:
            return "soft bounce: recorded, no suppression"
        return "; ".join([
            _suppress(email, Suppression.Reason.HARD_BOUNCE, note=note, source=source),
            _job_fail(job, f"hard bounce ({event.provider}): {note}", allowed_from=(S.SUBMITTED, S.ACCEPTED)),
        ])
    if kind == "complained":
        return _suppress(email, Suppression.Reason.COMPLAINT, note=note, source=source)
    if kind == "unsubscribed":
        return _suppress(email, Suppression.Reason.UNSUBSCRIBE, note=note, source=source)
    if kind in ("rejected", "failed"):
        effects = []
        reason = REJECT_SUPPRESSION.get(event.reject_reason or "")
        if reason:
            effects.append(_suppress(email, reason, note=f"{kind}: {event.reject_reason}: {note}", source=source))
        # Rejected means never sent: only a job still waiting for news can fail.
        effects.append(_job_fail(job, f"{kind} by {event.provider}: {event.reject_reason or note}",
                                 allowed_from=(S.SUBMITTED,)))
        return "; ".join(effects)
    return "recorded; no effect"


def _suppress(email: str, reason: str, *, note: str, source: str) -> str:
    if not email:
        return "no recipient: nothing suppressed"
    already = suppression_active_for(email)
    try:
        _, summary = services.suppression_add_in_transaction(value=email, reason=reason, note=note, source=source)
    except services.ServiceError as exc:  # e.g. a malformed address: record it, do not make the ESP retry forever
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
    job_move(job=job, to=S.FAILED, event="job_failed_at_provider", fields={"error": error, "lease_until": None},
             error=error)
    return f"job {job.pk} failed"


def _job_delivered(job: SendJob | None, event: TrackingEvent) -> str:
    if job is None:
        return "no job has this provider message id"
    delivered_at = event.occurred_at or DbClock()
    job.refresh_from_db(fields=["state", "version", "delivered_at"])
    if job.state == S.SUBMITTED:
        job_move(job=job, to=S.ACCEPTED, event="job_delivered", fields={"delivered_at": delivered_at},
                 provider=event.provider, occurred_at=_iso(event.occurred_at))
        return f"job {job.pk} accepted (delivered)"
    if job.state == S.ACCEPTED and job.delivered_at is None:
        SendJob.objects.filter(pk=job.pk, delivered_at__isnull=True).update(delivered_at=delivered_at)
        return f"job {job.pk} delivered_at recorded"
    return f"job {job.pk} is {job.state}: not moved (the state machine never goes back)"
