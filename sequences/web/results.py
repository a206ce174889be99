"""Results: per-step counts and rates on a sequence page, per-sequence numbers on the dashboard.

A fixed number of grouped queries per page, whatever the number of steps or
sequences: one over the send jobs, one over the stopped enrollments.

What counts:
- sent: jobs submitted to the mail server or provider (a provider's confirmed cancel is not a send);
- replied / bounced / unsubscribed / complained: enrollments stopped for that reason, counted at the last
  step that reached the mail server before the stop (a hard bounce at RCPT counts at its own step);
- canceled by the final check: jobs the last check before the hand-off canceled (its timeline event says so).
Tests sent to an operator create no job and appear nowhere here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Q, Subquery

from ..models import Enrollment, ProviderCancel, SendJob, Sequence, TimelineEvent
from ..timeline import Event

S = SendJob.State
R = Enrollment.StopReason
SENT = Q(state__in=(S.SUBMITTED, S.ACCEPTED)) & ~Q(provider_cancel_status=ProviderCancel.CONFIRMED)
REACHED_SERVER = (S.SUBMITTED, S.ACCEPTED, S.FAILED, S.UNKNOWN)
OUTCOMES = {R.REPLIED: "replied", R.HARD_BOUNCE: "bounced", R.UNSUBSCRIBED: "unsubscribed", R.COMPLAINED: "complained"}
COLUMNS = {
    "sent": "Sent",
    "replied": "Replied",
    "bounced": "Bounced",
    "unsubscribed": "Unsubscribed",
    "complained": "Complained",
    "final_check": "Canceled by the final check",
}


@dataclass
class Counts:
    sent: int = 0
    replied: int = 0
    bounced: int = 0
    unsubscribed: int = 0
    complained: int = 0
    final_check: int = 0  # canceled by the final check
    cells: list[tuple[str, int, str]] = field(default_factory=list)  # (column, count, rate) per column

    def finish(self) -> Counts:
        self.cells = [
            (label, getattr(self, name), _rate(getattr(self, name), self.sent) if name != "sent" else "")
            for name, label in COLUMNS.items()
        ]
        return self


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
        )
    }


def _outcomes(enrollments, key: str) -> list[tuple]:
    """(key, outcome column, n) for stopped enrollments, key being e.g. the step they last reached."""
    rows = (
        enrollments.filter(status=Enrollment.Status.STOPPED, stop_reason__in=list(OUTCOMES))
        .values(key, "stop_reason")
        .annotate(n=Count("id"))
        .values_list(key, "stop_reason", "n")
    )
    return [(k, OUTCOMES[reason], n) for k, reason, n in rows]


def step_results(sequence: Sequence) -> list[tuple[int, Counts]]:
    """(step position, counts) for every step of the sequence, in order."""
    positions = list(sequence.steps.order_by("position").values_list("position", flat=True))
    counts = {p: Counts() for p in positions}
    for position, row in _job_counts(SendJob.objects.filter(step__sequence=sequence), "step__position").items():
        if position in counts:
            counts[position].sent, counts[position].final_check = row["sent"], row["final_check"]
    last_reached = (
        SendJob.objects.filter(enrollment=OuterRef("pk"), state__in=REACHED_SERVER)
        .order_by("-step__position")
        .values("step__position")[:1]
    )
    stopped = Enrollment.objects.filter(sequence=sequence).annotate(at_step=Subquery(last_reached))
    for position, column, n in _outcomes(stopped, "at_step"):
        if position in counts:
            setattr(counts[position], column, getattr(counts[position], column) + n)
    return [(p, c.finish()) for p, c in counts.items()]


def sequence_results(limit: int = 20) -> list[tuple[Sequence, Counts]]:
    """The dashboard's per-sequence numbers, for the first *limit* sequences by name."""
    sequences = list(Sequence.objects.order_by("name")[:limit])
    ids = [s.pk for s in sequences]
    counts = {pk: Counts() for pk in ids}
    for pk, row in _job_counts(SendJob.objects.filter(step__sequence_id__in=ids), "step__sequence_id").items():
        counts[pk].sent, counts[pk].final_check = row["sent"], row["final_check"]
    for pk, column, n in _outcomes(Enrollment.objects.filter(sequence_id__in=ids), "sequence_id"):
        setattr(counts[pk], column, getattr(counts[pk], column) + n)
    return [(s, counts[s.pk].finish()) for s in sequences]
