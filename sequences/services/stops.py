"""The one stop path: stop, pause and resume of enrollments, sequences and mailboxes.

Every stop locks the enrollment rows first (`sequences.locks`), then cancels
each job that has not passed authorization with the send-job state machine's
guarded move, asks providers to cancel what they hold for later, and counts
what had already passed the hand-off: it can say what it canceled, never
recall what left. Suppressions and ingestion stop people through here.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from db.clock import DbClock, db_now
from mailboxes.models import Mailbox
from sequences.stop_summary import StopSummary

from ..freemail import is_free_mail
from ..loads import enrollment_jobs
from ..locks import enrollment_lock, enrollments_lock, mailbox_lock, person_enrollments_lock, sequence_lock
from ..models import Enrollment, SendJob, Sequence
from ..reasons import Reason
from ..selectors import suppression_active_for
from ..sending_mailbox import enrollment_mailbox, enrollment_mailbox_id, sends_from
from ..states import (
    CANCELABLE,
    LIVE,
    MAILBOX_ACTIVE,
    MAILBOX_PAUSED,
    enrollment_move,
    job_move,
    mailbox_move,
    sequence_move,
)
from ..timeline import Event
from .common import ServiceError, T, operator_log
from .guardrails import GUARDRAIL, guardrail_silence_locked
from .provider_cancel import provider_cancel_request
from .scheduling import schedule_next, schedule_step, superseded

S = SendJob.State
E = Enrollment.Status


def cancel_pending(enrollment: Enrollment, *, reason: str, actor: str = "") -> StopSummary:
    """Cancel every job of a locked enrollment that has not passed authorization; requires a transaction.

    One read of the enrollment's jobs tells what to cancel and what is already past the hand-off: under
    the enrollment lock no job can be authorized or recorded meanwhile (a claim or a lost claim can still
    move, and the guarded move sees it).
    """
    summary = StopSummary()
    jobs = enrollment_jobs(enrollment.pk)
    for job in jobs:
        if job.state not in CANCELABLE:
            continue
        job.enrollment = enrollment  # locked, with its contact: the events name the address
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
    if any(job.state == S.SUBMITTED and job.provider_schedule_id and not job.provider_cancel_status for job in jobs):
        provider_cancel_request(enrollment=enrollment, reason=reason, actor=actor)
    canceled_now = set(summary.job_ids_canceled)
    for job in jobs:
        if job.pk in canceled_now:
            summary.count_step(job.step.position, 0)
        elif job.state == S.AUTHORIZED:
            summary.in_flight += 1
            summary.job_ids_passed.append(job.pk)
            summary.count_step(job.step.position, 1)
        elif job.state in (S.SUBMITTED, S.ACCEPTED, S.UNKNOWN):
            summary.submitted += 1
            summary.job_ids_passed.append(job.pk)
            summary.count_step(job.step.position, 2)
    return summary


# --- enrollments -------------------------------------------------------------------------


def enrollment_stop(*, enrollment_id: int, reason: str, actor: str = "", source: str = "") -> StopSummary:
    """Stop an enrollment for good and cancel its pending jobs; owns one durable transaction."""
    with transaction.atomic(durable=True):
        summary = enrollment_stop_in_transaction(enrollment_id=enrollment_id, reason=reason, actor=actor, source=source)
        operator_log(actor=actor, action="enrollment_stop", target=f"enrollment {enrollment_id}",
                     kind=T.ENROLLMENT, target_id=enrollment_id, result=summary.as_dict() | {"reason": reason})
        return summary


def enrollment_stop_in_transaction(
    *, enrollment_id: int, reason: str, actor: str = "", source: str = ""
) -> StopSummary:
    """As enrollment_stop, inside the caller's transaction (e.g. with an inbound ledger row)."""
    return enrollment_stop_locked(enrollment_lock(enrollment_id=enrollment_id), reason=reason, actor=actor,
                                  source=source)


