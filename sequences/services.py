"""Domain actions on sequences, enrollments, send jobs and the suppression ledger.

Lock order, everywhere: enrollment rows (ascending id) -> mailbox row -> job
rows. The authorize transaction locks the job's enrollment; every stop path
(stop, pause of enrollment/sequence/mailbox, suppression) locks the same
enrollment rows before it changes anything. So a stop and an authorization of
the same enrollment are serialized: whichever commits first wins, and the other
sees its effect. Reading the ledger or a paused flag without that common lock
would serialize nothing under READ COMMITTED.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from mailboxes.models import Mailbox

from .dbclock import DbClock, db_now
from .jobstates import CANCELABLE, PASSED_HANDOFF, job_move
from .models import Contact, Enrollment, OperatorAction, SendJob, Sequence, Step, Suppression
from .selectors import enrollments_for_value, normalize_email, suppression_active_for, suppression_key
from .timeline import event_record
from .window import next_open

log = logging.getLogger("outreach.sequences")
S = SendJob.State
E = Enrollment.Status

# The stop reason an enrollment gets when its address is suppressed for a reason.
STOP_REASON_FOR_SUPPRESSION = {
    Suppression.Reason.UNSUBSCRIBE: Enrollment.StopReason.UNSUBSCRIBED,
    Suppression.Reason.COMPLAINT: Enrollment.StopReason.COMPLAINED,
    Suppression.Reason.HARD_BOUNCE: Enrollment.StopReason.HARD_BOUNCE,
    Suppression.Reason.SOFT_BOUNCES: Enrollment.StopReason.SUPPRESSED,
    Suppression.Reason.MANUAL: Enrollment.StopReason.SUPPRESSED,
}


class ServiceError(Exception):
    """A request the domain refuses, with a message fit for an operator."""


@dataclass
class StopSummary:
    """What a stop or pause did: the numbers the UI and the CLI show."""

    enrollments: int = 0  # enrollments whose status changed
    canceled: int = 0  # jobs canceled before authorization: never sent
    in_flight: int = 0  # jobs authorized but not yet recorded: may be leaving right now
    submitted: int = 0  # jobs already handed to the transport: cannot recall
    changed: bool = False
    job_ids_canceled: list[int] = field(default_factory=list)

    def add(self, other: StopSummary) -> None:
        self.enrollments += other.enrollments
        self.canceled += other.canceled
        self.in_flight += other.in_flight
        self.submitted += other.submitted
        self.changed = self.changed or other.changed
        self.job_ids_canceled += other.job_ids_canceled

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("job_ids_canceled")
        return data


# --- helpers (require the caller's transaction) ---------------------------------


def _lock_enrollments(qs) -> list[Enrollment]:
    # FOR NO KEY UPDATE: conflicts with itself (stop vs authorize) but not with
    # the FOR KEY SHARE that inserting a timeline row referencing the
    # enrollment takes; a plain FOR UPDATE would deadlock against the
    # dispatcher, which holds job rows while it writes their events.
    return list(qs.select_for_update(of=("self",), no_key=True).select_related("contact", "sequence").order_by("id"))


def _operator_log(actor: str, action: str, target: str, result: dict[str, Any]) -> None:
    if actor:
        OperatorAction.objects.create(actor=actor, action=action, target=target, result=result)


def _cancel_pending(enrollment: Enrollment, *, reason: str, actor: str = "") -> StopSummary:
    """Cancel every job of a locked enrollment that has not passed authorization."""
    summary = StopSummary()
    jobs = SendJob.objects.filter(enrollment=enrollment, state__in=CANCELABLE).select_related("step")
    for job in jobs:
        job._email = enrollment.contact.email  # type: ignore[attr-defined]
        # A worker may claim the job between our read and our update (claiming
        # takes no enrollment lock); it cannot authorize it while we hold the
        # enrollment, so reload and cancel the claimed job.
        while job.state in CANCELABLE:
            if job_move(job=job, to=S.CANCELED, fields={"cancel_reason": reason}, reason=reason, actor=actor):
                summary.canceled += 1
                summary.job_ids_canceled.append(job.pk)
                break
            job.refresh_from_db(fields=["state", "version"])
    # Scheduled send at a provider: a job already handed to an ESP for later delivery
    # cannot be canceled here; mark "cancel requested" in this transaction, and an RQ task asks the
    # provider after commit (never inside a transaction). It still counts as submitted below.
    from .provider_services import provider_cancel_request

    provider_cancel_request(enrollment=enrollment, reason=reason, actor=actor)
    summary.in_flight = SendJob.objects.filter(enrollment=enrollment, state=S.AUTHORIZED).count()
    summary.submitted = SendJob.objects.filter(
        enrollment=enrollment, state__in=(S.SUBMITTED, S.ACCEPTED, S.UNKNOWN)
    ).count()
    return summary


def _new_message_id(mailbox: Mailbox) -> str:
    domain = mailbox.address.rsplit("@", 1)[-1] or "outreach.invalid"
    return f"<outreach.{uuid.uuid4().hex}@{domain}>"


def _schedule_next(enrollment: Enrollment, *, reason: str) -> SendJob | None:
    """Create the job for the enrollment's next step, or complete it; enrollment locked by the caller."""
    jobs = list(
        SendJob.objects.filter(enrollment=enrollment).exclude(state=S.CANCELED).select_related("step")
    )
    if any(j.state in (S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED) for j in jobs):
        return None  # one is already on its way
    if any(j.provider_cancel_status == "requested" for j in jobs):
        # Whether that message leaves is the provider's answer to give: it schedules what follows
        # (enrollment_after_provider_answer_in_transaction).
        return None
    if any(j.state in (S.UNKNOWN, S.FAILED) for j in jobs):
        # Never continue past a message whose fate is unknown or that failed.
        return None
    # A message the provider confirmed it canceled before its send time never left: its step is still to do.
    sent = [j for j in jobs if j.state in (S.SUBMITTED, S.ACCEPTED) and j.provider_cancel_status != "confirmed"]
    last_position = max((j.step.position for j in sent), default=0)
    step = Step.objects.filter(sequence=enrollment.sequence_id, position__gt=last_position).order_by("position").first()
    now = db_now()
    if step is None:
        if enrollment.status == E.ACTIVE:
            Enrollment.objects.filter(pk=enrollment.pk).update(status=E.COMPLETED, version=F("version") + 1)
            event_record(
                kind="enrollment_completed",
                email=enrollment.contact.email,
                enrollment=enrollment,
                version_seen=enrollment.version,
            )
            enrollment.status, enrollment.version = E.COMPLETED, enrollment.version + 1
        return None
    # A step scheduled at a provider leaves at provider_send_at, not when it was handed off.
    base = max((j.provider_send_at or j.submitted_at for j in sent if j.submitted_at), default=None)
    due = (base or now) + timedelta(seconds=step.wait_seconds)
    job = SendJob.objects.create(
        enrollment=enrollment,
        step=step,
        state=S.SCHEDULED,
        scheduled_at=max(due, now),
        message_id=_new_message_id(enrollment.sequence.mailbox),
    )
    event_record(
        kind="job_scheduled",
        email=enrollment.contact.email,
        enrollment=enrollment,
        job=job,
        version_seen=job.version,
        step=step.position,
        scheduled_at=job.scheduled_at.isoformat(),
        reason=reason,
    )
    return job


