"""The send pipeline's transitions: dispatch, claim, the final check (authorize), and the record of the outcome.

Each function owns one short durable transaction; none is open while a
transport talks to the network (`sequences.pipeline` calls them around the
hand-off). Everything after the claim locks the job's enrollment first, as
every stop path does (`sequences.locks`), so a stop and the final check, or a
stop and the record of a retry, are serialized.

The final check (`send_job_authorize`) locks the enrollment (found from the
job in the locking statement) and the sending mailbox, reads the job with its
rows (`sequences.loads.job_read`) and its facts (`facts_read`: the ledger for
the address and its domain, the previous step, the database clock), takes the
day's slot of the daily cap (`sequences.daily_cap`) and moves the job with its
timeline event (`sequences.states`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Q

from db.clock import db_now
from mailboxes.models import Mailbox

from .. import daily_cap, reply_view
from ..loads import Facts, facts_read, hold_of, job_read
from ..locks import job_enrollment_lock, mailbox_lock
from ..models import MAILBOX_BLOCKED, Enrollment, SendJob, Sequence, Suppression, TimelineEvent
from ..reasons import Reason
from ..selectors import job_workspace_id
from ..sending_mailbox import enrollment_mailbox, enrollment_mailbox_id
from ..states import job_move, job_quiet_moves_record
from ..timeline import Event, event_record, iso
from ..window import mailbox_next_open
from .guardrails import guardrail_refusal_record
from .provider_cancel import early_handoff_due, provider_cancel_request
from .scheduling import schedule_next
from .stops import enrollment_stop_after_failure
from .suppressions import suppression_add_in_transaction
from .variants import VARIANT_STOPPED, variant_stopped_follow_up

S = SendJob.State
E = Enrollment.Status
HELD = MAILBOX_BLOCKED  # the error of a job waiting for its mailbox; released when the mailbox is unblocked


def held_error(reason: str) -> str:
    return (HELD + reason)[:2000]


# The final check's deferrals that hold a job while their cause lasts (`loads.HOLD_REASONS`) are checked again
# every few seconds to a minute: the first writes its event, and the re-checks that find the same hold (`hold`:
# its reason without the times in its words) write none, neither their dispatch nor their claim nor the
# deferral (`job_move(quiet=True)`). A re-check that ends otherwise writes its dispatch and claim first.


def holding(job_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The jobs of `job_ids` whose last event is a hold, with its data (`loads.hold_of`): their re-checks are
    quiet until the hold's reason changes or it ends. One statement, whatever the number of jobs."""
    if not job_ids:
        return {}
    last = (TimelineEvent.objects.filter(job_id__in=job_ids).order_by().values("job_id")
            .annotate(last=Max("id")).values("last"))
    rows = TimelineEvent.objects.filter(pk__in=last).values_list("job_id", "kind", "data")
    return {job_id: hold for job_id, kind, data in rows if (hold := hold_of(kind, data)) is not None}


def dispatch_due(*, limit: int | None = None) -> list[int]:
    """Move due scheduled jobs to queued; returns their ids (enqueue them after commit).

    A mailbox that spaces its messages (`min_gap`) gets at most one job per pass, and none before its next
    hand-off may leave: the final check enforces the gap, this keeps its queue from filling with jobs it
    would only defer.
    """
    limit = limit or settings.OUTREACH_DISPATCH_BATCH
    with transaction.atomic(durable=True):
        now = db_now()
        spaced = dict(Mailbox.objects.filter(min_gap__gt=0).values_list("pk", "next_handoff_at"))
        # A draft sends nothing until it is launched: its jobs stay scheduled (the final check holds any that
        # get past here). Read once per pass, like the spaced mailboxes, and left out by id.
        drafts = list(Sequence.objects.filter(status=Sequence.Status.DRAFT).values_list("pk", flat=True))
        # Plus jobs that a mailbox hands to its ESP ahead of time (esp_schedule_ahead_minutes).
        due = SendJob.objects.filter(Q(scheduled_at__lte=now) | early_handoff_due(now=now), state=S.SCHEDULED)
        waiting = [pk for pk, at in spaced.items() if at is not None and at > now]
        if waiting:  # without spaced mailboxes the due batch is read exactly as before
            due = due.exclude(enrollment__mailbox_id__in=waiting)
        if drafts:
            due = due.exclude(enrollment__sequence_id__in=drafts)
        jobs = list(
            due.select_for_update(skip_locked=True, of=("self",), no_key=True)
            .select_related("enrollment__contact", "step")
            .order_by("scheduled_at", "id")[:limit]
        )
        taken: set[int] = set()
        queued = []
        held = holding([job.pk for job in jobs])
        for job in jobs:
            mailbox_id = job.enrollment.mailbox_id
            if mailbox_id in spaced and mailbox_id in taken:
                continue
            taken.add(mailbox_id)
            if job_move(job=job, to=S.QUEUED, quiet=job.pk in held):
                queued.append(job.pk)
        return queued


