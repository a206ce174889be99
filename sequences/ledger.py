"""The send ledger ("proof of restraint"): one row per message that was due — what left, or what held it back.

For a person, an enrollment, a sequence or a date range. Pure reads of what the pipeline and the stop paths
recorded when they decided: the job's own columns, the timeline events written in the same transactions (the
cancel with its reason and actor, the stop with what caused it, the holds, the reply's arrival) and the
suppression ledger, every time from the database clock. Nothing here decides again; where the record is
silent, the row says less, never more. Words come from `labels` (the same sentences as the pages).

Cost: the jobs are read a page of `PAGE` at a time through an indexed column (the person's enrollments, the
sequence's steps, the enrollment; for a date range the final check's time, the timeline's time of a cancel and
the due time of a waiting job), and each page's facts in at most five more queries, however many rows.

"Crossed": a message that left although its person's stop was on its way — the stop was committed while the
message was being handed off, or the reply had reached the mailbox before the message was submitted but was
committed after the final check let it go. One definition (`crossing`), shared with the replies pages and the
results. Already submitted: it cannot be recalled, and the row says so.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from django.db.models import Q

from .crossing import Crossed, crossed, first_stop_after
from .labels import job_label_and_tone, reason_sentence, stamp, when_words
from .loads import HOLD_REASONS
from .models import Enrollment, ProviderCancel, SendJob, Step, Suppression, TimelineEvent
from .reasons import Reason
from .reply_view import hand_off_words
from .sending_mailbox import enrollment_mailbox
from .spreadsheet import guard_formula
from .states import job_left
from .timeline import Event

S = SendJob.State
R = Enrollment.StopReason
PAGE = 500  # jobs read at once; each page's facts cost the same few queries
# Two clocks of one transaction (a job's canceled_at, its event's `at`) differ by microseconds: a date range
# looks for cancel events this much wider, then keeps the jobs by their own column.
SLACK = timedelta(seconds=1)
WAITING = (S.SCHEDULED, S.QUEUED, S.CLAIMED)
# The job's events the ledger reads: its cancel, its authorization (what it knew of replies), and each move back
# to scheduled (the holds, and the deferrals that say why a waiting job waits).
JOB_KINDS = (Event.JOB_CANCELED, Event.JOB_AUTHORIZED, Event.JOB_DEFERRED, Event.JOB_RETRY_SCHEDULED,
             Event.JOB_HELD, Event.JOB_HELD_OUT_OF_OFFICE)
BACK_TO_SCHEDULED = (Event.JOB_DEFERRED, Event.JOB_RETRY_SCHEDULED, Event.JOB_HELD, Event.JOB_HELD_OUT_OF_OFFICE)
ENROLLMENT_KINDS = (Event.ENROLLMENT_STOPPED, Event.ENROLLMENT_PAUSED, Event.OUT_OF_OFFICE_HOLD)
# Stops that come from the suppression ledger: the row names the entry.
SUPPRESSING = (R.UNSUBSCRIBED, R.COMPLAINED, R.HARD_BOUNCE, R.SUPPRESSED)
REPLIES = (R.REPLIED, R.COLLEAGUE_REPLIED)
PAUSES = {Reason.SEQUENCE_PAUSED: (Event.SEQUENCE_PAUSED, "sequence"),
          Reason.MAILBOX_PAUSED: (Event.MAILBOX_PAUSED, "mailbox")}


class Outcome(StrEnum):
    SENT = "sent"
    HELD_BACK = "held back"  # canceled before the hand-off (or at the provider before its send time): never sent
    WAITING = "not sent yet"
    IN_FLIGHT = "being handed off"  # authorized: past the final check, cannot recall
    FAILED = "failed"
    UNKNOWN = "outcome unknown"  # may have been sent: check the server's or provider's log


class Why(StrEnum):
    """The ledger's own reasons, beside the product's (`sequences.reasons`: cancels, stops, holds)."""

    CROSSED = "crossed"
    MAILBOX_FAILED = "mailbox_failed"  # the mailbox failed as a whole during the hand-off; the message waited
    PROVIDER_CANCELED = "provider_canceled"
    OUTCOME_UNKNOWN = "outcome_unknown"


@dataclass(frozen=True)
class LedgerRow:
    """One message that was due. Times are the database clock's, UTC."""

    contact: str
    sequence: str
    mailbox: str
    enrollment: int
    job: int
    step: int
    variant: str  # the A/B variant's name, or ""
    due_at: datetime  # when it was (or is) due: its scheduled time, moved by each hold or deferral
    outcome: str  # an Outcome
    reason: str  # a code: the cancel reason, a hold, "crossed"; "" for an ordinary send
    why: str  # the outcome and its reason in words
    decided_at: datetime | None  # the final check's commit (left), the cancel (held back), the failure; "" waiting
    handed_off_at: datetime | None = None  # submitted to the server or provider
    message_id: str = ""  # ours, once it passed the final check
    server_reply: str = ""  # the server's answer to the hand-off (or its refusal)
    provider_message_id: str = ""
    by: str = ""  # who paused or stopped it, when the record names someone
    stop_at: datetime | None = None  # when the reply, stop, pause or suppression that held it back was committed
    reply_received_at: datetime | None = None  # the reply's arrival in the mailbox (IMAP INTERNALDATE)
    suppression_entry: int | None = None  # the suppression ledger's entry that held it back
    replies_read: str = ""  # what the final check knew of the person's replies when it let the message go
    holds: str = ""  # the holds it went through before its outcome, with their times


