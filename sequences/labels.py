"""Honest words for what was and was not sent: job labels with their tone, and stop summaries.

"Stopped" never implies recall. Every surface (pages, admin, commands,
ingestion notes, provider events) takes its words from here, so "already
submitted — cannot recall" can never be dropped on one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.utils import timezone

from . import reasons
from .models import Enrollment, ProviderCancel, SendJob
from .sending_mailbox import enrollment_mailbox
from .stop_summary import StopSummary
from .window import local_and_utc, mailbox_next_open, mailbox_window_zone

S = SendJob.State


def stamp(moment: datetime | None) -> str:
    """Database-clock time to the millisecond, UTC."""
    if moment is None:
        return "?"
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


class Tone(StrEnum):
    """What the colour of a label says (a CSS class); the words say it precisely."""

    NEVER_SENT = "never-sent"  # canceled before it left: grey
    FAILED = "failed"  # it did not leave, and that is a failure to look at: red
    PENDING = "pending"
    SENT = "sent"
    CANNOT_RECALL = "cannot-recall"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Label:
    text: str
    tone: Tone


def job_label(job: SendJob) -> str:
    return job_label_and_tone(job).text


def job_label_and_tone(job: SendJob, *, brief: bool = False) -> Label:
    """The label of a job and its tone, decided by the same branch; `brief` (lists of people): times to the
    minute, and none for a canceled job (its reason says it)."""
    at = when_words if brief else stamp
    enrollment: Enrollment = job.enrollment
    sequence = enrollment.sequence
    stopped = (
        enrollment.status in (Enrollment.Status.STOPPED, Enrollment.Status.PAUSED)
        or sequence.status != sequence.Status.ACTIVE
        or enrollment_mailbox(enrollment).paused
    )
    if job.state == S.CANCELED:
        why = reason_sentence(job.cancel_reason).rstrip(".")
        why = why[:1].lower() + why[1:]
        when = "" if brief else f" ({at(job.canceled_at)})"
        return Label(f"Canceled — never sent: {why}{when}", Tone.NEVER_SENT)
    provider = _provider_label(job)
    if provider:
        return provider
    if job.state in (S.SUBMITTED, S.ACCEPTED):
        if stopped:
            return Label(f"Already submitted at {at(job.submitted_at)} — cannot recall", Tone.CANNOT_RECALL)
        return Label(f"Submitted at {at(job.submitted_at)}", Tone.SENT)
    if job.state == S.AUTHORIZED:
        return Label(f"Authorized at {at(job.authorized_at)}, being handed off — cannot recall",
                     Tone.CANNOT_RECALL)
    if job.state == S.UNKNOWN:
        ref = job.provider_request_id or job.message_id
        return Label(f"Outcome unknown — may have been sent; check the server or provider log ({ref})", Tone.UNKNOWN)
    if job.state == S.FAILED and job.authorized_at is None:
        # Failed without an authorization: the message could not be prepared and never reached a transport.
        reason = job.error.removeprefix("could not prepare: ") or "could not be prepared"
        return Label(f"Not sent — could not be prepared: {reason}", Tone.FAILED)
    if job.state == S.FAILED:
        return Label(f"Failed — not sent ({job.error or 'transport refused'})", Tone.FAILED)
    if job.state == S.CLAIMED:
        return Label(f"Being prepared by {job.worker_id or 'a worker'} — not sent yet", Tone.PENDING)
    if job.state == S.QUEUED:
        return Label(f"Queued at {at(job.queued_at)} — not sent yet", Tone.PENDING)
    return Label(f"Scheduled for {at(job.scheduled_at)} — not sent yet", Tone.PENDING)


@dataclass(frozen=True)
class SendTime:
    """When a job leaves (or left), in the zone its mailbox's window opens in for this contact, and in UTC."""

    at: datetime
    zone: str
    local: str  # "Tue 1 Dec 2026 09:00 Pacific/Auckland"
    utc: str  # "Mon 30 Nov 2026 20:00 UTC"
    expected: bool  # not sent yet: the earliest moment the final check can let it leave

    @property
    def text(self) -> str:
        return self.utc if self.zone == "UTC" else f"{self.local} ({self.utc})"


def send_time_words(job: SendJob) -> SendTime:
    """The job's send time in the contact's local time and UTC, for "what will send when" and job views.

    A job not sent yet: the later of its scheduled time and its window's next
    opening in that zone (the daily cap may still move it; the final check
    decides). A job past the hand-off: when it was submitted, or authorized.
    Reads the job's enrollment, contact and mailbox (select them with the job).
    """
    enrollment = job.enrollment
    mailbox = enrollment_mailbox(enrollment)
    zone = mailbox_window_zone(mailbox, enrollment.contact.timezone)
    passed = job.submitted_at or job.authorized_at
    if passed is not None:
        at, expected = passed, False
    else:
        at = mailbox_next_open(job.scheduled_at, mailbox=mailbox, contact_zone=enrollment.contact.timezone)
        at, expected = at or job.scheduled_at, True
    local, utc = local_and_utc(at, zone)
    return SendTime(at=at, zone=zone, local=local, utc=utc, expected=expected)