def enrollment_stop_locked(enrollment: Enrollment, *, reason: str, actor: str = "", source: str = "",
                           because: str = "") -> StopSummary:
    """Stop an enrollment the caller has locked; `because` says in words which event stopped it, and where."""
    if reason not in Enrollment.StopReason.values:
        raise ServiceError(f"unknown stop reason {reason!r}")
    if enrollment.status == E.STOPPED:
        # Idempotent: a second stop changes nothing (and never rewrites the first reason).
        return StopSummary()
    summary = cancel_pending(enrollment, reason=reason, actor=actor)
    summary.enrollments, summary.changed = 1, True
    enrollment_move(enrollment=enrollment, to=E.STOPPED, event=Event.ENROLLMENT_STOPPED,
                    fields={"stop_reason": reason, "stopped_at": DbClock()},
                    reason=reason, actor=actor, source=source, **({"because": because} if because else {}),
                    **summary.as_dict())
    return summary


# --- people ------------------------------------------------------------------------------------


def person_stop_in_transaction(*, email: str, reason: str, because: str, source: str = "",
                               domain: str = "", colleague_reason: str = "", actor: str = "") -> StopSummary:
    """Stop every enrollment of a person in every sequence and mailbox (and, given `domain`, of everyone there).

    Requires the caller's transaction. All the rows are locked in one call, in
    ascending id order (`sequences.locks`), so each stop serializes with the
    final check of that enrollment's jobs exactly as a single stop does.
    """
    email = email.strip().lower()
    if domain:
        scope = Q(contact__email=email) | Q(contact__email__iendswith="@" + domain.lower())
        locked = enrollments_lock(Enrollment.objects.filter(scope).exclude(status=E.STOPPED))
    else:
        locked = person_enrollments_lock(email)
    summary = StopSummary()
    for enrollment in locked:
        own = enrollment.contact.email == email
        summary.add(enrollment_stop_locked(enrollment, reason=reason if own else colleague_reason or reason,
                                           actor=actor, source=source, because=because))
    return summary


def reply_stop_in_transaction(*, job_id: int, source: str, strong: bool = True, job: SendJob | None = None,
                              mailbox: Mailbox | None = None, replied_by: str = "", actor: str = "") -> StopSummary:
    """A correlated human reply to the message of `job_id` stops the person in every sequence and mailbox.

    With the sequence's `stop_on_reply = "domain"` and strong evidence (the reply names our Message-ID), it
    also stops everyone at the person's company domain, never at a free-mail domain. Requires a transaction.
    `job`: that job as the caller read it (enrollment, contact and sequence loaded), not read again; what is
    stopped is decided under the locks that follow, from fresh rows. `mailbox`: the one the job was sent from,
    when the caller has it (ingestion: the mailbox the reply came to), for the words of the stop.
    `replied_by`: who wrote the reply, when it is not the person (an assistant, a colleague): the stop says so.
    """
    if job is None or job.pk != job_id:
        job = SendJob.objects.select_related(
            "enrollment__contact", "enrollment__mailbox", "enrollment__sequence__mailbox").get(pk=job_id)
    contact, sequence = job.enrollment.contact, job.enrollment.sequence
    widen = strong and sequence.stop_on_reply == Sequence.StopOnReply.DOMAIN and not is_free_mail(contact.domain)
    if mailbox is None or mailbox.pk != enrollment_mailbox_id(job.enrollment):
        mailbox = enrollment_mailbox(job.enrollment)
    because = f"{reply_words(contact.email, replied_by)} in sequence '{sequence.name}' (mailbox {mailbox.name})"
    return person_stop_in_transaction(email=contact.email, reason=Enrollment.StopReason.REPLIED, because=because,
                                      source=source, domain=contact.domain if widen else "",
                                      colleague_reason=Enrollment.StopReason.COLLEAGUE_REPLIED, actor=actor)


def reply_words(person: str, replied_by: str = "") -> str:
    """Who replied, in words: "ada@acme.test replied", or "assistant@acme.test replied for ada@acme.test"."""
    replier = replied_by.strip().lower()
    if not replier or replier == person:
        return f"{person} replied"
    return f"{replier} replied for {person}"