COLUMNS = tuple(f.name for f in fields(LedgerRow))


# --- which jobs --------------------------------------------------------------------------------------------


def send_ledger_rows(*, contact_id: int | None = None, sequence_id: int | None = None,
                     enrollment_id: int | None = None, since: datetime | None = None,
                     until: datetime | None = None) -> Iterator[LedgerRow]:
    """The ledger's rows, in job order (the order they were scheduled in), read a page at a time.

    With `since`/`until` (from since, before until): the messages decided in the range (by the final check's
    commit, the cancel, the failure) and the ones still waiting that are due in it.
    """
    scope = _scope(contact_id=contact_id, sequence_id=sequence_id, enrollment_id=enrollment_id)
    dated = since is not None or until is not None
    for jobs in (_pages_in_range(scope, since, until) if dated else _pages(scope)):
        if dated:
            jobs = [job for job in jobs if _within(decided_or_due(job), since, until)]
        facts = _Facts.read(jobs)
        for job in jobs:
            yield _row(job, facts)


def decided_or_due(job: SendJob) -> datetime:
    """The moment a date range files a message under: when its fate was decided, or, still waiting, its due time."""
    if job.state == S.CANCELED:
        return job.canceled_at
    if job.state in WAITING:
        return job.scheduled_at
    return job.authorized_at or job.finished_at or job.scheduled_at


def _scope(*, contact_id: int | None, sequence_id: int | None, enrollment_id: int | None) -> Q:
    """The jobs' own indexed columns: the enrollment, the step (ids read first, each one short query)."""
    scope = Q()
    if enrollment_id is not None:
        scope &= Q(enrollment_id=enrollment_id)
    if contact_id is not None:
        enrollments = Enrollment.objects.filter(contact_id=contact_id).values_list("pk", flat=True)
        scope &= Q(enrollment_id__in=list(enrollments))
    if sequence_id is not None:
        scope &= Q(step_id__in=list(Step.objects.filter(sequence_id=sequence_id).values_list("pk", flat=True)))
    return scope


def _loaded():
    return SendJob.objects.select_related("enrollment__contact", "enrollment__mailbox", "enrollment__sequence__mailbox",
                                          "step", "variant")


def _pages(scope: Q) -> Iterator[list[SendJob]]:
    after = 0
    while True:
        page = list(_loaded().filter(scope, pk__gt=after).order_by("pk")[:PAGE])
        if page:
            yield page
        if len(page) < PAGE:
            return
        after = page[-1].pk


