"""The invariant every drill checks: an active enrollment has one live job, or a recorded reason to wait.

`enrollments_doctor` finds the active enrollments without a live job and,
under each one's lock, says why it waits (a paused sequence or mailbox, a cancel
that a provider has not answered, a message whose outcome is unknown) or
repairs it: a failed step stops the enrollment with reason "failed" (an
operator may retry it), anything else gets its next step (or completes).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from mailboxes.models import Mailbox

from ..locks import enrollment_lock
from ..models import Enrollment, ProviderCancel, SendJob, Sequence
from ..reasons import Reason
from ..sending_mailbox import enrollment_mailbox_id
from ..states import LIVE
from .scheduling import latest_per_step, schedule_next
from .stops import enrollment_stop_after_failure

S = SendJob.State
E = Enrollment.Status


@dataclass(frozen=True)
class Finding:
    enrollment_id: int
    email: str
    finding: str  # why it has no live job
    action: str  # the repair ("" when it waits for a reason on record)
    done: bool = False  # the repair was made (False in a dry run)


def enrollments_doctor(*, repair: bool = True, limit: int = 10_000,
                       enrollment_ids: list[int] | None = None) -> list[Finding]:
    """Active enrollments with no live job: each explained, or repaired (one short transaction each)."""
    active = Enrollment.objects.filter(status=E.ACTIVE)
    if enrollment_ids is not None:
        active = active.filter(pk__in=enrollment_ids)
    ids = list(active.exclude(jobs__state__in=LIVE).order_by("id").values_list("pk", flat=True)[:limit])
    return [finding for finding in (_examine(pk, repair=repair) for pk in ids) if finding is not None]


def _examine(enrollment_id: int, *, repair: bool) -> Finding | None:
    with transaction.atomic(durable=True):
        enrollment = enrollment_lock(enrollment_id=enrollment_id)
        if enrollment.status != E.ACTIVE or SendJob.objects.filter(enrollment=enrollment, state__in=LIVE).exists():
            return None  # changed since the scan
        email = enrollment.contact.email
        latest = latest_per_step(enrollment)
        if enrollment.sequence.status != Sequence.Status.ACTIVE:
            return Finding(enrollment_id, email, f"its sequence is {enrollment.sequence.get_status_display().lower()}",
                           "")
        if Mailbox.objects.filter(pk=enrollment_mailbox_id(enrollment), paused=True).exists():
            return Finding(enrollment_id, email, "its mailbox is paused", "")
        if any(job.provider_cancel_status == ProviderCancel.REQUESTED for job in latest):
            return Finding(enrollment_id, email, "a provider has not answered a cancel yet", "")
        unknown = next((job for job in latest if job.state == S.UNKNOWN), None)
        if unknown is not None:
            return Finding(enrollment_id, email, f"job {unknown.pk}: outcome unknown (check the server's log, "
                                                 "then retry or stop it)", "")
        failed = next((job for job in latest if job.state == S.FAILED), None)
        if failed is not None:
            if repair:
                enrollment_stop_after_failure(enrollment, job=failed)
            return Finding(enrollment_id, email, f"job {failed.pk} failed and nothing followed",
                           "stop it (failed); `manage.py retry` sends the step again", repair)
        if not repair:
            return Finding(enrollment_id, email, "no job and no reason to wait", "schedule its next step")
        job = schedule_next(enrollment, reason=Reason.DOCTOR)
        enrollment.refresh_from_db(fields=["status"])
        action = f"scheduled step {job.step.position}" if job else f"now {enrollment.status}"
        return Finding(enrollment_id, email, "no job and no reason to wait", action, True)