def queued_stale(*, older_than_seconds: int) -> list[int]:
    """Queued jobs that may have been lost from Redis; enqueueing them again is harmless."""
    cutoff = db_now() - timedelta(seconds=older_than_seconds)
    return list(SendJob.objects.filter(state=S.QUEUED, queued_at__lt=cutoff).values_list("pk", flat=True))


def send_job_claim(*, job_id: int, worker_id: str) -> SendJob | None:
    """queued -> claimed (ownership for processing, never permission to send); short durable transaction.

    Returns the job with everything preparing it needs (relations loaded), or None for a duplicate or
    stale delivery (recorded as a no-op).
    """
    with transaction.atomic(durable=True):
        job = job_read(job_id)
        if job is None:
            return None
        if job.state != S.QUEUED:
            # A duplicate or stale RQ job: the database state decides; record the no-op.
            event_record(kind=Event.CLAIM_NOOP, email=job.enrollment.contact.email, enrollment=job.enrollment_id,
                         job=job, version_seen=job.version, worker_id=worker_id, state=job.state)
            return None
        lease = db_now() + timedelta(seconds=settings.OUTREACH_LEASE_SECONDS)
        moved = job_move(job=job, to=S.CLAIMED, worker_id=worker_id, quiet=bool(holding([job.pk])),
                         fields={"worker_id": worker_id, "lease_until": lease, "attempts": F("attempts") + 1})
        return job if moved else None


@dataclass(frozen=True)
class Authorization:
    outcome: str  # "authorized" | "canceled" | "deferred" | "lost"
    reason: str = ""
    version: int = 0
    # The mailbox row the final check read (authorized: the one to send through), so the hand-off reads it no more.
    mailbox: Mailbox | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Locked:
    """A job read under its enrollment's lock, with the mailbox that sends it."""

    enrollment: Enrollment
    mailbox: Mailbox
    job: SendJob


def job_locked(job_id: int, *, lock_mailbox: bool = False) -> Locked:
    """Lock the job's enrollment (and, when asked, its mailbox: the lock order), then read everything fresh.

    The mailbox lock is what makes a pause or block that does not lock the enrollments first (the
    guardrail, a mailbox-level failure) either seen here or wait for this transaction.
    """
    job_enrollment_lock(job_id)
    if not lock_mailbox:
        job = job_read(job_id)
        return Locked(job.enrollment, enrollment_mailbox(job.enrollment), job)
    job = job_read(job_id, without_mailbox=True)  # the mailbox is read once, by its lock
    mailbox = mailbox_lock(mailbox_id=enrollment_mailbox_id(job.enrollment))
    if job.enrollment.mailbox_id == mailbox.pk:  # the relation the mailbox came through (rotation)
        job.enrollment.mailbox = mailbox
    else:
        job.enrollment.sequence.mailbox = mailbox
    return Locked(job.enrollment, mailbox, job)