# --- contacts and enrollments ---------------------------------------------------


def contact_upsert(
    *, email: str, first_name: str = "", last_name: str = "", company: str = "", fields: dict | None = None,
    timezone_name: str = "",
) -> Contact:
    """Create or update a contact by normalized address; own short transaction."""
    email = normalize_email(email)
    defaults: dict[str, Any] = {"first_name": first_name, "last_name": last_name, "company": company}
    if fields:
        defaults["fields"] = fields
    if timezone_name:
        defaults["timezone"] = timezone_name
    contact, _ = Contact.objects.update_or_create(email=email, defaults=defaults)
    return contact


def enrollment_create(*, sequence_id: int, contact_id: int, actor: str = "") -> Enrollment:
    """Enroll a contact and schedule step 1; one transaction. Refuses suppressed addresses."""
    with transaction.atomic():
        sequence = Sequence.objects.select_related("mailbox").get(pk=sequence_id)
        contact = Contact.objects.get(pk=contact_id)
        blocked = suppression_active_for(contact.email)
        if blocked is not None:
            raise ServiceError(f"{contact.email} is suppressed ({blocked.reason}, {blocked.value})")
        if not sequence.steps.exists():
            raise ServiceError(f"sequence {sequence.name!r} has no steps")
        if Enrollment.objects.filter(sequence=sequence, contact=contact).exists():
            raise ServiceError(f"{contact.email} is already enrolled in {sequence.name!r}")
        enrollment = Enrollment.objects.create(sequence=sequence, contact=contact)
        enrollment = Enrollment.objects.select_related("contact", "sequence__mailbox").get(pk=enrollment.pk)
        event_record(kind="enrolled", email=contact.email, enrollment=enrollment, version_seen=1,
                     sequence=sequence.name, actor=actor)
        _schedule_next(enrollment, reason="enrolled")
        return enrollment