def enrollment_pause(*, enrollment_id: int, actor: str = "") -> StopSummary:
    """Pause one enrollment: cancel what has not passed authorization; durable transaction."""
    with transaction.atomic(durable=True):
        summary = enrollment_pause_in_transaction(enrollment_id=enrollment_id, actor=actor)
        operator_log(actor=actor, action="enrollment_pause", target=f"enrollment {enrollment_id}",
                     kind=T.ENROLLMENT, target_id=enrollment_id, result=summary.as_dict())
        return summary


def enrollment_pause_in_transaction(*, enrollment_id: int, actor: str = "", source: str = "") -> StopSummary:
    """As enrollment_pause, inside the caller's transaction."""
    enrollment = enrollment_lock(enrollment_id=enrollment_id)
    if enrollment.status != E.ACTIVE:
        return StopSummary()
    summary = cancel_pending(enrollment, reason=Reason.ENROLLMENT_PAUSED, actor=actor)
    summary.enrollments, summary.changed = 1, True
    enrollment_move(enrollment=enrollment, to=E.PAUSED, event=Event.ENROLLMENT_PAUSED, actor=actor, source=source,
                    **summary.as_dict())
    return summary


def enrollment_resume(*, enrollment_id: int, actor: str = "") -> Enrollment:
    """Resume a paused (or, explicitly, a stopped) enrollment and schedule its next step."""
    with transaction.atomic(durable=True):
        enrollment = enrollment_lock(enrollment_id=enrollment_id)
        if enrollment.status == E.COMPLETED:
            raise ServiceError(f"{enrollment} is completed; nothing to resume")
        blocked = suppression_active_for(enrollment.contact.email, workspace_id=enrollment.sequence.workspace_id)
        if blocked is not None:
            raise ServiceError(f"{enrollment.contact.email} is suppressed ({blocked.reason}); lift it first")
        failed_step = enrollment.status == E.STOPPED and enrollment.stop_reason == Enrollment.StopReason.FAILED
        if enrollment.status != E.ACTIVE:
            _reactivate(enrollment, actor=actor)
        # Resuming after a failed step is a retry of that step (through the final check, like any send).
        job = _retry_failed_locked(enrollment) if failed_step else None
        job = job or schedule_next(enrollment, reason=Reason.RESUMED)
        operator_log(actor=actor, action="enrollment_resume", target=str(enrollment), kind=T.ENROLLMENT,
                     target_id=enrollment.pk,
                     result={"scheduled_job": job.pk if job else None, "status": enrollment.status})
        enrollment.refresh_from_db()
        return enrollment


def send_job_retry(*, job_id: int, actor: str = "") -> SendJob:
    """An operator retries a failed job: a new job for its step, due now; the enrollment runs again."""
    with transaction.atomic(durable=True):
        enrollment_id = SendJob.objects.values_list("enrollment_id", flat=True).get(pk=job_id)
        enrollment = enrollment_lock(enrollment_id=enrollment_id)
        job = SendJob.objects.select_related("step").get(pk=job_id)
        if job.state != S.FAILED:
            raise ServiceError(f"job {job_id} is {job.state}: only a failed job can be retried")
        if superseded(job):
            raise ServiceError(f"job {job_id} was retried already")
        blocked = suppression_active_for(enrollment.contact.email, workspace_id=enrollment.sequence.workspace_id)
        if blocked is not None:
            raise ServiceError(f"{enrollment.contact.email} is suppressed ({blocked.reason}); lift it first")
        if enrollment.status == E.STOPPED and enrollment.stop_reason != Enrollment.StopReason.FAILED:
            raise ServiceError(f"{enrollment} was stopped ({enrollment.stop_reason}); resume it explicitly")
        if enrollment.status in (E.STOPPED, E.COMPLETED):
            _reactivate(enrollment, actor=actor, retry_of=job.pk)
        retry = schedule_step(enrollment, step=job.step, at=db_now(), reason=f"retry of job {job.pk}")
        operator_log(actor=actor, action="job_retry", target=str(enrollment), kind=T.ENROLLMENT,
                     target_id=enrollment.pk, result={"failed_job": job.pk, "scheduled_job": retry.pk})
        return retry


