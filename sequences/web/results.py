"""Results: per-step counts and rates on a sequence page, per-sequence numbers on the dashboard.

A fixed number of grouped queries per page, whatever the number of steps or
sequences: one over the send jobs, one over the stopped or categorized enrollments.

What counts:
- sent: jobs submitted to the mail server or provider (a provider's confirmed cancel is not a send);
- replied / bounced / unsubscribed / complained: enrollments stopped for that reason, counted at the last
  step that reached the mail server before the stop (a hard bounce at RCPT counts at its own step);
- interested / meeting booked: conversations of the replies inbox (inbound.models.Conversation, read here through
  its relation to the enrollment, never imported) in that category, the operator's choice first, counted where
  the replies are;
- canceled by the final check: jobs the last check before the hand-off canceled (its timeline event says so);
- failed: jobs that could not be sent (refused, or could not be prepared) and were not retried since;
- held: emails waiting on a hold, not on their time: out of office, a mailbox that cannot read its replies
  (the last move of the job back to scheduled says so), or a mailbox that cannot send (the job's error).
Failed and held link to the list of those people (`FAILED`, `HELD`: the same filters for counts and list).
Tests sent to an operator create no job and appear nowhere here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.urls import reverse

from ..models import Enrollment, ProviderCancel, SendJob, Sequence, TimelineEvent
from ..services.sending import HELD as MAILBOX_HELD
from ..timeline import Event
from .hold_words import TO_SCHEDULED

S = SendJob.State
R = Enrollment.StopReason
SENT = Q(state__in=(S.SUBMITTED, S.ACCEPTED)) & ~Q(provider_cancel_status=ProviderCancel.CONFIRMED)
REACHED_SERVER = (S.SUBMITTED, S.ACCEPTED, S.FAILED, S.UNKNOWN)
OUTCOMES = {R.REPLIED: "replied", R.HARD_BOUNCE: "bounced", R.UNSUBSCRIBED: "unsubscribed", R.COMPLAINED: "complained"}
COLUMNS = {
    "sent": "Sent",
    "replied": "Replied",
    "interested": "Interested",
    "meeting": "Meeting booked",
    "bounced": "Bounced",
    "unsubscribed": "Unsubscribed",
    "complained": "Complained",
    "final_check": "Canceled by the final check",
    "failed": "Failed",
    "held": "Held",
}
LISTED = ("failed", "held")  # columns whose number links to the people it counts


@dataclass
class Counts:
    sent: int = 0
    replied: int = 0
    interested: int = 0  # conversations of the replies inbox in that category (chosen, or else suggested)
    meeting: int = 0
    bounced: int = 0
    unsubscribed: int = 0
    complained: int = 0
    final_check: int = 0  # canceled by the final check
    failed: int = 0
    held: int = 0
    # (column, count, rate, link to the people counted) per column
    cells: list[tuple[str, int, str, str]] = field(default_factory=list)

    def finish(self, *, sequence_id: int, step: int | None = None) -> Counts:
        self.cells = []
        for name, label in COLUMNS.items():
            n = getattr(self, name)
            rate = "" if name in ("sent", *LISTED) else _rate(n, self.sent)
            self.cells.append((label, n, rate, people_link(sequence_id, name, step) if name in LISTED and n else ""))
        return self


def people_link(sequence_id: int, show: str, step: int | None = None) -> str:
    query = f"?show={show}" + (f"&step={step}" if step is not None else "")
    return reverse("sequence_people", args=[sequence_id]) + query


def _held_by_event():
    """The job's last move back to scheduled was an out-of-office hold or a hold for the reply view."""
    last = (TimelineEvent.objects.filter(job=OuterRef(OuterRef("pk")), kind__in=TO_SCHEDULED)
            .order_by("-at", "-id").values("pk")[:1])
    return Exists(TimelineEvent.objects.filter(pk=Subquery(last)).filter(
        Q(kind=Event.JOB_HELD_OUT_OF_OFFICE) | Q(kind=Event.JOB_DEFERRED, data__reason="reply_view")))