def send_job_authorize(*, job_id: int, worker_id: str, version: int) -> Authorization:
    """The last responsible checkpoint: claimed -> authorized, or -> canceled with a reason.

    One short durable transaction. It locks the enrollment first (the row every
    stop path locks), then reads everything fresh, so a stop that committed
    before this lock was granted is seen, and a stop that comes later finds
    this job already authorized and reports it as not recallable.
    """
    with transaction.atomic(durable=True):
        locked = job_locked(job_id, lock_mailbox=True)
        enrollment, mailbox, job = locked.enrollment, locked.mailbox, locked.job
        if job.state != S.CLAIMED or job.worker_id != worker_id or job.version != version:
            return _lost(job, worker_id=worker_id, version=version)
        facts = facts_read(job, mailbox)
        # A re-check of a hold (dispatched and claimed quietly): its moves are written if it ends otherwise.
        held = facts.hold

        reason = final_check(job=job, enrollment=enrollment, mailbox=mailbox, facts=facts)
        if reason:
            _recheck_ends(job, held, worker_id=worker_id)
            job_move(job=job, to=S.CANCELED, worker_id=worker_id, fields={"cancel_reason": reason}, reason=reason,
                     final_check=True)
            if reason == VARIANT_STOPPED:
                # The person still gets the step, from a remaining variant (or the enrollment stops when none
                # remains): a new job, under the enrollment lock held here.
                variant_stopped_follow_up(enrollment)
            return Authorization("canceled", reason, job.version)

        now = facts.now
        if enrollment.sequence.status == Sequence.Status.DRAFT:
            # Held, never failed: the dispatcher leaves a draft's jobs alone, and this one (queued before it
            # was a draft's, or by hand) waits for the launch; it is due again at once after it.
            return _defer(job, worker_id=worker_id, until=max(now, job.scheduled_at), why=Reason.SEQUENCE_DRAFT,
                          held=held)
        if mailbox.blocked_at is not None:
            # The mailbox cannot send at all: wait for its next probe, and make no login attempt meanwhile.
            recheck = now + timedelta(seconds=settings.OUTREACH_BLOCKED_RECHECK_SECONDS)
            until = max(mailbox.next_probe_at or now, recheck)
            hold = f"mailbox_blocked: {mailbox.blocked_reason}"
            quiet = _same_hold(held, hold)
            if not quiet:
                _recheck_ends(job, held, worker_id=worker_id)
            job_move(job=job, to=S.SCHEDULED, worker_id=worker_id, event=Event.JOB_DEFERRED, quiet=quiet,
                     fields={"scheduled_at": until, "worker_id": "", "lease_until": None,
                             "error": held_error(mailbox.blocked_reason), "attempts": F("attempts") - 1},
                     reason=Reason.MAILBOX_BLOCKED, until=until.isoformat(), hold=hold)
            return Authorization("deferred", Reason.MAILBOX_BLOCKED, job.version)
        blind = reply_view.hold_reason(mailbox, facts)
        if blind:
            # Held, never failed: back through the final check soon, when a reply that arrived meanwhile has
            # been read (and has stopped its sender) or the view is fresh again.
            wait = settings.OUTREACH_REPLY_VIEW_RECHECK_SECONDS if mailbox.has_imap else 3600
            return _defer(job, worker_id=worker_id, until=now + timedelta(seconds=wait), why=Reason.REPLY_VIEW,
                          detail=blind, held=held, hold=_reply_view_hold(mailbox, facts))
        # A job handed to an ESP early is checked against the window at its send time.
        send_time = max(now, job.scheduled_at)
        opening = mailbox_next_open(send_time, mailbox=mailbox, contact_zone=enrollment.contact.timezone)
        if opening is not None:
            return _defer(job, worker_id=worker_id, until=opening, why=Reason.OUTSIDE_SENDING_WINDOW, held=held)
        day = daily_cap.cap_day(mailbox, send_time)
        limit = daily_cap.day_limit(mailbox, day)
        if limit <= 0:
            return _defer(job, worker_id=worker_id, until=daily_cap.day_end(mailbox, day), why=Reason.DAILY_CAP_REACHED,
                          held=held)
        gap = daily_cap.gap_wait(mailbox, now)
        if gap is not None:
            return _defer(job, worker_id=worker_id, until=gap, why=Reason.MIN_GAP, held=held)

        if not daily_cap.slot_take(mailbox=mailbox, day=day, limit=limit):
            return _defer(job, worker_id=worker_id, until=daily_cap.day_end(mailbox, day), why=Reason.DAILY_CAP_REACHED,
                          held=held)
        daily_cap.gap_take(mailbox, now)
        _recheck_ends(job, held, worker_id=worker_id)
        lease = now + timedelta(seconds=settings.OUTREACH_LEASE_SECONDS)
        if job_move(job=job, to=S.AUTHORIZED, worker_id=worker_id, fields={"lease_until": lease}, final_check=True,
                    replies_read_seconds_before=reply_view.view_age_seconds(facts)):
            return Authorization("authorized", "", job.version, mailbox=mailbox)
        # Cannot happen while the enrollment is locked, except by the lease sweeper (it moves expired claims
        # without that lock): the slot goes back, and the answer says what the job is now.
        daily_cap.slot_give_back(mailbox_id=mailbox.pk, tz=daily_cap.cap_zone(mailbox), authorized_at=now)
        job.refresh_from_db(fields=["state", "version"])
        return _lost(job, worker_id=worker_id, version=version)