def _reactivate(enrollment: Enrollment, **event_data) -> None:
    """A locked, paused or stopped (or completed) enrollment runs again; its stop reason is cleared."""
    enrollment_move(enrollment=enrollment, to=E.ACTIVE, event=Event.ENROLLMENT_RESUMED,
                    fields={"stop_reason": "", "stopped_at": None}, previous=enrollment.status, **event_data)


def _retry_failed_locked(enrollment: Enrollment) -> SendJob | None:
    failed = (SendJob.objects.filter(enrollment=enrollment, state=S.FAILED).select_related("step")
              .order_by("-id").first())
    if failed is None or superseded(failed):
        return None
    return schedule_step(enrollment, step=failed.step, at=db_now(), reason=f"retry of job {failed.pk}")


def enrollment_stop_after_failure(enrollment: Enrollment, *, job: SendJob) -> None:
    """A step that cannot be sent stops its (locked) enrollment: never left active with nothing to do."""
    if enrollment.status in (E.ACTIVE, E.PAUSED):
        enrollment_stop_locked(enrollment, reason=Enrollment.StopReason.FAILED, source=f"job {job.pk} failed")


# --- sequences and mailboxes ------------------------------------------------------------------


def sequence_pause(*, sequence_id: int, actor: str = "") -> StopSummary:
    """Pause a sequence: cancel every job of it not yet authorized; durable transaction."""
    with transaction.atomic(durable=True):
        enrollments = enrollments_lock(Enrollment.objects.filter(sequence_id=sequence_id))
        sequence = sequence_lock(sequence_id=sequence_id)
        summary = StopSummary()
        if sequence.status == Sequence.Status.ACTIVE:  # a draft sends nothing: pausing it changes nothing
            summary = _cancel_all(enrollments, reason=Reason.SEQUENCE_PAUSED, actor=actor)
            sequence_move(sequence=sequence, to=Sequence.Status.PAUSED, actor=actor, **summary.as_dict())
        operator_log(actor=actor, action="sequence_pause", target=f"sequence {sequence.name}", kind=T.SEQUENCE,
                     target_id=sequence.pk, result=summary.as_dict() | {"status": "paused"})
        return summary


def sequence_resume(*, sequence_id: int, actor: str = "") -> int:
    """Resume a sequence; schedules the next step of each active enrollment. Returns jobs scheduled."""
    with transaction.atomic(durable=True):
        enrollments = enrollments_lock(Enrollment.objects.filter(sequence_id=sequence_id, status=E.ACTIVE))
        sequence = sequence_lock(sequence_id=sequence_id)
        scheduled = 0
        if sequence.status == Sequence.Status.PAUSED:
            scheduled = _schedule_all(enrollments, reason=Reason.SEQUENCE_RESUMED)
            sequence_move(sequence=sequence, to=Sequence.Status.ACTIVE, actor=actor, scheduled=scheduled)
        operator_log(actor=actor, action="sequence_resume", target=f"sequence {sequence.name}", kind=T.SEQUENCE,
                     target_id=sequence.pk, result={"scheduled": scheduled, "status": "active"})
        return scheduled


def sequence_launch(*, sequence_id: int, actor: str = "") -> int:
    """Launch a draft: draft -> active, once. Its people's jobs, held until now, are sent from the next dispatcher
    pass, each through the final check. Returns how many are waiting; durable transaction."""
    with transaction.atomic(durable=True):
        # An active enrollment left without a job while it waited (a pause of its mailbox canceled it, and a
        # mailbox's resume schedules only launched sequences) gets its next step now: the lock order first.
        stranded = enrollments_lock(Enrollment.objects.filter(sequence_id=sequence_id, status=E.ACTIVE)
                                    .exclude(jobs__state__in=LIVE))
        sequence = sequence_lock(sequence_id=sequence_id)
        if sequence.status != Sequence.Status.DRAFT:
            raise ServiceError(f"“{sequence.name}” is not a draft ({sequence.get_status_display().lower()}): "
                               "it was launched already.")
        if not sequence.steps.exists():
            raise ServiceError(f"“{sequence.name}” has no steps yet: add its first step, then launch it.")
        _schedule_all(stranded, reason=Reason.SEQUENCE_LAUNCHED)
        waiting = SendJob.objects.filter(enrollment__sequence_id=sequence_id, state=S.SCHEDULED).count()
        sequence_move(sequence=sequence, to=Sequence.Status.ACTIVE, actor=actor, waiting=waiting)
        operator_log(actor=actor, action="sequence_launch", target=f"sequence {sequence.name}", kind=T.SEQUENCE,
                     target_id=sequence.pk, result={"status": "active", "waiting": waiting})
        return waiting