def _range(name: str, since: datetime | None, until: datetime | None) -> dict[str, datetime]:
    bounds = {}
    if since is not None:
        bounds[f"{name}__gte"] = since
    if until is not None:
        bounds[f"{name}__lt"] = until
    return bounds


def _pages_in_range(scope: Q, since: datetime | None, until: datetime | None) -> Iterator[list[SendJob]]:
    """Candidates by four indexed reads, each a little wider than the range (SLACK: a cancel's event and its
    column are two readings of the clock, and SQLite compares its millisecond text with a parameter's six
    decimals as text), then the jobs a page at a time; `send_ledger_rows` keeps the exact range."""
    wider = (since - SLACK if since else None, until + SLACK if until else None)
    jobs = SendJob.objects.filter(scope).order_by()
    ids = set(jobs.filter(authorized_at__isnull=False, **_range("authorized_at", *wider))
              .values_list("pk", flat=True))  # sendjob_authorized_idx
    ids |= set(jobs.filter(state=S.SCHEDULED, **_range("scheduled_at", *wider))
               .values_list("pk", flat=True))  # sendjob_due_idx
    ids |= set(jobs.filter(state__in=(S.QUEUED, S.CLAIMED), **_range("scheduled_at", *wider))
               .values_list("pk", flat=True))  # sendjob_state_lease_idx
    ended = TimelineEvent.objects.filter(kind__in=(Event.JOB_CANCELED, Event.JOB_PREPARE_FAILED),
                                         **_range("at", *wider)).values("job_id")
    ids |= set(jobs.filter(pk__in=ended).values_list("pk", flat=True))  # the timeline's `at` index
    ordered = sorted(ids)
    for start in range(0, len(ordered), PAGE):
        yield list(_loaded().filter(pk__in=ordered[start:start + PAGE]).order_by("pk"))


def _within(moment: datetime | None, since: datetime | None, until: datetime | None) -> bool:
    return moment is not None and (since is None or moment >= since) and (until is None or moment < until)


# --- what the record says of a page of jobs ----------------------------------------------------------------


@dataclass(frozen=True)
class _Ev:
    kind: str
    at: datetime
    data: dict[str, Any]


@dataclass
class _Facts:
    jobs: dict[int, list[_Ev]] = field(default_factory=dict)
    enrollments: dict[int, list[_Ev]] = field(default_factory=dict)
    replies: dict[int, _Ev] = field(default_factory=dict)  # inbound id -> its inbound_received event
    # (event, sequence or mailbox name, the workspace it was written in: None outside any)
    pauses: list[tuple[_Ev, str, int | None]] = field(default_factory=list)
    entries: dict[str, list[Suppression]] = field(default_factory=dict)  # value -> its additions, oldest first

    @classmethod
    def read(cls, jobs: list[SendJob]) -> _Facts:
        """At most five queries, each only when a job of the page needs it."""
        facts = cls()
        if not jobs:
            return facts
        facts.jobs = _grouped(TimelineEvent.objects.filter(job_id__in=[j.pk for j in jobs], kind__in=JOB_KINDS),
                              "job_id")
        canceled = [j for j in jobs if j.state == S.CANCELED]
        asked = {j.enrollment_id for j in jobs if j.enrollment.status != Enrollment.Status.ACTIVE}
        asked |= {j.enrollment_id for j in canceled}
        asked |= {j.enrollment_id for j in jobs if any(e.kind == Event.JOB_HELD_OUT_OF_OFFICE
                                                       for e in facts.jobs.get(j.pk, ()))}
        if asked:
            facts.enrollments = _grouped(TimelineEvent.objects.filter(enrollment_id__in=sorted(asked),
                                                                      kind__in=ENROLLMENT_KINDS), "enrollment_id")
        emails = sorted({j.enrollment.contact.email for j in jobs})
        if any(_inbound_id(e) for events in facts.enrollments.values() for e in events):
            # A reply stops the person everywhere; its arrival is recorded once, by address (the email index).
            arrived = TimelineEvent.objects.filter(email__in=emails, kind=Event.INBOUND_RECEIVED)
            for at, data in arrived.values_list("at", "data"):
                if isinstance((data or {}).get("inbound"), int):
                    facts.replies[data["inbound"]] = _Ev(Event.INBOUND_RECEIVED, at, data)
        if any(j.cancel_reason in PAUSES for j in canceled):
            facts.pauses = _pauses(jobs)
        if any(j.cancel_reason in SUPPRESSING for j in canceled):
            values = emails + sorted({"@" + email.rsplit("@", 1)[-1] for email in emails})
            for entry in Suppression.objects.filter(value__in=values, action=Suppression.Action.ADD).order_by("id"):
                facts.entries.setdefault(entry.value, []).append(entry)
        return facts


