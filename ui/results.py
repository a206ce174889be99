"""Results: per-step counts and rates on a sequence page, per-sequence numbers on the dashboard.

A fixed number of queries per page, whatever the number of steps or sequences,
each reading only what it counts through an index (sequences/models.py: the jobs
by step and state, and partial indexes for the rare rows: the final check's
cancels, the holds). The dashboard reads these numbers as counted once a minute
(dashboard_counts); a sequence's own page counts them as it is opened.

What counts:
- sent: jobs submitted to the mail server or provider (a provider's confirmed cancel is not a send);
- replied / bounced / unsubscribed / complained: enrollments stopped for that reason, counted at the last
  step that reached the mail server before the stop (a hard bounce at RCPT counts at its own step);
- interested / meeting booked: conversations of the replies inbox (inbound.models.Conversation, read here through
  its relation to the enrollment) in that category, the operator's choice first, counted where
  the replies are;
- canceled by the final check: jobs the last check before the hand-off canceled (its timeline event says so);
- crossed a reply: messages that left while the person's reply was on its way (`inbound.replies.crossed`, the
  send ledger's definition), counted at their own step;
- failed: jobs that could not be sent (refused, or could not be prepared) and were not retried since;
- held: emails waiting on a hold, not on their time: out of office, a mailbox that cannot read its replies
  (the last move of the job back to scheduled says so), or a mailbox that cannot send (the job's error).
Failed and held link to the list of those people (`FAILED`, `HELD`: the same filters for counts and list).
Tests sent to an operator create no job and appear nowhere here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Exists, Max, OuterRef, Q
from django.urls import reverse

from db.clock import db_now
from inbound.data_requests import data_requests_open
from inbound.kinds import Category
from inbound.replies.crossed import crossed_counts
from sequences.models import (
    FINAL_CHECK_CANCEL,
    HELD_BY_MAILBOX,
    HOLD,
    Enrollment,
    ProviderCancel,
    SendJob,
    Sequence,
    Step,
    TimelineEvent,
)
from sequences.selectors import optouts_waiting

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
    "crossed": "Crossed a reply",
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
    crossed: int = 0  # left while the person's reply was on its way
    failed: int = 0
    held: int = 0
    # (column, count, rate, link to the people counted) per column
    cells: list[tuple[str, int, str, str]] = field(default_factory=list)

    def numbers(self) -> dict[str, int]:
        """The counts alone (JSON, for dashboard_counts)."""
        return {name: getattr(self, name) for name in COLUMNS}

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
    """The jobs whose last move back to scheduled was a hold (out of office, or the reply view)."""
    later = TimelineEvent.objects.filter(job=OuterRef("job"), kind__in=TO_SCHEDULED).filter(
        Q(at__gt=OuterRef("at")) | Q(at=OuterRef("at"), pk__gt=OuterRef("pk")))
    return TimelineEvent.objects.filter(HOLD).filter(~Exists(later)).values("job_id")


def failed_q() -> Q:
    """Failed jobs not retried since (no later job for the same step of the same enrollment)."""
    later = SendJob.objects.filter(enrollment=OuterRef("enrollment"), step=OuterRef("step"), pk__gt=OuterRef("pk"))
    return Q(state=S.FAILED) & ~Q(Exists(later))


def _held_reasons() -> tuple[Q, Q]:
    """The two reasons a scheduled job is held rather than late, each served by its own index: its mailbox
    cannot send, or its last move back to scheduled was a hold."""
    return HELD_BY_MAILBOX, Q(state=S.SCHEDULED) & Q(pk__in=_held_by_event())


def held_q() -> Q:
    by_mailbox, by_event = _held_reasons()
    return by_mailbox | by_event


def _rate(n: int, sent: int) -> str:
    return f"{100 * n / sent:.1f}%" if sent else "—"


def _job_counts(steps) -> dict[int, dict[str, int]]:
    """{step id: {column: n}} for the job columns of *steps* (a query of Step). A query or two per column, each
    reading only what it counts: the sends from an index of (step, state), the final check's cancels and the
    holds from partial indexes, the failed jobs from the state index."""
    # *steps* is the request's workspace's (its manager filters it): the jobs need no second filter of their own,
    # which would lead PostgreSQL away from the (step, state) index.
    jobs = SendJob._base_manager.filter(step__in=steps.values("pk")).order_by()
    # Inside the jobs' own (workspace-filtered) query: the events' manager would add its workspace filter again, an
    # OR the planner cannot take to the events' partial index.
    final_checked = TimelineEvent._base_manager.filter(FINAL_CHECK_CANCEL).values("job_id")
    columns = {
        "sent": jobs.filter(SENT),
        "final_check": jobs.filter(state=S.CANCELED, pk__in=final_checked),
        "failed": jobs.filter(failed_q()),
    }
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    for name, rows in columns.items():
        for step_id, n in rows.values_list("step_id").annotate(n=Count("*")):
            counts[step_id][name] = n
    for step_id, n in crossed_counts(steps).items():
        counts[step_id]["crossed"] = n
    # Held for either of two reasons, maybe both: the union of two small sets, each read from its own index.
    held = {pair for reason in _held_reasons() for pair in jobs.filter(reason).values_list("pk", "step_id")}
    for step_id, n in Counter(step_id for _, step_id in held).items():
        counts[step_id]["held"] = n
    return counts


# The replies inbox's categories counted as columns, under their own values (the columns are named after them).
CATEGORY_COLUMNS = (Category.INTERESTED.value, Category.MEETING.value)


def _stopped_and_categorized(enrollments) -> tuple:
    """The enrollments stopped with an outcome, and those whose conversation (the replies inbox) is in a category
    of CATEGORY_COLUMNS."""
    enrollments = enrollments.order_by()
    return (enrollments.filter(status=Enrollment.Status.STOPPED, stop_reason__in=list(OUTCOMES)),
            enrollments.filter(conversation__category__in=CATEGORY_COLUMNS))


def _outcomes_by_sequence(sequences) -> list[tuple]:
    """(sequence id, column, n) for the outcome and category columns. Two grouped queries."""
    stopped, categorized = _stopped_and_categorized(Enrollment.objects.filter(sequence__in=sequences.values("pk")))
    found = [(k, OUTCOMES[reason], n)
             for k, reason, n in stopped.values_list("sequence_id", "stop_reason").annotate(n=Count("*"))]
    found += list(categorized.values_list("sequence_id", "conversation__category").annotate(n=Count("*")))
    return found


def _outcomes_by_step(sequence: Sequence) -> list[tuple]:
    """(step position, column, n) like `_outcomes_by_sequence`, each enrollment counted at the last step of theirs
    that reached the mail server (none: not counted at a step). Read as rows and counted here: one grouped query
    over the sequence's jobs finds the last steps, instead of a subquery for each enrollment."""
    stopped, categorized = _stopped_and_categorized(Enrollment.objects.filter(sequence=sequence))
    last_step = dict(
        SendJob._base_manager.filter(step__in=sequence.steps.values("pk"), state__in=REACHED_SERVER)
        .filter(Q(enrollment__in=stopped.values("pk")) | Q(enrollment__in=categorized.values("pk")))
        .order_by().values_list("enrollment_id").annotate(position=Max("step__position"))
    )
    found: Counter = Counter()
    for pk, reason in stopped.values_list("pk", "stop_reason"):
        found[last_step.get(pk), OUTCOMES[reason]] += 1
    for pk, category in categorized.values_list("pk", "conversation__category"):
        found[last_step.get(pk), category] += 1
    return [(position, column, n) for (position, column), n in found.items()]