def enrollment_stop(*, enrollment_id: int, reason: str, actor: str = "", source: str = "") -> StopSummary:
    """Stop an enrollment for good and cancel its pending jobs; owns one durable transaction."""
    with transaction.atomic(durable=True):
        summary = enrollment_stop_in_transaction(enrollment_id=enrollment_id, reason=reason, actor=actor, source=source)
        _operator_log(actor, "enrollment_stop", f"enrollment {enrollment_id}", summary.as_dict() | {"reason": reason})
        return summary


def enrollment_stop_in_transaction(*, enrollment_id: int, reason: str, actor: str = "", source: str = "") -> StopSummary:
    """As enrollment_stop, inside the caller's transaction (e.g. with an inbound ledger row)."""
    (enrollment,) = _lock_enrollments(Enrollment.objects.filter(pk=enrollment_id))
    return _enrollment_stop_locked(enrollment, reason=reason, actor=actor, source=source)


def _enrollment_stop_locked(enrollment: Enrollment, *, reason: str, actor: str = "", source: str = "") -> StopSummary:
    if reason not in Enrollment.StopReason.values:
        raise ServiceError(f"unknown stop reason {reason!r}")
    if enrollment.status == E.STOPPED:
        # Idempotent: a second stop changes nothing (and never rewrites the first reason).
        return StopSummary()
    Enrollment.objects.filter(pk=enrollment.pk).update(
        status=E.STOPPED, stop_reason=reason, stopped_at=db_now(), version=F("version") + 1
    )
    summary = _cancel_pending(enrollment, reason=reason, actor=actor)
    summary.enrollments, summary.changed = 1, True
    event_record(
        kind="enrollment_stopped",
        email=enrollment.contact.email,
        enrollment=enrollment,
        version_seen=enrollment.version,
        reason=reason,
        actor=actor,
        source=source,
        **summary.as_dict(),
    )
    enrollment.status, enrollment.version = E.STOPPED, enrollment.version + 1
    return summary


def enrollment_pause(*, enrollment_id: int, actor: str = "") -> StopSummary:
    """Pause one enrollment: cancel what has not passed authorization; durable transaction."""
    with transaction.atomic(durable=True):
        summary = enrollment_pause_in_transaction(enrollment_id=enrollment_id, actor=actor)
        _operator_log(actor, "enrollment_pause", f"enrollment {enrollment_id}", summary.as_dict())
        return summary


def enrollment_pause_in_transaction(*, enrollment_id: int, actor: str = "", source: str = "") -> StopSummary:
    """As enrollment_pause, inside the caller's transaction."""
    (enrollment,) = _lock_enrollments(Enrollment.objects.filter(pk=enrollment_id))
    summary = StopSummary()
    if enrollment.status == E.ACTIVE:
        Enrollment.objects.filter(pk=enrollment.pk).update(status=E.PAUSED, version=F("version") + 1)
        summary = _cancel_pending(enrollment, reason="enrollment_paused", actor=actor)
        summary.enrollments, summary.changed = 1, True
        event_record(kind="enrollment_paused", email=enrollment.contact.email, enrollment=enrollment,
                     version_seen=enrollment.version, actor=actor, source=source, **summary.as_dict())
    return summary


def enrollment_resume(*, enrollment_id: int, actor: str = "") -> Enrollment:
    """Resume a paused (or, explicitly, a stopped) enrollment and schedule its next step."""
    with transaction.atomic(durable=True):
        (enrollment,) = _lock_enrollments(Enrollment.objects.filter(pk=enrollment_id))
        if enrollment.status == E.COMPLETED:
            raise ServiceError(f"{enrollment} is completed; nothing to resume")
        blocked = suppression_active_for(enrollment.contact.email)
        if blocked is not None:
            raise ServiceError(f"{enrollment.contact.email} is suppressed ({blocked.reason}); lift it first")
        if enrollment.status != E.ACTIVE:
            Enrollment.objects.filter(pk=enrollment.pk).update(
                status=E.ACTIVE, stop_reason="", stopped_at=None, version=F("version") + 1
            )
            event_record(kind="enrollment_resumed", email=enrollment.contact.email, enrollment=enrollment,
                         version_seen=enrollment.version, actor=actor, previous=enrollment.status)
            enrollment.status, enrollment.version = E.ACTIVE, enrollment.version + 1
        job = _schedule_next(enrollment, reason="resumed")
        _operator_log(actor, "enrollment_resume", str(enrollment),
                      {"scheduled_job": job.pk if job else None, "status": _status(enrollment)})
        enrollment.refresh_from_db()
        return enrollment