# Scheduled send at a provider: what the provider was asked, what it answered, and what that means.
PROVIDER_CANCEL_LABEL: dict[str, tuple[str, Tone]] = {
    ProviderCancel.REQUESTED: ("cancellation requested", Tone.PENDING),
    ProviderCancel.CONFIRMED: ("cancellation confirmed", Tone.NEVER_SENT),
    ProviderCancel.REFUSED: ("cancellation refused: past cancelable_until", Tone.CANNOT_RECALL),
    ProviderCancel.FAILED: ("cancellation failed: provider error", Tone.CANNOT_RECALL),
}


def _provider_label(job: SendJob) -> Label | None:
    """The label of a job handed to a provider for later delivery, or None for any other job."""
    if job.state != S.SUBMITTED or not job.provider_schedule_id or job.provider_send_at is None:
        return None
    scheduled = f"Scheduled at provider for {stamp(job.provider_send_at)}"
    if job.provider_cancel_status:
        text, tone = PROVIDER_CANCEL_LABEL[job.provider_cancel_status]
        return Label(f"{scheduled}; {text}", tone)
    if job.provider_send_at > timezone.now():  # display only: nothing decides on this clock
        return Label(f"{scheduled}; cancelable until {stamp(job.cancelable_until)}", Tone.SENT)
    return None  # its time has passed: an ordinary submitted message


def _jobs(n: int) -> str:
    return f"{n} job{'' if n == 1 else 's'}"


def stop_summary_lines(summary: StopSummary) -> list[str]:
    """What a stop did to jobs, one sentence each: never sent, in flight now, handed off earlier.

    "In flight now" (authorized, its hand-off under way) and "handed off earlier" (submitted
    before the stop, finished) are kept apart: only the first may still be leaving as we speak.
    """
    return [
        f"{_jobs(summary.canceled)} canceled — never sent",
        f"{_jobs(summary.in_flight)} in flight now (authorized, being handed off) — cannot recall",
        f"{_jobs(summary.submitted)} handed off earlier (submitted before this stop) — cannot recall",
    ]


def _emails(n: int) -> str:
    return f"{n} email{'' if n == 1 else 's'}"


def stop_summary_sentences(*, canceled: int, in_flight: int, submitted: int, before: str) -> list[str]:
    """What a pause or stop did, in plain words for the pages; `before`: "you paused", "the stop".

    "33 emails canceled — they will not be sent. 2 had already been sent before you paused; they cannot be
    recalled." Nothing sent is ever said to be undone.
    """
    said = []
    if canceled or not (in_flight or submitted):
        said.append(f"{_emails(canceled)} canceled — {'it' if canceled == 1 else 'they'} will not be sent."
                    if canceled else "No email was waiting to be sent: nothing was canceled.")
    if in_flight:
        said.append(f"{in_flight} {'was' if in_flight == 1 else 'were'} being handed to the mail server at that "
                    f"moment; {'it' if in_flight == 1 else 'they'} cannot be recalled.")
    if submitted:
        said.append(f"{submitted} had already been sent before {before}; "
                    f"{'it' if submitted == 1 else 'they'} cannot be recalled.")
    return said


def step_summary_words(position: int, canceled: int, in_flight: int, submitted: int) -> str:
    """One step of a pause or stop: "Step 2: 33 canceled, 2 already sent"."""
    parts = [f"{canceled} canceled" if canceled else "",
             f"{in_flight} being handed off" if in_flight else "",
             f"{submitted} already sent" if submitted else ""]
    return f"Step {position}: " + ", ".join(p for p in parts if p)


def when_words(moment: datetime | None) -> str:
    """A moment for people: "Thu 3 Dec 15:42 UTC" (the millisecond stamp stays behind "details")."""
    return f"{moment:%a %-d %b %H:%M} UTC" if moment is not None else ""


def stop_summary_text(summary: StopSummary, *, what: str = "") -> str:
    """A stop or pause in one line, for messages, commands and notes: '<what>: N enrollments stopped; ...'."""
    parts = []
    if summary.enrollments:
        parts.append(f"{summary.enrollments} enrollment{'' if summary.enrollments == 1 else 's'} stopped or paused")
    parts += stop_summary_lines(summary)
    text = "; ".join(parts) + "."
    return f"{what}: {text}" if what else text


# --- plain words: reason codes as sentences, durations as "3 days" ------------------------------------------------

def reason_sentence(code: str) -> str:
    """A reason code (`enrollment_paused`) as a sentence ("The enrollment was paused."): `sequences.reasons`."""
    return reasons.words(code)


_UNITS = (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def duration_words(seconds: int) -> str:
    """259200 -> "3 days"; 93600 -> "1 day 2 hours"; 0 -> "no wait". Exact: every unit that is not zero."""
    seconds = int(seconds)
    if seconds <= 0:
        return "no wait"
    parts = []
    for name, size in _UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count} {name}{'' if count == 1 else 's'}")
    return " ".join(parts)
