"""Follow-ups that crossed a reply, said plainly on the conversation and the enrollment, counted in the results,
and the note that excuses one: one click, never automatically.

Which message crossed which stop is `sequences.crossing`'s one definition, read from the same record as the send
ledger (`sequences.ledger`): the job's own times, the first stop or pause of its enrollment committed after its
final check, and the arrival (IMAP INTERNALDATE) of the reply that stop names ("inbound:<id>"). So the ledger,
the pages and the results never disagree about a message.

Cost: the candidates are read through indexed columns (the person's or the enrollment's jobs; for the results,
the jobs that left of the enrollments a reply stopped, whose final check came before that stop), then, a page of
PAGE at a time, the stops of their enrollments and the replies those name: two more queries per page.

The note is an answer (`answer.answer_send`): from the mailbox that received the reply, threaded on it, its
words the sequence's `crossed_note` and the operator's name. Offered only for a reply a follow-up crossed, and
not again once one was sent (or may have been: outcome unknown).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import F, Q, QuerySet

from sequences.crossing import STOPPING, Crossed, crossed, first_stop_after
from sequences.models import Enrollment, ProviderCancel, SendJob, TimelineEvent
from sequences.services.common import ServiceError
from sequences.timeline import Event

from ..models import Answer, Conversation, InboundMessage
from .answer import answer_send
from .selectors import conversation_replies

S = SendJob.State
PAGE = 500
# A message that left (`sequences.states.job_left`): submitted or accepted, not canceled at the provider.
LEFT = Q(state__in=(S.SUBMITTED, S.ACCEPTED)) & ~Q(provider_cancel_status=ProviderCancel.CONFIRMED)
REPLIES = (Enrollment.StopReason.REPLIED, Enrollment.StopReason.COLLEAGUE_REPLIED)
NOTE = "crossed"  # the answer event's `note` for the crossed note
NOTE_STATES = (Answer.State.SUBMITTED, Answer.State.UNKNOWN)  # sent, or may have been


@dataclass(frozen=True)
class Crossing:
    """A message of ours that crossed a stop. Times: the database clock's, except `received_at` (INTERNALDATE)."""

    job_id: int
    enrollment_id: int
    step_id: int
    sequence: str
    step: int
    how: Crossed
    authorized_at: datetime
    left_at: datetime | None  # submitted (None: still being handed off)
    stop_at: datetime
    stop_reason: str
    inbound_id: int | None  # the reply the stop names, if one caused it
    received_at: datetime | None  # that reply's arrival in the mailbox

    @property
    def words(self) -> str:
        """"Our follow-up crossed this reply — it left at 10:02:14, the reply reached the inbox at 10:02:11"."""
        left = _clock(self.left_at) if self.left_at else "(still being handed off)"
        if self.received_at is not None:
            return (f"Our follow-up crossed this reply — it left at {left}, the reply reached the inbox at "
                    f"{_clock(self.received_at)}")
        return f"Our follow-up crossed the stop — it left at {left}, the stop was committed at {_clock(self.stop_at)}"

    @property
    def detail(self) -> str:
        """The record behind the sentence, to the millisecond."""
        said = (f"Step {self.step} of {self.sequence} passed the final check at {_stamp(self.authorized_at)}"
                f"{f' and was submitted at {_stamp(self.left_at)}' if self.left_at else ''}; the stop was committed "
                f"at {_stamp(self.stop_at)}")
        if self.how == Crossed.WHILE_HANDED_OFF:
            said += ", while it was being handed off"
        return said + ". Already submitted: it cannot be recalled."


def _clock(moment: datetime) -> str:
    return moment.strftime("%H:%M:%S")


