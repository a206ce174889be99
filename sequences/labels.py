"""Honest labels for send jobs: what was and was not sent. "Stopped" never implies recall."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from .models import Enrollment, SendJob

S = SendJob.State


def stamp(moment: datetime | None) -> str:
    """Database-clock time to the millisecond, UTC."""
    if moment is None:
        return "?"
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def job_label(job: SendJob) -> str:
    enrollment: Enrollment = job.enrollment
    sequence = enrollment.sequence
    stopped = (
        enrollment.status in (Enrollment.Status.STOPPED, Enrollment.Status.PAUSED)
        or sequence.status != sequence.Status.ACTIVE
        or sequence.mailbox.paused
    )
    if job.state == S.CANCELED:
        return f"Canceled — never sent ({job.cancel_reason}, {stamp(job.canceled_at)})"
    provider = _provider_label(job)
    if provider:
        return provider
    if job.state in (S.SUBMITTED, S.ACCEPTED):
        if stopped:
            return f"Already submitted at {stamp(job.submitted_at)} — cannot recall"
        return f"Submitted at {stamp(job.submitted_at)}"
    if job.state == S.AUTHORIZED:
        return f"Authorized at {stamp(job.authorized_at)}, being handed off — cannot recall"
    if job.state == S.UNKNOWN:
        ref = job.provider_request_id or job.message_id
        return f"Outcome unknown — may have been sent; check the server or provider log ({ref})"
    if job.state == S.FAILED:
        return f"Failed — not sent ({job.error or 'transport refused'})"
    if job.state == S.CLAIMED:
        return f"Being prepared by {job.worker_id or 'a worker'} — not sent yet"
    if job.state == S.QUEUED:
        return f"Queued at {stamp(job.queued_at)} — not sent yet"
    return f"Scheduled for {stamp(job.scheduled_at)} — not sent yet"


# Scheduled send at a provider: what the provider was asked, and what it answered.
PROVIDER_CANCEL_TEXT = {
    "requested": "cancellation requested",
    "confirmed": "cancellation confirmed",
    "refused": "cancellation refused: past cancelable_until",
    "failed": "cancellation failed: provider error",
}


def _provider_label(job: SendJob) -> str | None:
    """The label of a job handed to a provider for later delivery, or None for any other job."""
    if job.state != S.SUBMITTED or not job.provider_schedule_id or job.provider_send_at is None:
        return None
    scheduled = f"Scheduled at provider for {stamp(job.provider_send_at)}"
    if job.provider_cancel_status:
        return f"{scheduled}; {PROVIDER_CANCEL_TEXT[job.provider_cancel_status]}"
    if job.provider_send_at > timezone.now():  # display only: nothing decides on this clock
        return f"{scheduled}; cancelable until {stamp(job.cancelable_until)}"
    return None  # its time has passed: an ordinary submitted message
