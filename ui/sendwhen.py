"""What will send when: the next send time of each live job, and why it waits, in sentences.

Display only: the final check decides at send time (`services.sending`), and
nothing here is read back by it. The reasons follow its order: the sequence,
enrollment or mailbox paused, the mailbox blocked, the wait after the previous
step, the sending window, the daily cap. Queries: the jobs, the previous
steps' send times of those jobs (one query), one cap count per mailbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone

from sequences import daily_cap
from sequences.labels import duration_words, reason_sentence, stamp
from sequences.models import Enrollment, SendJob, Sequence
from sequences.reasons import Reason
from sequences.sending_mailbox import enrollment_mailbox
from sequences.states import LIVE
from sequences.window import DAYS, local_and_utc, mailbox_next_open, mailbox_window_zone

from .hold_words import Hold, holds_of, mailbox_words

S = SendJob.State
E = Enrollment.Status


@dataclass
class SendWhen:
    job: SendJob
    when: str  # "2026-12-02 09:00:00.000 UTC", or "now"
    reasons: list[str] = field(default_factory=list)
    details: str = ""  # worker id, version: behind a "details" toggle


def window_words(mailbox, zone: str = "") -> str:
    """ "Mon, Tue 09:00–17:00 Europe/Berlin", or "any time" for a mailbox without a window."""
    days = "every day"
    if mailbox.window_days.strip():
        days = ", ".join(
            DAYS[i].capitalize()
            for i in sorted({DAYS.index(d.strip().lower()[:3]) for d in mailbox.window_days.split(",")})
        )
    if not mailbox.window_start and not mailbox.window_days.strip():
        return "any time"
    hours = f" {mailbox.window_start:%H:%M}–{mailbox.window_end:%H:%M}" if mailbox.window_start else ""
    return f"{days}{hours} {zone or mailbox.window_timezone}"


def _cap_state(mailbox, now: datetime) -> tuple[int, int, datetime | None]:
    """(messages counted today, today's limit (the daily cap, or the ramp's figure), when the next day's slots
    open): the final check's own counter."""
    day = daily_cap.cap_day(mailbox, now)
    return daily_cap.sent_on(mailbox, day), daily_cap.day_limit(mailbox, day), daily_cap.day_end(mailbox, day)


def _held_by(job: SendJob) -> list[str]:
    """Reasons that hold every job of the enrollment, whatever its time."""
    enrollment, sequence = job.enrollment, job.enrollment.sequence
    mailbox = enrollment_mailbox(enrollment)
    held = []
    if sequence.status == Sequence.Status.DRAFT:
        held.append(reason_sentence(Reason.SEQUENCE_DRAFT))
    elif sequence.status != Sequence.Status.ACTIVE:
        held.append(reason_sentence(Reason.SEQUENCE_PAUSED) + " Nothing of it is sent until it is resumed.")
    if enrollment.status == E.PAUSED:
        held.append(reason_sentence(Reason.ENROLLMENT_PAUSED) + " Its emails wait until it is resumed.")
    on_hold = mailbox_words(mailbox)
    if on_hold:
        held.append(on_hold + ".")
    return held


def send_when_rows(jobs, *, limit: int = 50) -> tuple[list[SendWhen], int]:
    """(rows for the first *limit* live jobs by send time, how many live jobs there are in all)."""
    live = jobs.filter(state__in=LIVE)
    total = live.count()
    page = list(
        live.select_related(
            "step", "enrollment__contact", "enrollment__mailbox", "enrollment__sequence__mailbox"
        ).order_by("scheduled_at", "id")[:limit]
    )
    previous = {
        (e, p): at
        for e, p, at in SendJob.objects.filter(
            enrollment_id__in={j.enrollment_id for j in page},
            state__in=(S.SUBMITTED, S.ACCEPTED),
        ).values_list("enrollment_id", "step__position", "submitted_at")
    }
    now = timezone.now()
    caps = {}
    rows = []
    holds = holds_of(page)
    for job in page:
        mailbox = enrollment_mailbox(job.enrollment)
        if mailbox.pk not in caps:
            caps[mailbox.pk] = _cap_state(mailbox, now)
        rows.append(
            _row(
                job, now=now, sent_before=previous.get((job.enrollment_id, job.step.position - 1)),
                cap=caps[mailbox.pk], hold=holds.get(job.pk),
            )
        )
    return rows, total


SHOWN = 3  # rows of "What will send when" a page shows open, the soonest; the others are folded under them


def send_when_parts(rows: list[SendWhen]) -> list[tuple[list[SendWhen], bool]]:
    """The rows as the pages show them: (the soonest SHOWN, open) and (the rest, folded) when there are more.

    With 50 people on their way the list alone was metres long on a phone; folded, every row is one click away.
    """
    return [(rows[:SHOWN], False)] + ([(rows[SHOWN:], True)] if len(rows) > SHOWN else [])