def mailbox_pause(*, mailbox_id: int, actor: str = "") -> StopSummary:
    """Pause a mailbox: nothing leaves it; jobs not yet authorized are canceled."""
    with transaction.atomic(durable=True):
        enrollments = enrollments_lock(Enrollment.objects.filter(sends_from(mailbox_id)))
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        summary = StopSummary()
        if not mailbox.paused:
            summary = _cancel_all(enrollments, reason=Reason.MAILBOX_PAUSED, actor=actor)
            mailbox_move(mailbox=mailbox, to=MAILBOX_PAUSED, actor=actor, **summary.as_dict())
        operator_log(actor=actor, action="mailbox_pause", target=f"mailbox {mailbox.name}", kind=T.MAILBOX,
                     target_id=mailbox.pk, result=summary.as_dict() | {"paused": True})
        return summary


def mailbox_pause_sweep(*, mailbox_id: int) -> StopSummary:
    """Cancel the pending jobs of a mailbox that is paused already (the guardrail's pause, after its commit)."""
    with transaction.atomic(durable=True):
        enrollments = enrollments_lock(Enrollment.objects.filter(sends_from(mailbox_id)))
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        if not mailbox.paused:
            return StopSummary()  # resumed meanwhile: nothing to cancel
        summary = _cancel_all(enrollments, reason=Reason.MAILBOX_PAUSED, actor="")
        operator_log(actor=GUARDRAIL, action="mailbox_pause_sweep", target=f"mailbox {mailbox.name}",
                     kind=T.MAILBOX, target_id=mailbox.pk, result=summary.as_dict())
        return summary


def mailbox_resume(*, mailbox_id: int, actor: str = "") -> int:
    """Resume a mailbox; schedules the next step of active enrollments in its active sequences."""
    with transaction.atomic(durable=True):
        enrollments = enrollments_lock(
            Enrollment.objects.filter(
                sends_from(mailbox_id), status=E.ACTIVE, sequence__status=Sequence.Status.ACTIVE
            )
        )
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        scheduled = 0
        if mailbox.blocked_at is not None:
            # Resuming is a reason to look again: the next dispatcher pass probes it.
            Mailbox.objects.filter(pk=mailbox.pk).update(next_probe_at=db_now())
        if mailbox.paused:
            scheduled = _schedule_all(enrollments, reason=Reason.MAILBOX_RESUMED)
            mailbox_move(mailbox=mailbox, to=MAILBOX_ACTIVE, actor=actor, scheduled=scheduled)
            guardrail_silence_locked(mailbox, actor=actor)
        operator_log(actor=actor, action="mailbox_resume", target=f"mailbox {mailbox.name}", kind=T.MAILBOX,
                     target_id=mailbox.pk, result={"scheduled": scheduled, "paused": False})
        return scheduled


def _cancel_all(enrollments: list[Enrollment], *, reason: str, actor: str) -> StopSummary:
    """A sequence or mailbox pause: cancel the pending jobs of every (locked) enrollment it covers."""
    summary = StopSummary(changed=True)
    for enrollment in enrollments:
        summary.add(cancel_pending(enrollment, reason=reason, actor=actor))
    return summary


def _schedule_all(enrollments: list[Enrollment], *, reason: str) -> int:
    """A sequence or mailbox resume: the next step of every (locked) enrollment; returns how many were scheduled."""
    return sum(schedule_next(enrollment, reason=reason) is not None for enrollment in enrollments)