def _defer(job: SendJob, *, worker_id: str, until: datetime, why: str, detail: str = "",
           held: dict[str, Any] | None = None, hold: str = "") -> Authorization:
    """claimed -> scheduled: the sending window is closed, the mailbox reached its daily cap, or it has not read
    its replies (`detail`: why, in words; `hold`: the hold's reason, the same while it lasts). `held`: the hold
    this re-check started from (`holding`); the same hold again writes no event."""
    quiet = _same_hold(held, hold)
    if not quiet:
        _recheck_ends(job, held, worker_id=worker_id)
    # A deferral is not a sending attempt: it does not count against OUTREACH_MAX_ATTEMPTS.
    job_move(job=job, to=S.SCHEDULED, worker_id=worker_id, event=Event.JOB_DEFERRED, quiet=quiet,
             fields={"scheduled_at": until, "worker_id": "", "lease_until": None, "attempts": F("attempts") - 1},
             reason=why, until=until.isoformat(), **({"detail": detail} if detail else {}),
             **({"hold": hold} if hold else {}))
    return Authorization("deferred", why, job.version)


def _same_hold(held: dict[str, Any] | None, hold: str) -> bool:
    """This re-check found the hold it started from, for the same reason: nothing new to write."""
    return bool(hold) and held is not None and held.get("hold") == hold


def _recheck_ends(job: SendJob, held: dict[str, Any] | None, *, worker_id: str) -> None:
    """A quiet re-check of a hold ends otherwise: write its dispatch and claim before what it ends in."""
    if held is not None:
        job_quiet_moves_record(job=job, worker_id=worker_id)


def _reply_view_hold(mailbox: Mailbox, facts: Facts) -> str:
    """A reply-view hold's reason, the same for as long as it lasts: the state of the view (not its words, which
    count the seconds), and the error of the last poll where the words quote it."""
    view = reply_view.view_of(mailbox, facts.views, now=facts.now)
    error = mailbox.last_poll_error if view in (reply_view.View.STALE, reply_view.View.NEVER_READ) else ""
    return f"{Reason.REPLY_VIEW.value}: {view.value}" + (f": {error}" if error else "")


def _lost(job: SendJob, *, worker_id: str, version: int) -> Authorization:
    """Someone else moved the job since this worker claimed it: record the no-op; nothing is sent."""
    event_record(kind=Event.AUTHORIZE_NOOP, email=job.enrollment.contact.email, enrollment=job.enrollment_id, job=job,
                 version_seen=job.version, worker_id=worker_id, state=job.state, expected_version=version)
    return Authorization("lost", f"job is {job.state} v{job.version}, expected claimed v{version}")


def final_check(*, job: SendJob, enrollment: Enrollment, mailbox: Mailbox, facts: Facts) -> str:
    """The reason this job must not be sent, or '' when it may be: the rows from job_locked and the facts read
    after it (`facts_read`), under the enrollment lock."""
    if enrollment.status == E.STOPPED:
        return enrollment.stop_reason or Reason.ENROLLMENT_STOPPED
    if enrollment.status == E.PAUSED:
        return Reason.ENROLLMENT_PAUSED
    if enrollment.status == E.COMPLETED:
        return Reason.ENROLLMENT_COMPLETED
    if enrollment.sequence.status == Sequence.Status.PAUSED:
        return Reason.SEQUENCE_PAUSED  # a draft is held, not canceled (send_job_authorize)
    if mailbox.paused:
        return Reason.MAILBOX_PAUSED
    if facts.suppressed:  # the ledger of the address and its domain, and the hashed ledger of erased people
        return Reason.SUPPRESSED
    if not facts.previous_step_sent:
        return Reason.PREVIOUS_STEP_NOT_SUBMITTED
    if job.variant_id is not None and job.variant.stopped_at is not None:
        # The variant's row came with the job (`loads.job_read`), read after the enrollment lock like the rest.
        return VARIANT_STOPPED
    return ""