def enrollment_lock_in_transaction(*, enrollment_id: int) -> Enrollment:
    """Lock one enrollment as every stop and the final check do (first, before mailbox and jobs)."""
    (enrollment,) = _lock_enrollments(Enrollment.objects.filter(pk=enrollment_id))
    return enrollment


def enrollment_after_provider_answer_in_transaction(*, enrollment: Enrollment, answer: str) -> SendJob | None:
    """A provider answered a cancel; an enrollment resumed while it was pending gets its next step now.

    "confirmed": the canceled message's step is scheduled again. Otherwise the message may still
    leave at its send time, so it counts as sent. Requires the enrollment locked by the caller.
    """
    if answer == "confirmed" and enrollment.status == E.COMPLETED:
        # Its last message was canceled (a sequence or mailbox pause): the enrollment is not complete.
        Enrollment.objects.filter(pk=enrollment.pk).update(status=E.ACTIVE, version=F("version") + 1)
        event_record(kind="enrollment_reactivated", email=enrollment.contact.email, enrollment=enrollment,
                     version_seen=enrollment.version, reason="last message canceled at the provider")
        enrollment.status, enrollment.version = E.ACTIVE, enrollment.version + 1
    mailbox_paused = Mailbox.objects.filter(pk=enrollment.sequence.mailbox_id, paused=True).exists()
    if enrollment.status != E.ACTIVE or enrollment.sequence.status != Sequence.Status.ACTIVE or mailbox_paused:
        return None  # its resume schedules the next step
    return _schedule_next(enrollment, reason=f"provider_cancel_{answer}")


def _status(enrollment: Enrollment) -> str:
    return Enrollment.objects.values_list("status", flat=True).get(pk=enrollment.pk)


# --- sequences and mailboxes ------------------------------------------------------


def sequence_pause(*, sequence_id: int, actor: str = "") -> StopSummary:
    """Pause a sequence: cancel every job of it not yet authorized; durable transaction."""
    with transaction.atomic(durable=True):
        enrollments = _lock_enrollments(Enrollment.objects.filter(sequence_id=sequence_id))
        sequence = Sequence.objects.select_for_update(no_key=True).get(pk=sequence_id)
        summary = StopSummary()
        if sequence.status == Sequence.Status.ACTIVE:
            Sequence.objects.filter(pk=sequence.pk).update(status=Sequence.Status.PAUSED, version=F("version") + 1)
            summary.changed = True
            for enrollment in enrollments:
                summary.add(_cancel_pending(enrollment, reason="sequence_paused", actor=actor))
            event_record(kind="sequence_paused", version_seen=sequence.version, sequence=sequence.name,
                         actor=actor, **summary.as_dict())
        _operator_log(actor, "sequence_pause", f"sequence {sequence.name}", summary.as_dict() | {"status": "paused"})
        return summary


def sequence_resume(*, sequence_id: int, actor: str = "") -> int:
    """Resume a sequence; schedules the next step of each active enrollment. Returns jobs scheduled."""
    with transaction.atomic(durable=True):
        enrollments = _lock_enrollments(Enrollment.objects.filter(sequence_id=sequence_id, status=E.ACTIVE))
        sequence = Sequence.objects.select_for_update(no_key=True).get(pk=sequence_id)
        scheduled = 0
        if sequence.status == Sequence.Status.PAUSED:
            Sequence.objects.filter(pk=sequence.pk).update(status=Sequence.Status.ACTIVE, version=F("version") + 1)
            for enrollment in enrollments:
                scheduled += _schedule_next(enrollment, reason="sequence_resumed") is not None
            event_record(kind="sequence_resumed", version_seen=sequence.version, sequence=sequence.name,
                         actor=actor, scheduled=scheduled)
        _operator_log(actor, "sequence_resume", f"sequence {sequence.name}", {"scheduled": scheduled, "status": "active"})
        return scheduled


def mailbox_pause(*, mailbox_id: int, actor: str = "") -> StopSummary:
    """Pause a mailbox: nothing leaves it; jobs not yet authorized are canceled."""
    with transaction.atomic(durable=True):
        enrollments = _lock_enrollments(Enrollment.objects.filter(sequence__mailbox_id=mailbox_id))
        mailbox = Mailbox.objects.select_for_update(no_key=True).get(pk=mailbox_id)
        summary = StopSummary()
        if not mailbox.paused:
            Mailbox.objects.filter(pk=mailbox.pk).update(paused=True, version=F("version") + 1)
            summary.changed = True
            for enrollment in enrollments:
                summary.add(_cancel_pending(enrollment, reason="mailbox_paused", actor=actor))
            event_record(kind="mailbox_paused", version_seen=mailbox.version, mailbox=mailbox.name,
                         actor=actor, **summary.as_dict())
        _operator_log(actor, "mailbox_pause", f"mailbox {mailbox.name}", summary.as_dict() | {"paused": True})
        return summary