def _grouped(events, key: str) -> dict[int, list[_Ev]]:
    grouped: dict[int, list[_Ev]] = defaultdict(list)
    for owner, kind, at, data in events.order_by("at", "id").values_list(key, "kind", "at", "data"):
        grouped[owner].append(_Ev(kind, at, data or {}))
    return dict(grouped)


def _pauses(jobs: list[SendJob]) -> list[tuple[_Ev, str, int | None]]:
    """The pauses of the page's sequences and mailboxes (the kind index: operators' pauses are few)."""
    sequences = sorted({j.enrollment.sequence.name for j in jobs})
    mailboxes = sorted({enrollment_mailbox(j.enrollment).name for j in jobs})
    found = TimelineEvent.objects.filter(Q(kind=Event.SEQUENCE_PAUSED, data__sequence__in=sequences)
                                         | Q(kind=Event.MAILBOX_PAUSED, data__mailbox__in=mailboxes))
    return [(_Ev(kind, at, data or {}), (data or {}).get("sequence") or (data or {}).get("mailbox", ""), workspace)
            for kind, at, data, workspace in found.order_by("at", "id").values_list("kind", "at", "data",
                                                                                     "workspace_id")]


def _inbound_id(event: _Ev) -> int | None:
    """The inbound message a stop names as its source ("inbound:42"), or None."""
    source = str(event.data.get("source", ""))
    return int(source[8:]) if source.startswith("inbound:") and source[8:].isdigit() else None


def _cancel(facts: _Facts, job: SendJob) -> dict[str, Any]:
    """The data of the job's cancel event (reason, actor, final_check), or {}."""
    return next((e.data for e in reversed(facts.jobs.get(job.pk, ())) if e.kind == Event.JOB_CANCELED), {})


def _closest(events: Iterable[_Ev], kind: str, moment: datetime, reason: str = "") -> _Ev | None:
    """The event of `kind` nearest to `moment` (a stop cancels its jobs just before its own event; a final check
    refuses a job after it), preferring one with the same reason."""
    found = [e for e in events if e.kind == kind]
    same = [e for e in found if reason and e.data.get("reason") == reason]
    return min(same or found, key=lambda e: abs(e.at - moment), default=None)


def _entry(facts: _Facts, email: str, before: datetime) -> Suppression | None:
    """The suppression entry (the address's own or its domain's) in force when the stop was committed."""
    candidates = [e for value in (email, "@" + email.rsplit("@", 1)[-1]) for e in facts.entries.get(value, ())
                  if e.created_at <= before + SLACK]
    return max(candidates, key=lambda e: e.created_at, default=None)


# --- one row -----------------------------------------------------------------------------------------------


