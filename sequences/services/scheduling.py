"""What an enrollment sends next: the next step's job, or completion. Requires the enrollment locked."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import timedelta

from mailboxes.models import Mailbox

from ..loads import enrollment_progress
from ..models import Enrollment, ProviderCancel, SendJob, Step
from ..sending_mailbox import enrollment_mailbox
from ..states import LIVE, enrollment_move, job_created, job_left
from ..timeline import Event
from ..variants import running_variants, variant_pick

S = SendJob.State
E = Enrollment.Status


def new_message_id(mailbox: Mailbox) -> str:
    domain = mailbox.address.rsplit("@", 1)[-1] or "outreach.invalid"
    return f"<outreach.{uuid.uuid4().hex}@{domain}>"


def latest_per_step(enrollment: Enrollment) -> list[SendJob]:
    """The enrollment's jobs that speak for their steps: the latest of each, canceled ones aside.

    An operator's retry of a failed job supersedes it.
    """
    return latest_of_each_step(enrollment_progress(enrollment)[1])


def latest_of_each_step(jobs: Iterable[SendJob]) -> list[SendJob]:
    """Of jobs in id order, the latest of each step."""
    return list({job.step_id: job for job in jobs}.values())


def superseded(job: SendJob) -> bool:
    """Whether a later job exists for the same step of the same enrollment (the job was retried)."""
    return SendJob.objects.filter(enrollment_id=job.enrollment_id, step_id=job.step_id, pk__gt=job.pk).exists()


def schedule_next(enrollment: Enrollment, *, reason: str) -> SendJob | None:
    """Create the job for the enrollment's next step, or complete it; enrollment locked by the caller.

    One read (`sequences.loads.enrollment_progress`: the steps, the jobs, the clock), then the move or the
    new job."""
    steps, all_jobs, now = enrollment_progress(enrollment)
    jobs = latest_of_each_step(all_jobs)
    if any(j.state in LIVE for j in jobs):
        return None  # one is already on its way
    if any(j.provider_cancel_status == ProviderCancel.REQUESTED for j in jobs):
        # Whether that message leaves is the provider's answer to give: it schedules what follows
        # (services.provider_cancel.enrollment_after_provider_answer).
        return None
    if any(j.state in (S.UNKNOWN, S.FAILED) for j in jobs):
        # Never continue past a message whose fate is unknown or that failed.
        return None
    # Messages that really left (`states.job_left`): one the provider confirmed it canceled before its send time
    # never left, and its step is still to do.
    sent = [j for j in jobs if job_left(j)]
    last_position = max((j.step.position for j in sent), default=0)
    step = next((s for s in steps if s.position > last_position), None)
    if step is None:
        if enrollment.status == E.ACTIVE:
            enrollment_move(enrollment=enrollment, to=E.COMPLETED, event=Event.ENROLLMENT_COMPLETED)
        return None
    # A step scheduled at a provider leaves at provider_send_at, not when it was handed off.
    base = max((j.provider_send_at or j.submitted_at for j in sent if j.submitted_at), default=None)
    due = (base or now) + timedelta(seconds=step.wait_seconds)
    return schedule_step(enrollment, step=step, at=max(due, now), reason=reason)


def schedule_step(enrollment: Enrollment, *, step: Step, at, reason: str) -> SendJob:
    """A new job for one step of a locked enrollment, due at `at`, written with its event (`job_created`); a step
    with A/B variants gives it one of its running variants (`sequences.variants`), kept for the job's life."""
    variant_id = None
    # `has_variants` comes with the steps of enrollment_progress; a step read otherwise is asked.
    if getattr(step, "has_variants", True):
        variant_id = variant_pick(running_variants(step.pk), enrollment_id=enrollment.pk, step_id=step.pk)
    job = SendJob(enrollment=enrollment, step=step, variant_id=variant_id, state=S.SCHEDULED, scheduled_at=at,
                  message_id=new_message_id(enrollment_mailbox(enrollment)))
    extra = {"variant": variant_id} if variant_id else {}
    job_created(job=job, email=enrollment.contact.email, scheduled_at=at.isoformat(), reason=reason, **extra)
    return job