def mailbox_resume(*, mailbox_id: int, actor: str = "") -> int:
    """Resume a mailbox; schedules the next step of active enrollments in its active sequences."""
    with transaction.atomic(durable=True):
        enrollments = _lock_enrollments(
            Enrollment.objects.filter(
                sequence__mailbox_id=mailbox_id, status=E.ACTIVE, sequence__status=Sequence.Status.ACTIVE
            )
        )
        mailbox = Mailbox.objects.select_for_update(no_key=True).get(pk=mailbox_id)
        scheduled = 0
        if mailbox.paused:
            Mailbox.objects.filter(pk=mailbox.pk).update(paused=False, version=F("version") + 1)
            for enrollment in enrollments:
                scheduled += _schedule_next(enrollment, reason="mailbox_resumed") is not None
            event_record(kind="mailbox_resumed", version_seen=mailbox.version, mailbox=mailbox.name,
                         actor=actor, scheduled=scheduled)
        _operator_log(actor, "mailbox_resume", f"mailbox {mailbox.name}", {"scheduled": scheduled, "paused": False})
        return scheduled


# --- suppression ledger --------------------------------------------------------------


def suppression_add(
    *, value: str, reason: str, note: str = "", source: str = "", actor: str = ""
) -> tuple[Suppression, StopSummary]:
    """Suppress an address or @domain and stop its enrollments; durable transaction.

    Idempotent: an address already suppressed gets no second entry, but any
    enrollment of it still active is stopped.
    """
    with transaction.atomic(durable=True):
        return suppression_add_in_transaction(value=value, reason=reason, note=note, source=source, actor=actor)


def suppression_add_in_transaction(
    *, value: str, reason: str, note: str = "", source: str = "", actor: str = ""
) -> tuple[Suppression, StopSummary]:
    """As suppression_add, inside the caller's transaction (e.g. with an inbound ledger row)."""
    value, is_domain = suppression_key(value)
    _validate_suppression_value(value, is_domain)
    if reason not in Suppression.Reason.values:
        raise ServiceError(f"unknown suppression reason {reason!r} (use {', '.join(Suppression.Reason.values)})")
    enrollments = _lock_enrollments(enrollments_for_value(value).exclude(status=E.STOPPED))
    latest = Suppression.objects.filter(value=value).order_by("-id").first()
    if latest is not None and latest.action == Suppression.Action.ADD:
        entry = latest
    else:
        entry = Suppression.objects.create(
            value=value, is_domain=is_domain, action=Suppression.Action.ADD, reason=reason, note=note,
            source=source, actor=actor,
        )
        event_record(kind="suppression_added", email=value, value=value, reason=reason, source=source, actor=actor,
                     entry=entry.pk)
    summary = StopSummary()
    stop_reason = STOP_REASON_FOR_SUPPRESSION[entry.reason]
    for enrollment in enrollments:
        summary.add(_enrollment_stop_locked(enrollment, reason=stop_reason, actor=actor, source=source or "suppression"))
    _operator_log(actor, "suppression_add", value, summary.as_dict() | {"entry": entry.pk, "reason": entry.reason})
    return entry, summary


def suppression_lift(*, value: str, note: str, actor: str = "", source: str = "") -> Suppression:
    """Lift a suppression with a justification: a new ledger entry, history stays."""
    value, is_domain = suppression_key(value)
    _validate_suppression_value(value, is_domain)
    if not note.strip():
        raise ServiceError("lifting a suppression needs a justification (note)")
    with transaction.atomic(durable=True):
        latest = Suppression.objects.select_for_update().filter(value=value).order_by("-id").first()
        if latest is None or latest.action != Suppression.Action.ADD:
            raise ServiceError(f"{value} is not suppressed")
        entry = Suppression.objects.create(
            value=value, is_domain=is_domain, action=Suppression.Action.LIFT, note=note.strip(), source=source,
            actor=actor,
        )
        event_record(kind="suppression_lifted", email=value, value=value, note=note, actor=actor, entry=entry.pk)
        _operator_log(actor, "suppression_lift", value, {"entry": entry.pk, "lifted": latest.pk})
        return entry