def _row(job: SendJob, facts: _Facts) -> LedgerRow:
    enrollment = job.enrollment
    events = facts.jobs.get(job.pk, [])
    base: dict[str, Any] = dict(
        contact=enrollment.contact.email, sequence=enrollment.sequence.name,
        mailbox=enrollment_mailbox(enrollment).name, enrollment=enrollment.pk, job=job.pk, step=job.step.position,
        variant=job.variant.name if job.variant else "",
        due_at=job.scheduled_at, holds=_holds_words(job, events, facts),
    )
    if job.state == S.CANCELED or job.provider_cancel_status == ProviderCancel.CONFIRMED:
        return LedgerRow(**base, **_held_back(job, facts))
    if job.state in WAITING:
        return LedgerRow(**base, **_waiting(job, events, facts))
    # Our Message-ID once it passed the final check (before that it names nothing that left).
    message_id = job.message_id if job.authorized_at is not None else ""
    passed = dict(decided_at=job.authorized_at, message_id=message_id, handed_off_at=job.submitted_at,
                  provider_message_id=job.provider_message_id, replies_read=_replies_read(job, events))
    label = job_label_and_tone(job).text
    if job.state == S.AUTHORIZED:
        return LedgerRow(**base, **passed, outcome=Outcome.IN_FLIGHT, reason="", why=label)
    if job_left(job):
        crossed = _crossed(job, facts)
        return LedgerRow(**base, **passed, server_reply=job.smtp_reply, outcome=Outcome.SENT,
                         **(crossed or {"reason": "", "why": label}))
    if job.state == S.UNKNOWN:
        return LedgerRow(**base, **passed, outcome=Outcome.UNKNOWN, reason=Why.OUTCOME_UNKNOWN, why=label)
    # Failed: refused by the server after the final check (its answer), or never prepared.
    refused = job.error if job.authorized_at is not None else ""
    return LedgerRow(**base, **(passed | {"decided_at": job.authorized_at or job.finished_at}),
                     server_reply=refused or job.smtp_reply, outcome=Outcome.FAILED, reason=Reason.FAILED, why=label)


def _held_back(job: SendJob, facts: _Facts) -> dict[str, Any]:
    """A message that never left: the final check's (or the stop's) reason, who and what caused it, and when."""
    if job.state != S.CANCELED:  # canceled at the provider before its send time
        return dict(outcome=Outcome.HELD_BACK, reason=Why.PROVIDER_CANCELED, why=job_label_and_tone(job).text,
                    decided_at=job.submitted_at, handed_off_at=job.submitted_at, message_id=job.message_id,
                    provider_message_id=job.provider_message_id)
    code, at, email = job.cancel_reason, job.canceled_at, job.enrollment.contact.email
    cancel = _cancel(facts, job)
    own = facts.enrollments.get(job.enrollment_id, [])
    by, stop_at, received, entry, said = cancel.get("actor", ""), None, None, None, []
    if code in R.values:
        stop = _closest(own, Event.ENROLLMENT_STOPPED, at, reason=code)
        if stop is not None:
            stop_at, by = stop.at, by or stop.data.get("actor", "")
            reply = facts.replies.get(_inbound_id(stop) or 0)
            if code in REPLIES and reply is not None:
                received = _parsed(reply.data.get("internaldate"))
            said.append(_stop_words(code, stop, by=by, received=received))
        if code in SUPPRESSING:
            entry = _entry(facts, email, stop_at or at)
            if entry is not None:
                said.append(_entry_words(entry))
    elif code == Reason.ENROLLMENT_PAUSED:
        pause = _closest(own, Event.ENROLLMENT_PAUSED, at)
        if pause is not None:
            stop_at, by = pause.at, by or pause.data.get("actor", "")
        said.append(f"Paused{_by(by)} at {stamp(stop_at or at)}.")
    elif code in PAUSES:
        kind, what = PAUSES[code]
        name = job.enrollment.sequence.name if what == "sequence" else enrollment_mailbox(job.enrollment).name
        # The pause's own event (its commit, and its actor when the cancel names none: the guardrail's sweep).
        # A sequence's name is its workspace's: another workspace's pause of its namesake is not this one's.
        own_workspace = (None, job.enrollment.sequence.workspace_id)
        earlier = [e for e, named, workspace in facts.pauses
                   if e.kind == kind and named == name and workspace in own_workspace and e.at <= at + SLACK]
        if earlier:
            stop_at, by = earlier[-1].at, by or earlier[-1].data.get("actor", "")
        said.append(f"The {what} {name} was paused{_by(by)} at {stamp(stop_at or at)}.")
    checked = "refused by the final check" if cancel.get("final_check") else "canceled"
    sentence = reason_sentence(code).rstrip(".")
    why = " ".join([f"Canceled — never sent: {sentence[:1].lower()}{sentence[1:]} ({checked} at {stamp(at)}).",
                    *said])
    return dict(outcome=Outcome.HELD_BACK, reason=code, why=why, decided_at=at, by=by, stop_at=stop_at,
                reply_received_at=received, suppression_entry=entry.pk if entry else None)