def failed_q() -> Q:
    """Failed jobs not retried since (no later job for the same step of the same enrollment)."""
    later = SendJob.objects.filter(enrollment=OuterRef("enrollment"), step=OuterRef("step"), pk__gt=OuterRef("pk"))
    return Q(state=S.FAILED) & ~Q(Exists(later))


def held_q() -> Q:
    return Q(state=S.SCHEDULED) & (Q(error__startswith=MAILBOX_HELD) | Q(_held_by_event()))


def _rate(n: int, sent: int) -> str:
    return f"{100 * n / sent:.1f}%" if sent else "—"


def _final_check_cancel():
    return Exists(TimelineEvent.objects.filter(job=OuterRef("pk"), kind=Event.JOB_CANCELED, data__final_check=True))


def _job_counts(jobs, key: str) -> dict:
    return {
        row[key]: row
        for row in jobs.values(key).annotate(
            sent=Count("id", filter=SENT),
            final_check=Count("id", filter=Q(state=S.CANCELED) & Q(_final_check_cancel())),
            failed=Count("id", filter=failed_q()),
            held=Count("id", filter=held_q()),
        )
    }


CATEGORY_COLUMNS = ("interested", "meeting")  # the replies inbox's category values, as the columns are named


def _outcomes(enrollments, key: str) -> list[tuple]:
    """(key, column, n): stopped enrollments by outcome, and enrollments whose conversation (the replies inbox) is
    in a category of CATEGORY_COLUMNS; key being e.g. the step they last reached. One grouped query."""
    rows = (
        enrollments.filter(Q(status=Enrollment.Status.STOPPED, stop_reason__in=list(OUTCOMES))
                           | Q(conversation__category__in=CATEGORY_COLUMNS))
        .values(key, "status", "stop_reason", "conversation__category")
        .annotate(n=Count("id"))
        .values_list(key, "status", "stop_reason", "conversation__category", "n")
    )
    found = []
    for k, status, reason, category, n in rows:
        if status == Enrollment.Status.STOPPED and reason in OUTCOMES:
            found.append((k, OUTCOMES[reason], n))
        if category in CATEGORY_COLUMNS:
            found.append((k, category, n))
    return found


def step_results(sequence: Sequence) -> list[tuple[int, Counts]]:
    """(step position, counts) for every step of the sequence, in order."""
    positions = list(sequence.steps.order_by("position").values_list("position", flat=True))
    counts = {p: Counts() for p in positions}
    for position, row in _job_counts(SendJob.objects.filter(step__sequence=sequence), "step__position").items():
        if position in counts:
            _take(counts[position], row)
    last_reached = (
        SendJob.objects.filter(enrollment=OuterRef("pk"), state__in=REACHED_SERVER)
        .order_by("-step__position")
        .values("step__position")[:1]
    )
    stopped = Enrollment.objects.filter(sequence=sequence).annotate(at_step=Subquery(last_reached))
    for position, column, n in _outcomes(stopped, "at_step"):
        if position in counts:
            setattr(counts[position], column, getattr(counts[position], column) + n)
    return [(p, c.finish(sequence_id=sequence.pk, step=p)) for p, c in counts.items()]


def sequence_results(limit: int = 20) -> list[tuple[Sequence, Counts]]:
    """The dashboard's per-sequence numbers, for the first *limit* sequences by name."""
    sequences = list(Sequence.objects.order_by("name")[:limit])
    ids = [s.pk for s in sequences]
    counts = {pk: Counts() for pk in ids}
    for pk, row in _job_counts(SendJob.objects.filter(step__sequence_id__in=ids), "step__sequence_id").items():
        _take(counts[pk], row)
    for pk, column, n in _outcomes(Enrollment.objects.filter(sequence_id__in=ids), "sequence_id"):
        setattr(counts[pk], column, getattr(counts[pk], column) + n)
    return [(s, counts[s.pk].finish(sequence_id=s.pk)) for s in sequences]


def _take(counts: Counts, row: dict) -> None:
    for name in ("sent", "final_check", "failed", "held"):
        setattr(counts, name, row[name])


def unhandled_replies() -> int:
    """Conversations of the replies inbox no operator has handled yet (through the enrollment's relation)."""
    return Enrollment.objects.filter(conversation__handled=False).count()