def _validate_suppression_value(value: str, is_domain: bool) -> None:
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    try:
        validate_email(("x" + value) if is_domain else value)
    except ValidationError:
        raise ServiceError(f"{value!r} is neither an email address nor an @domain") from None


# --- the send pipeline's transitions ---------------------------------------------------


def dispatch_due(*, limit: int | None = None) -> list[int]:
    """Move due scheduled jobs to queued; returns their ids (enqueue them after commit)."""
    limit = limit or settings.OUTREACH_DISPATCH_BATCH
    with transaction.atomic(durable=True):
        now = db_now()
        # Plus jobs that a mailbox hands to its ESP ahead of time (esp_schedule_ahead_minutes).
        from .provider_services import early_handoff_due

        jobs = list(
            SendJob.objects.filter(Q(scheduled_at__lte=now) | early_handoff_due(now=now), state=S.SCHEDULED)
            .select_for_update(skip_locked=True, of=("self",), no_key=True)
            .select_related("enrollment__contact", "step")
            .order_by("scheduled_at", "id")[:limit]
        )
        return [job.pk for job in jobs if job_move(job=job, to=S.QUEUED)]


def queued_stale(*, older_than_seconds: int) -> list[int]:
    """Queued jobs that may have been lost from Redis; enqueueing them again is harmless."""
    cutoff = db_now() - timedelta(seconds=older_than_seconds)
    return list(SendJob.objects.filter(state=S.QUEUED, queued_at__lt=cutoff).values_list("pk", flat=True))


def send_job_claim(*, job_id: int, worker_id: str) -> SendJob | None:
    """queued -> claimed (ownership for processing, never permission to send); short transaction."""
    with transaction.atomic(durable=True):
        job = SendJob.objects.select_related("enrollment__contact", "step").filter(pk=job_id).first()
        if job is None:
            return None
        if job.state != S.QUEUED:
            # A duplicate or stale RQ job: the database state decides; record the no-op.
            event_record(kind="claim_noop", email=job.enrollment.contact.email, enrollment=job.enrollment_id,
                         job=job, version_seen=job.version, worker_id=worker_id, state=job.state)
            return None
        lease = db_now() + timedelta(seconds=settings.OUTREACH_LEASE_SECONDS)
        moved = job_move(job=job, to=S.CLAIMED, worker_id=worker_id,
                         fields={"worker_id": worker_id, "lease_until": lease, "attempts": F("attempts") + 1})
        if not moved:
            return None
    job.refresh_from_db()
    return job


@dataclass(frozen=True)
class Authorization:
    outcome: str  # "authorized" | "canceled" | "deferred" | "lost"
    reason: str = ""
    version: int = 0


def send_job_authorize(*, job_id: int, worker_id: str, version: int) -> Authorization:
    """The last responsible checkpoint: claimed -> authorized, or -> canceled with a reason.

    One short durable transaction. It locks the enrollment first (the row every
    stop path locks), then reads everything fresh, so a stop that committed
    before this lock was granted is seen, and a stop that comes later finds
    this job already authorized and reports it as not recallable.
    """
    with transaction.atomic(durable=True):
        enrollment_id = SendJob.objects.values_list("enrollment_id", flat=True).get(pk=job_id)
        (enrollment,) = _lock_enrollments(Enrollment.objects.filter(pk=enrollment_id))
        mailbox = Mailbox.objects.select_for_update(no_key=True).get(pk=enrollment.sequence.mailbox_id)
        job = SendJob.objects.select_related("step").get(pk=job_id)
        job._email = enrollment.contact.email  # type: ignore[attr-defined]
        if job.state != S.CLAIMED or job.worker_id != worker_id or job.version != version:
            event_record(kind="authorize_noop", email=job._email, enrollment=enrollment, job=job,
                         version_seen=job.version, worker_id=worker_id, state=job.state, expected_version=version)
            return Authorization("lost", f"job is {job.state} v{job.version}, expected claimed v{version}")

        reason = _final_check(job=job, enrollment=enrollment, mailbox=mailbox)
        if reason:
            job_move(job=job, to=S.CANCELED, worker_id=worker_id, event="job_canceled",
                     fields={"cancel_reason": reason}, reason=reason, final_check=True)
            return Authorization("canceled", reason, job.version)

        now = db_now()
        # A job handed to an ESP early is checked against the window at its send time.
        defer_until, why = _defer_until(job=job, mailbox=mailbox, now=max(now, job.scheduled_at))
        if defer_until is not None:
            job_move(job=job, to=S.SCHEDULED, worker_id=worker_id, event="job_deferred",
                     fields={"scheduled_at": defer_until, "worker_id": "", "lease_until": None},
                     reason=why, until=defer_until.isoformat())
            return Authorization("deferred", why, job.version)

        lease = now + timedelta(seconds=settings.OUTREACH_LEASE_SECONDS)
        job_move(job=job, to=S.AUTHORIZED, worker_id=worker_id, fields={"lease_until": lease}, final_check=True)
        return Authorization("authorized", "", job.version)