def next_send_words(job: SendJob, rows: list[SendWhen]) -> str:
    """The next send time of `job` in the words of its row in "What will send when" ("on hold", "now" or a time),
    so a page that shows both says one time; '' when it has no row there."""
    return next((row.when for row in rows if row.job.pk == job.pk), "")


def scheduled_labels_agree(job_rows: list, rows: list[SendWhen]) -> list:
    """A scheduled job's label gives the time its "What will send when" row gives (the window, the daily cap and
    the minimum gap counted), not its bare scheduled time."""
    when = {row.job.pk: row.when for row in rows}
    words = {"on hold": "On hold", "now": "Due now"}
    for job_row in job_rows:
        moment = when.get(job_row.job.pk)
        if job_row.job.state == S.SCHEDULED and moment:
            job_row.label = f"{words.get(moment) or f'Next send {moment}'} — not sent yet"
    return job_rows


def _row(job: SendJob, *, now: datetime, sent_before: datetime | None,
         cap: tuple[int, int, datetime | None], hold: Hold | None = None) -> SendWhen:
    details = f"job {job.pk}, version {job.version}" + (f", worker {job.worker_id}" if job.worker_id else "")
    if job.state == S.QUEUED:
        return SendWhen(job, "now", ["Queued: a worker sends it in a moment, after the final check."], details)
    if job.state == S.CLAIMED:
        return SendWhen(
            job, "now", ["A worker is preparing it now; the final check comes right before it leaves."], details
        )
    if job.state == S.AUTHORIZED:
        return SendWhen(
            job, "now", ["It passed the final check and is being handed to the mail server — cannot recall."], details
        )
    held = _held_by(job)
    reasons = list(held) + ([hold.text + "."] if hold else [])
    due = max(job.scheduled_at, now)
    step = job.step
    if sent_before and step.wait_seconds and sent_before + timedelta(seconds=step.wait_seconds) > now:
        reasons.append(
            f"Waits {duration_words(step.wait_seconds)} after step {step.position - 1} was sent ({stamp(sent_before)})."
        )
    elif job.scheduled_at > now and job.error:
        reasons.append(f"A retry after a temporary error: {job.error}")
    mailbox = enrollment_mailbox(job.enrollment)
    contact_zone = job.enrollment.contact.timezone
    opening = mailbox_next_open(due, mailbox=mailbox, contact_zone=contact_zone)
    if opening is not None:
        zone = mailbox_window_zone(mailbox, contact_zone)
        reasons.append(
            f"{reason_sentence(Reason.OUTSIDE_SENDING_WINDOW)} ({window_words(mailbox, zone)}): it waits until the "
            "window opens."
        )
        due = opening
    sent, limit, free = cap
    if sent >= limit and free is not None:
        ramp = " on its ramp-up" if limit < mailbox.daily_cap else ""
        reasons.append(
            f"{reason_sentence(Reason.DAILY_CAP_REACHED)} ({sent} of {limit} today{ramp}): "
            f"the next slot opens at {stamp(free)}."
        )
        due = max(due, free)
    gap = daily_cap.gap_wait(mailbox, due)
    if gap is not None:
        reasons.append(f"The mailbox keeps at least {duration_words(mailbox.min_gap)} between two messages (its "
                       f"minimum gap): the next may leave at {stamp(gap)}.")
        due = gap
    if not reasons:
        reasons.append(
            "Due now: the next dispatcher pass sends it, after the final check."
            if due <= now
            else f"Scheduled for {stamp(due)}."
        )
    if held:
        when = "on hold"
    elif due <= now:
        when = "now"
    else:  # the contact's local time first, then UTC
        local, utc = local_and_utc(due, mailbox_window_zone(mailbox, contact_zone))
        when = utc if local == utc else f"{local} ({utc})"
    return SendWhen(job, when, reasons, details)


def idle_reason(*, sequence: Sequence, enrollment: Enrollment | None = None) -> str:
    """Why nothing is on its way, when nothing is: the pause or the end that explains it, or ''."""
    if enrollment is not None and enrollment.status == E.COMPLETED:
        return "this person got every step"
    if enrollment is not None and enrollment.status == E.STOPPED:
        return f"stopped — {reason_sentence(enrollment.stop_reason).rstrip('.').lower()}"
    if sequence.status == Sequence.Status.DRAFT:
        return "the sequence is a draft: nothing is sent until it is launched"
    if sequence.status != Sequence.Status.ACTIVE:
        return "the sequence is paused; resuming it schedules the next step of each active person"
    if enrollment is not None and enrollment.status == E.PAUSED:
        return "the enrollment is paused; resuming it schedules its next step"
    mailbox = enrollment_mailbox(enrollment) if enrollment is not None else sequence.mailbox
    if mailbox.paused:
        return "the mailbox is paused; resuming it schedules the next steps"
    return ""
