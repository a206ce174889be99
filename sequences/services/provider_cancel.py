"""Where the race boundary moves to a provider: scheduled sends and their cancels.

A job handed to an ESP for later delivery is `submitted` with the provider's
schedule id, send time and `cancelable_until`. A stop that reaches it cannot
cancel it in our database; it can only ask the provider. So:

1. the stop's own transaction moves `provider_cancel_status` to "requested"
   (with a timeline event) and enqueues an RQ task after commit;
2. the task calls the provider with no transaction open;
3. a new short transaction records the answer: confirmed / refused (past
   cancelable_until) / failed (provider error). Only a documented success
   that came back before `cancelable_until` is recorded as confirmed.

The statuses and their edges are `states.PROVIDER_CANCEL_EDGES`.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial

from django.db import connection, transaction
from django.db.models import Q

from db.clock import DbClock, db_now
from mailboxes.models import Mailbox
from mailboxes.selectors import transport_for
from mailboxes.transports.esp import MAX_SCHEDULE_AHEAD, CancelAnswer, supports_scheduled_cancel

from ..labels import stamp
from ..locks import enrollment_lock
from ..models import Enrollment, ProviderCancel, SendJob, Sequence
from ..queues import enqueue_provider_cancel
from ..sending_mailbox import enrollment_mailbox, enrollment_mailbox_id, sends_from
from ..states import enrollment_move, provider_cancel_move
from ..timeline import Event
from .scheduling import schedule_next

log = logging.getLogger("outreach.providers")
S = SendJob.State
E = Enrollment.Status
P = ProviderCancel


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
        due |= sends_from(mailbox.pk, via="enrollment__") & Q(scheduled_at__lte=now + ahead)
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
        if not provider_cancel_move(job=job, to=P.REQUESTED, detail=f"requested ({reason})",
                                    email=enrollment.contact.email, reason=reason, actor=actor):
            continue
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
        SendJob.objects.filter(provider_cancel_status=P.REQUESTED, provider_send_at__gt=now,
                               events__kind=Event.PROVIDER_CANCEL_REQUESTED,
                               events__at__lt=now - timedelta(seconds=older_than_seconds))
        .values_list("pk", flat=True)
        .distinct()
    )


def send_job_provider_cancel(*, job_id: int) -> str:
    """Ask the provider to cancel a job scheduled there and record its answer; returns the recorded status.

    No transaction is open during the HTTP call; the answer is written in a
    short durable transaction, only over a status still "requested".
    """
    job = SendJob.objects.select_related("enrollment__contact", "enrollment__mailbox",
                                         "enrollment__sequence__mailbox").get(pk=job_id)
    if job.provider_cancel_status != P.REQUESTED:
        return job.provider_cancel_status or "none"  # a duplicate RQ job: the database decides
    mailbox = enrollment_mailbox(job.enrollment)
    now = db_now()
    if job.cancelable_until is not None and now >= job.cancelable_until:
        answer = CancelAnswer(
            P.REFUSED,
            f"past cancelable_until ({stamp(job.cancelable_until)}; asked at {stamp(now)}): "
            f"{mailbox.esp_name or 'the provider'} does not guarantee a cancel this late, so none was claimed",
        )
    else:
        transport = transport_for(mailbox)
        if not transport.supports_cancel:
            answer = CancelAnswer(P.FAILED, f"mailbox {mailbox.name} no longer sends through an ESP")
        else:
            assert not connection.in_atomic_block, "never hold a transaction across the provider call"
            answer = transport.cancel(schedule_id=job.provider_schedule_id)
            answered = db_now()
            if answer.status == P.CONFIRMED and job.cancelable_until and answered > job.cancelable_until:
                answer = CancelAnswer(
                    P.REFUSED,
                    f"{answer.detail}, but answered at {stamp(answered)}, past cancelable_until "
                    f"({stamp(job.cancelable_until)}): not guaranteed, so not claimed",
                )
    return _cancel_answer_record(job=job, answer=answer)


def _cancel_answer_record(*, job: SendJob, answer: CancelAnswer) -> str:
    with transaction.atomic(durable=True):
        enrollment = enrollment_lock(enrollment_id=job.enrollment_id)  # lock order: the enrollment first
        job.refresh_from_db(fields=["provider_cancel_status", "version"])
        if job.provider_cancel_status != P.REQUESTED or not provider_cancel_move(
            job=job, to=answer.status, detail=answer.detail, email=enrollment.contact.email
        ):
            return SendJob.objects.values_list("provider_cancel_status", flat=True).get(pk=job.pk)
        enrollment_after_provider_answer(enrollment=enrollment, answer=answer.status)
    log.info("job %s: provider cancel %s: %s", job.pk, answer.status, answer.detail)
    return answer.status


def enrollment_after_provider_answer(*, enrollment: Enrollment, answer: str) -> SendJob | None:
    """A provider answered a cancel; an enrollment resumed while it was pending gets its next step now.

    "confirmed": the canceled message's step is scheduled again. Otherwise the message may still
    leave at its send time, so it counts as sent. Requires the enrollment locked by the caller.
    """
    if answer == P.CONFIRMED and enrollment.status == E.COMPLETED:
        # Its last message was canceled (a sequence or mailbox pause): the enrollment is not complete.
        enrollment_move(enrollment=enrollment, to=E.ACTIVE, event=Event.ENROLLMENT_REACTIVATED,
                        reason="last message canceled at the provider")
    mailbox_paused = Mailbox.objects.filter(pk=enrollment_mailbox_id(enrollment), paused=True).exists()
    if enrollment.status != E.ACTIVE or enrollment.sequence.status != Sequence.Status.ACTIVE or mailbox_paused:
        return None  # its resume schedules the next step
    return schedule_next(enrollment, reason=f"provider_cancel_{answer}")