def _final_check(*, job: SendJob, enrollment: Enrollment, mailbox: Mailbox) -> str:
    """The reason this job must not be sent, or '' when it may be."""
    if enrollment.status == E.STOPPED:
        return enrollment.stop_reason or "enrollment_stopped"
    if enrollment.status == E.PAUSED:
        return "enrollment_paused"
    if enrollment.status == E.COMPLETED:
        return "enrollment_completed"
    if enrollment.sequence.status != Sequence.Status.ACTIVE:
        return "sequence_paused"
    if mailbox.paused:
        return "mailbox_paused"
    if suppression_active_for(enrollment.contact.email) is not None:
        return "suppressed"
    if job.step.position > 1 and not SendJob.objects.filter(
        enrollment=enrollment, step__position=job.step.position - 1, state__in=(S.SUBMITTED, S.ACCEPTED)
    ).exclude(provider_cancel_status="confirmed").exists():
        return "previous_step_not_submitted"
    return ""


def _defer_until(*, job: SendJob, mailbox: Mailbox, now) -> tuple[Any, str]:
    """(when, why) if the job must wait for the sending window or the daily cap, else (None, '')."""
    opening = next_open(
        now, days=mailbox.window_days, start=mailbox.window_start, end=mailbox.window_end,
        tz=mailbox.window_timezone,
    )
    if opening is not None:
        return opening, "outside_sending_window"
    # The mailbox row is locked, so two workers cannot both take the last slot.
    day_ago = now - timedelta(days=1)
    recent = SendJob.objects.filter(
        enrollment__sequence__mailbox=mailbox, authorized_at__gt=day_ago, state__in=PASSED_HANDOFF + (S.FAILED,)
    )
    if recent.count() >= mailbox.daily_cap:
        oldest = recent.order_by("authorized_at").values_list("authorized_at", flat=True).first()
        return oldest + timedelta(days=1, seconds=1), "daily_cap_reached"
    return None, ""


def send_job_authorize_unchecked(*, job_id: int, worker_id: str, version: int) -> Authorization:
    """The design this product rejects: trust the claim and send, with no final check.

    Forces the job to authorized whatever happened since it was claimed (as a
    worker that checked eligibility only when it picked the job up would).
    Never used by the product: tests and benchmarks call it to show what the
    final check prevents and what it costs.
    """
    with transaction.atomic(durable=True):
        lease = db_now() + timedelta(seconds=settings.OUTREACH_LEASE_SECONDS)
        SendJob.objects.filter(pk=job_id).update(
            state=S.AUTHORIZED, authorized_at=DbClock(), lease_until=lease, version=F("version") + 1
        )
        event_record(kind="job_authorized", job=job_id, worker_id=worker_id, final_check=False)
        return Authorization("authorized", "", version + 1)


def send_job_record_submitted(*, job_id: int, worker_id: str, smtp_reply: str, provider_message_id: str = "",
                              provider_request_id: str = "", provider_schedule: dict[str, Any] | None = None) -> bool:
    """authorized -> submitted with the transport's answer, then schedule the next step; durable transaction."""
    with transaction.atomic(durable=True):
        enrollment_id = SendJob.objects.values_list("enrollment_id", flat=True).get(pk=job_id)
        (enrollment,) = _lock_enrollments(Enrollment.objects.filter(pk=enrollment_id).select_related("sequence__mailbox"))
        job = SendJob.objects.select_related("step").get(pk=job_id)
        job._email = enrollment.contact.email  # type: ignore[attr-defined]
        if job.state != S.AUTHORIZED:
            # The sweeper may have marked it unknown; the message did leave, so say so.
            event_record(kind="submit_after_state_change", email=job._email, enrollment=enrollment, job=job,
                         version_seen=job.version, worker_id=worker_id, state=job.state, smtp_reply=smtp_reply)
            return False
        # Scheduled at a provider: provider_schedule_id, provider_send_at, cancelable_until.
        schedule = provider_schedule or {}
        job_move(job=job, to=S.SUBMITTED, worker_id=worker_id,
                 fields={"smtp_reply": smtp_reply, "provider_message_id": provider_message_id,
                         "provider_request_id": provider_request_id, "lease_until": None, **schedule},
                 smtp_reply=smtp_reply, provider_message_id=provider_message_id,
                 **{k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in schedule.items()})
        sequence = enrollment.sequence
        if enrollment.status == E.ACTIVE and sequence.status == Sequence.Status.ACTIVE and not sequence.mailbox.paused:
            _schedule_next(enrollment, reason="previous_step_submitted")
        elif schedule:
            # A stop committed while this job was being handed off for later delivery: ask the provider.
            from .provider_services import provider_cancel_request

            provider_cancel_request(enrollment=enrollment, reason="stopped_during_hand_off")
        return True