def _stop_words(code: str, stop: _Ev, *, by: str, received: datetime | None) -> str:
    because = stop.data.get("because", "")
    if code in REPLIES:
        arrived = f"The reply reached the mailbox at {stamp(received)} and" if received else "The reply"
        return (f"{because}. " if because else "") + f"{arrived} was committed at {stamp(stop.at)}."
    if because:
        return f"Stopped because {because}, at {stamp(stop.at)}."
    source = stop.data.get("source", "")
    return f"Stopped{_by(by)} at {stamp(stop.at)}" + (f" (source: {source})." if source else ".")


def _entry_words(entry: Suppression) -> str:
    parts = [entry.get_reason_display(), entry.value, f"added {stamp(entry.created_at)}"]
    parts += [f"source {entry.source}"] if entry.source else []
    parts += [f"by {entry.actor}"] if entry.actor else []
    return f"Suppression ledger entry #{entry.pk} ({', '.join(parts)})."


def _by(actor: str) -> str:
    return f" by {actor}" if actor else ""


def _waiting(job: SendJob, events: list[_Ev], facts: _Facts) -> dict[str, Any]:
    """Not sent yet: the label, and why it waits when its last move back to scheduled says so."""
    label = job_label_and_tone(job).text
    last = next((e for e in reversed(events) if e.kind in BACK_TO_SCHEDULED), None)
    if last is None or (last.kind == Event.JOB_RETRY_SCHEDULED):
        return dict(outcome=Outcome.WAITING, reason="", why=label, decided_at=None)
    code, words = _hold(job, last, facts)
    if code is None:
        code = last.data.get("reason", "")
        words = f"{reason_sentence(code)} Due again at {stamp(job.scheduled_at)}."
    return dict(outcome=Outcome.WAITING, reason=code, why=f"{label}. {words}", decided_at=None)


def _hold(job: SendJob, event: _Ev, facts: _Facts) -> tuple[str | None, str]:
    """A hold in words (out of office, blind reply view, mailbox blocked or failed), or (None, "")."""
    data = event.data
    if event.kind == Event.JOB_HELD_OUT_OF_OFFICE:
        until = _parsed(data.get("until"))
        note = _closest(facts.enrollments.get(job.enrollment_id, ()), Event.OUT_OF_OFFICE_HOLD, event.at)
        said = (note.data.get("quote") or note.data.get("sentence", "")) if note else ""
        quoted = f" ('{' '.join(said.split())[:120]}')" if said else ""
        return Reason.OUT_OF_OFFICE, f"On hold until {when_words(until) or '?'}: out of office{quoted}."
    if event.kind == Event.JOB_HELD:
        return Why.MAILBOX_FAILED, f"Held: the mailbox {data.get('mailbox', '')} failed ({data.get('error', '')})."
    reason = data.get("reason")
    if event.kind == Event.JOB_DEFERRED and reason in HOLD_REASONS:
        detail = data.get("detail") or data.get("hold", "")
        what = ("the mailbox could not read its replies (blind reply view), so the follow-up waited"
                if reason == Reason.REPLY_VIEW else "the mailbox could not send (blocked)")
        return reason, f"On hold: {what}{f' ({detail})' if detail else ''}."
    return None, ""