# --- the record of the hand-off ------------------------------------------------------------------


def send_job_record_submitted(*, job_id: int, worker_id: str, smtp_reply: str, provider_message_id: str = "",
                              provider_request_id: str = "", provider_schedule: dict[str, Any] | None = None) -> bool:
    """authorized -> submitted with the transport's answer, then schedule the next step; durable transaction."""
    with transaction.atomic(durable=True):
        locked = job_locked(job_id)
        enrollment, mailbox, job = locked.enrollment, locked.mailbox, locked.job
        if job.state != S.AUTHORIZED:
            # The sweeper may have marked it unknown; the message did leave, so say so.
            event_record(kind=Event.SUBMIT_AFTER_STATE_CHANGE, email=job.enrollment.contact.email,
                         enrollment=enrollment, job=job, version_seen=job.version, worker_id=worker_id,
                         state=job.state, smtp_reply=smtp_reply)
            return False
        # Scheduled at a provider: provider_schedule_id, provider_send_at, cancelable_until.
        schedule = provider_schedule or {}
        job_move(job=job, to=S.SUBMITTED, worker_id=worker_id,
                 fields={"smtp_reply": smtp_reply, "provider_message_id": provider_message_id,
                         "provider_request_id": provider_request_id, "lease_until": None, **schedule},
                 smtp_reply=smtp_reply, provider_message_id=provider_message_id,
                 **{k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in schedule.items()})
        active = enrollment.status == E.ACTIVE and enrollment.sequence.status == Sequence.Status.ACTIVE
        if mailbox.connect_failures:
            # The server answered: the failures to reach it were not persistent.
            Mailbox.objects.filter(pk=mailbox.pk, connect_failures__gt=0).update(connect_failures=0)
        if active and not mailbox.paused:
            schedule_next(enrollment, reason=Reason.PREVIOUS_STEP_SUBMITTED)
        elif schedule:
            # A stop committed while this job was being handed off for later delivery: ask the provider.
            provider_cancel_request(enrollment=enrollment, reason=Reason.STOPPED_DURING_HAND_OFF)
        return True


def send_job_record_retry(*, job_id: int, worker_id: str, error: str) -> str:
    """authorized -> scheduled with backoff (the retry re-enters the guard), or -> failed when exhausted.

    Locks the enrollment like every stop: a stop that committed while the
    transport was refusing counted this job as in flight; the retry it would
    otherwise leave behind is canceled here with the stop's reason, in the
    same transaction, so a stopped enrollment never holds a live job.
    """
    with transaction.atomic(durable=True):
        locked = job_locked(job_id)
        if locked.job.state != S.AUTHORIZED:
            return locked.job.state
        return retry_locked(locked, worker_id=worker_id, error=error)


def retry_locked(locked: Locked, *, worker_id: str, error: str) -> str:
    """The retry of an authorized job whose enrollment the caller has locked (`job_locked`)."""
    enrollment, job = locked.enrollment, locked.job
    if job.attempts >= settings.OUTREACH_MAX_ATTEMPTS:
        job_move(job=job, to=S.FAILED, worker_id=worker_id,
                 fields={"error": f"gave up after {job.attempts} attempts: {error}", "lease_until": None},
                 error=error, attempts=job.attempts)
        enrollment_stop_after_failure(enrollment, job=job)
        return S.FAILED
    delay = settings.OUTREACH_RETRY_BASE_SECONDS * (2 ** max(job.attempts - 1, 0))
    when = db_now() + timedelta(seconds=delay)
    job_move(job=job, to=S.SCHEDULED, worker_id=worker_id, event=Event.JOB_RETRY_SCHEDULED,
             fields={"scheduled_at": when, "error": error, "worker_id": "", "lease_until": None},
             error=error, attempts=job.attempts, retry_at=when.isoformat())
    reason = final_check(job=job, enrollment=enrollment, mailbox=locked.mailbox,
                         facts=facts_read(job, locked.mailbox))
    if reason:
        job_move(job=job, to=S.CANCELED, worker_id=worker_id, fields={"cancel_reason": reason}, reason=reason,
                 after_retry=True)
        if reason == VARIANT_STOPPED:
            variant_stopped_follow_up(enrollment)
        return S.CANCELED
    return S.SCHEDULED