def send_job_record_retry(*, job_id: int, worker_id: str, error: str) -> str:
    """authorized -> scheduled with backoff (the retry re-enters the guard), or -> failed when exhausted."""
    with transaction.atomic(durable=True):
        job = SendJob.objects.select_related("enrollment__contact", "step").get(pk=job_id)
        if job.state != S.AUTHORIZED:
            return job.state
        if job.attempts >= settings.OUTREACH_MAX_ATTEMPTS:
            job_move(job=job, to=S.FAILED, worker_id=worker_id,
                     fields={"error": f"gave up after {job.attempts} attempts: {error}", "lease_until": None},
                     error=error, attempts=job.attempts)
            return S.FAILED
        delay = settings.OUTREACH_RETRY_BASE_SECONDS * (2 ** max(job.attempts - 1, 0))
        when = db_now() + timedelta(seconds=delay)
        job_move(job=job, to=S.SCHEDULED, worker_id=worker_id, event="job_retry_scheduled",
                 fields={"scheduled_at": when, "error": error, "worker_id": "", "lease_until": None},
                 error=error, attempts=job.attempts, retry_at=when.isoformat())
        return S.SCHEDULED


def send_job_record_failed(*, job_id: int, worker_id: str, error: str, hard_bounce: bool) -> None:
    """authorized -> failed; a recipient that does not exist is suppressed and its enrollments stopped."""
    with transaction.atomic(durable=True):
        job = SendJob.objects.select_related("enrollment__contact", "step").get(pk=job_id)
        email = job.enrollment.contact.email
        # Lock order: enrollments before the job (suppression_add locks them).
        if hard_bounce:
            suppression_add_in_transaction(value=email, reason=Suppression.Reason.HARD_BOUNCE,
                                           note=error, source=f"smtp:job {job.pk}")
        job.refresh_from_db(fields=["state", "version"])
        if job.state == S.AUTHORIZED:
            job_move(job=job, to=S.FAILED, worker_id=worker_id, fields={"error": error, "lease_until": None},
                     error=error, hard_bounce=hard_bounce)


def send_job_record_unknown(*, job_id: int, worker_id: str, error: str) -> None:
    """authorized -> unknown: the message may or may not have left; never resent automatically."""
    with transaction.atomic(durable=True):
        job = SendJob.objects.select_related("enrollment__contact", "step").get(pk=job_id)
        if job.state == S.AUTHORIZED:
            job_move(job=job, to=S.UNKNOWN, worker_id=worker_id, fields={"error": error, "lease_until": None},
                     error=error, evidence="transport did not confirm; check the server's log for the Message-ID",
                     message_id=job.message_id)


def leases_sweep() -> dict[str, int]:
    """Expired claims go back to queued (never authorized: safe); expired authorizations become unknown."""
    requeued: list[int] = []
    lost = 0
    with transaction.atomic(durable=True):
        now = db_now()
        expired = (
            SendJob.objects.filter(state__in=(S.CLAIMED, S.AUTHORIZED), lease_until__lt=now)
            .select_for_update(skip_locked=True, of=("self",), no_key=True)
            .select_related("enrollment__contact", "step")
        )
        for job in expired:
            if job.state == S.CLAIMED:
                if job_move(job=job, to=S.QUEUED, event="claim_expired", fields={"worker_id": "", "lease_until": None},
                            lost_worker=job.worker_id):
                    requeued.append(job.pk)
            elif job_move(job=job, to=S.UNKNOWN, event="worker_lost",
                          fields={"error": f"worker {job.worker_id} lost after authorization (lease expired)",
                                  "lease_until": None},
                          lost_worker=job.worker_id, authorized_at=job.authorized_at.isoformat() if job.authorized_at else "",
                          message_id=job.message_id,
                          evidence="authorized but no transport answer recorded; check the SMTP server log for the Message-ID"):
                lost += 1
    return {"requeued": len(requeued), "unknown": lost, "requeued_ids": requeued}  # type: ignore[dict-item]