def step_results(sequence: Sequence) -> list[tuple[int, Counts]]:
    """(step position, counts) for every step of the sequence, in order."""
    positions = dict(sequence.steps.order_by("position").values_list("pk", "position"))
    counts = {p: Counts() for p in positions.values()}
    for step_id, row in _job_counts(sequence.steps.all()).items():
        _take(counts[positions[step_id]], row)
    for position, column, n in _outcomes_by_step(sequence):
        if position in counts:
            setattr(counts[position], column, getattr(counts[position], column) + n)
    return [(p, c.finish(sequence_id=sequence.pk, step=p)) for p, c in counts.items()]


def sequence_counts(sequences) -> dict[int, Counts]:
    """{sequence id: counts} for *sequences* (a query of Sequence), counted now."""
    counts = {pk: Counts() for pk in sequences.values_list("pk", flat=True)}
    steps = Step.objects.filter(sequence__in=sequences.values("pk"))
    sequence_of = dict(steps.values_list("pk", "sequence_id"))
    for step_id, row in _job_counts(steps).items():
        _take(counts[sequence_of[step_id]], row, add=True)
    for pk, column, n in _outcomes_by_sequence(sequences):
        setattr(counts[pk], column, getattr(counts[pk], column) + n)
    return counts


def sequence_results(limit: int = 20) -> list[tuple[Sequence, Counts]]:
    """The dashboard's per-sequence numbers, for the first *limit* sequences by name, counted now."""
    sequences = list(Sequence.objects.order_by("name")[:limit])
    counts = sequence_counts(Sequence.objects.filter(pk__in=[s.pk for s in sequences]))
    return [(s, counts[s.pk].finish(sequence_id=s.pk)) for s in sequences]


def _take(counts: Counts, row: dict, add: bool = False) -> None:
    for name, n in row.items():
        setattr(counts, name, n + (getattr(counts, name) if add else 0))


def unhandled_replies() -> int:
    """Conversations of the replies inbox no operator has handled yet (the model read through its relation to the
    enrollment, never imported: the inbox's app sits above this one)."""
    return Enrollment.conversation.related.related_model.objects.filter(handled=False).count()


def reply_tasks() -> dict[str, int]:
    """The dashboard's task counts: provisional opt-outs waiting for review, open and overdue data-protection
    requests (the lists themselves are on the Replies page)."""
    open_ = data_requests_open()
    return {"optouts_to_review": optouts_waiting().count(), "data_requests_open": open_.count(),
            "data_requests_overdue": open_.filter(due_on__lt=db_now().date()).count()}