def _stamp(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC" if moment else "?"


def _inbound_id(data: dict[str, Any]) -> int | None:
    source = str(data.get("source", ""))
    return int(source[8:]) if source.startswith("inbound:") and source[8:].isdigit() else None


@dataclass(frozen=True)
class _Stop:
    kind: str
    at: datetime
    data: dict[str, Any]


def crossings_of(jobs: QuerySet[SendJob]) -> list[Crossing]:
    """The crossings among `jobs` (any query of send jobs), in job order; a page at a time."""
    found: list[Crossing] = []
    candidates = jobs.filter(LEFT, authorized_at__isnull=False).select_related("step", "enrollment__sequence")
    after = 0
    while True:
        page = list(candidates.filter(pk__gt=after).order_by("pk")[:PAGE])
        found += _page_crossings(page)
        if len(page) < PAGE:
            return found
        after = page[-1].pk


def _page_crossings(jobs: list[SendJob]) -> list[Crossing]:
    if not jobs:
        return []
    stops: dict[int, list[_Stop]] = defaultdict(list)
    # The enrollments of jobs the caller's (workspace-filtered) query found: no filter of the events' manager again.
    events = (TimelineEvent._base_manager.filter(enrollment_id__in={j.enrollment_id for j in jobs}, kind__in=STOPPING)
              .order_by("at", "id").values_list("enrollment_id", "kind", "at", "data"))
    for enrollment_id, kind, at, data in events:
        stops[enrollment_id].append(_Stop(kind, at, data or {}))
    first = {j.pk: first_stop_after(stops.get(j.enrollment_id, ()), j.authorized_at) for j in jobs}
    named = {_inbound_id(stop.data) for stop in first.values() if stop is not None} - {None}
    received = dict(InboundMessage.objects.filter(pk__in=named).values_list("pk", "internaldate")) if named else {}
    found = []
    for job in jobs:
        stop = first[job.pk]
        if stop is None:
            continue
        inbound_id = _inbound_id(stop.data)
        arrived = received.get(inbound_id)
        how = crossed(authorized_at=job.authorized_at, submitted_at=job.submitted_at, stop_at=stop.at,
                      received_at=arrived)
        if how is not None:
            found.append(Crossing(job_id=job.pk, enrollment_id=job.enrollment_id, step_id=job.step_id,
                                  sequence=job.enrollment.sequence.name, step=job.step.position, how=how,
                                  authorized_at=job.authorized_at, left_at=job.submitted_at, stop_at=stop.at,
                                  stop_reason=str(stop.data.get("reason", "")), inbound_id=inbound_id,
                                  received_at=arrived))
    return found


def enrollment_crossings(enrollment_id: int) -> list[Crossing]:
    """The enrollment's messages that crossed a stop (the enrollment page)."""
    return crossings_of(SendJob.objects.filter(enrollment_id=enrollment_id))


def reply_crossings(conversation: Conversation) -> dict[int, list[Crossing]]:
    """{reply id: the person's messages that crossed it}, for the conversation's replies. A reply stops the person
    in every sequence, so their messages in every enrollment are read (the contact's enrollments: an index)."""
    replies = set(conversation_replies(conversation).values_list("pk", flat=True))
    found: dict[int, list[Crossing]] = defaultdict(list)
    for crossing in crossings_of(SendJob.objects.filter(enrollment__contact_id=conversation.contact_id)):
        if crossing.inbound_id in replies:
            found[crossing.inbound_id].append(crossing)
    return dict(found)


def crossed_counts(steps: QuerySet) -> Counter:
    """{step id: messages that crossed a reply} for `steps` (a query of Step): the jobs that left of enrollments a
    reply stopped, whose final check came before that stop, measured as everywhere else."""
    # From the few people a reply stopped (the enrollments' (sequence, status) index), never a join over every job
    # of the steps: the sequence page and the dashboard's count read this.
    stopped = list(Enrollment.objects.filter(sequence_id__in=steps.values("sequence_id"),
                                             status=Enrollment.Status.STOPPED, stop_reason__in=REPLIES,
                                             stopped_at__isnull=False).values_list("pk", flat=True))
    if not stopped:
        return Counter()
    jobs = SendJob.objects.filter(enrollment_id__in=stopped, step__in=steps.values("pk"),
                                  authorized_at__lt=F("enrollment__stopped_at"))
    return Counter(c.step_id for c in crossings_of(jobs) if c.inbound_id is not None)


# --- the note ----------------------------------------------------------------------------------------


def crossed_notes_sent(conversation: Conversation) -> dict[int, int]:
    """{reply id: the answer} for each reply a crossed note was sent to (or may have been): the answers' events,
    by the person's address (an index)."""
    events = TimelineEvent.objects.filter(email=conversation.contact.email, kind=Event.REPLY_ANSWERED,
                                          data__note=NOTE).values_list("data", flat=True)
    sent = {}
    for data in events:
        if data.get("conversation") == conversation.pk and data.get("state") in NOTE_STATES:
            sent[data.get("inbound")] = data.get("answer")
    return sent


def crossed_note_body(conversation: Conversation, author_name: str) -> str:
    """The sequence's note, signed with the operator's name."""
    note = conversation.sequence.crossed_note.strip()
    return f"{note}\n\n{author_name}" if author_name.strip() else note


def crossed_note_send(*, conversation_id: int, reply_id: int, actor: str, author_name: str = "",
                      confirm_suppressed: bool = False) -> Answer:
    """Send the sequence's crossed note as an answer to the reply a follow-up crossed (`answer.answer_send`: its
    checks, its three short transactions). ServiceError when there is nothing to excuse or it was sent already."""
    conversation = (Conversation.objects.select_related("sequence", "contact").filter(pk=conversation_id).first())
    if conversation is None:
        raise ServiceError(f"conversation {conversation_id} does not exist")
    if not reply_crossings(conversation).get(reply_id):
        raise ServiceError("no follow-up of ours crossed this reply: there is nothing to excuse")
    if reply_id in crossed_notes_sent(conversation):
        raise ServiceError("the note was sent for this reply already (or may have been: see the conversation)")
    return answer_send(conversation_id=conversation_id, body=crossed_note_body(conversation, author_name),
                       actor=actor, author_name=author_name, confirm_suppressed=confirm_suppressed,
                       reply_id=reply_id, note=NOTE)