def _holds_words(job: SendJob, events: list[_Ev], facts: _Facts) -> str:
    said = []
    for event in events:
        code, words = _hold(job, event, facts)
        if code is not None:
            said.append(f"{stamp(event.at)}: {words}")
    return " ".join(said)


def _replies_read(job: SendJob, events: list[_Ev]) -> str:
    authorized = next((e for e in reversed(events) if e.kind == Event.JOB_AUTHORIZED), None)
    if authorized is None or "replies_read_seconds_before" not in authorized.data:
        return ""
    return hand_off_words(authorized.data["replies_read_seconds_before"], first_message=job.step.position == 1)


def _crossed(job: SendJob, facts: _Facts) -> dict[str, Any] | None:
    """A message that left while its person's stop was on its way (`sequences.crossing`), or None."""
    stop = first_stop_after(facts.enrollments.get(job.enrollment_id, ()), job.authorized_at)
    if stop is None:
        return None
    reply = facts.replies.get(_inbound_id(stop) or 0)
    received = _parsed(reply.data.get("internaldate")) if reply is not None else None
    how = crossed(authorized_at=job.authorized_at, submitted_at=job.submitted_at, stop_at=stop.at,
                  received_at=received)
    if how is None:
        return None
    what = reason_sentence(stop.data.get("reason", "") or Reason.ENROLLMENT_PAUSED).rstrip(".")
    what = what[:1].lower() + what[1:]
    if how == Crossed.WHILE_HANDED_OFF:
        why = (f"Crossed: the stop ({what}) was committed at {stamp(stop.at)}, while this message was being "
               f"handed off after the final check at {stamp(job.authorized_at)}")
    elif received < job.authorized_at:
        why = (f"Crossed: the reply reached the mailbox at {stamp(received)} but was committed only at "
               f"{stamp(stop.at)}, after the final check let this message go at {stamp(job.authorized_at)}")
    else:
        why = (f"Crossed: the reply reached the mailbox at {stamp(received)}, while this message was being handed "
               f"off after the final check at {stamp(job.authorized_at)}; it was committed at {stamp(stop.at)}")
    return dict(reason=Why.CROSSED, why=f"{why} — already submitted at {stamp(job.submitted_at)}, cannot recall.",
                by=stop.data.get("actor", ""), stop_at=stop.at, reply_received_at=received)


def _parsed(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if value else None
    except (TypeError, ValueError):
        return None


# --- files -------------------------------------------------------------------------------------------------


def _text(value: Any) -> Any:
    """A value as JSON carries it: times in ISO 8601, UTC, to the microsecond."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return str(value) if isinstance(value, StrEnum) else value


def ledger_dicts(rows: Iterable[LedgerRow]) -> Iterator[dict[str, Any]]:
    """The rows as JSON-ready dicts (the person's data export takes these)."""
    for row in rows:
        yield {name: _text(getattr(row, name)) for name in COLUMNS}


def ledger_json_chunks(rows: Iterable[LedgerRow]) -> Iterator[str]:
    """A JSON array, one row a line, written as it is read (a sequence's ledger may be long)."""
    yield "["
    for i, row in enumerate(ledger_dicts(rows)):
        yield ("," if i else "") + "\n" + json.dumps(row, ensure_ascii=False)
    yield "\n]\n"


class _Line:
    """A file-like for csv.writer that hands back each written line."""

    def write(self, value: str) -> str:
        return value


def ledger_csv_lines(rows: Iterable[LedgerRow]) -> Iterator[str]:
    """The header and one line per row; every text cell formula-safe (`spreadsheet.guard_formula`)."""
    writer = csv.writer(_Line())
    yield writer.writerow(COLUMNS)
    for row in ledger_dicts(rows):
        yield writer.writerow(["" if v is None else guard_formula(v) if isinstance(v, str) else v
                               for v in row.values()])