def send_job_record_failed(*, job_id: int, worker_id: str, error: str, hard_bounce: bool) -> None:
    """authorized -> failed; a recipient that does not exist is suppressed and its enrollments stopped."""
    with transaction.atomic(durable=True):
        locked = job_locked(job_id)
        enrollment, job = locked.enrollment, locked.job
        if hard_bounce:
            # Locks every enrollment of the address (this one is already held: the same order).
            suppression_add_in_transaction(value=enrollment.contact.email, reason=Suppression.Reason.HARD_BOUNCE,
                                           note=error, source=f"smtp:job {job.pk}",
                                           workspace_id=job_workspace_id(job.pk))
            job.refresh_from_db(fields=["state", "version"])
            enrollment.refresh_from_db(fields=["status", "stop_reason", "version"])
        if job.state == S.AUTHORIZED:
            job_move(job=job, to=S.FAILED, worker_id=worker_id, fields={"error": error, "lease_until": None},
                     error=error, hard_bounce=hard_bounce)
            enrollment_stop_after_failure(enrollment, job=job)
            # A refusal naming the sender's authentication or a blocklist counts toward the mailbox's guardrail.
            guardrail_refusal_record(job=job, mailbox=locked.mailbox, reply=error)


def send_job_record_unpreparable(*, job_id: int, worker_id: str, error: str) -> bool:
    """claimed -> failed: the message could not be built, so it never reached a transport; durable transaction.

    Final, with the reason on the job (never a retry: the same data fails the
    same way). Like any failed step, it stops the enrollment with reason
    "failed"; once the data or the template is fixed, an operator retries it.
    """
    with transaction.atomic(durable=True):
        locked = job_locked(job_id)
        enrollment, job = locked.enrollment, locked.job
        if job.state != S.CLAIMED or job.worker_id != worker_id:
            return False  # a stop canceled it, or the lease ran out and another worker owns it
        _recheck_ends(job, holding([job.pk]).get(job.pk), worker_id=worker_id)
        moved = job_move(job=job, to=S.FAILED, worker_id=worker_id, event=Event.JOB_PREPARE_FAILED,
                         fields={"error": f"could not prepare: {error}", "lease_until": None}, error=error)
        if moved:
            enrollment_stop_after_failure(enrollment, job=job)
        return moved


def send_job_record_unknown(*, job_id: int, worker_id: str, error: str) -> None:
    """authorized -> unknown: the message may or may not have left; never resent automatically."""
    with transaction.atomic(durable=True):
        job = job_locked(job_id).job
        if job.state == S.AUTHORIZED:
            job_move(job=job, to=S.UNKNOWN, worker_id=worker_id, fields={"error": error, "lease_until": None},
                     error=error, evidence="transport did not confirm; check the server's log for the Message-ID",
                     message_id=job.message_id)


def leases_sweep() -> dict[str, Any]:
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
                if job_move(job=job, to=S.QUEUED, event=Event.CLAIM_EXPIRED,
                            fields={"worker_id": "", "lease_until": None}, lost_worker=job.worker_id):
                    requeued.append(job.pk)
            elif job_move(job=job, to=S.UNKNOWN, event=Event.WORKER_LOST,
                          fields={"error": f"worker {job.worker_id} lost after authorization (lease expired)",
                                  "lease_until": None},
                          lost_worker=job.worker_id, authorized_at=iso(job.authorized_at),
                          message_id=job.message_id,
                          evidence="authorized but no transport answer recorded; "
                                   "check the SMTP server log for the Message-ID"):
                lost += 1
    return {"requeued": len(requeued), "unknown": lost, "requeued_ids": requeued}
