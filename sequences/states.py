"""Every state machine of the product: its edges in one table, one compare-and-set move that writes its event.

| what                      | field                         | move                   |
|---------------------------|-------------------------------|------------------------|
| a send job                | SendJob.state                 | `job_move`             |
| an enrollment             | Enrollment.status             | `enrollment_move`      |
| a sequence                | Sequence.status               | `sequence_move`        |
| a mailbox (operator)      | Mailbox.paused (active/paused)| `mailbox_move`         |
| a mailbox's health        | Mailbox.blocked_at (ok/blocked)| `mailbox_health_move` |
| a cancel at a provider    | SendJob.provider_cancel_status| `provider_cancel_move` |

No other code writes these fields. A move is an UPDATE guarded by the state
(and, where the row has one, the version) it was read with; 0 rows updated
means someone else moved it first, and the move returns False and writes
nothing: the caller reloads instead of retrying blindly. A successful move
writes its timeline event in the same transaction and updates the object in
memory (a held job's re-check that finds the same hold moves quietly, and
its moves are written when it ends otherwise: `job_move`). Every move
requires the caller's transaction; the caller holds the locks (see
`sequences.locks` for their order).

A move is two statements in the caller's transaction: the guarded UPDATE
(the ORM's `filter(...).update(...)`), then the INSERT of its event; the
values the database decided (its clock's stamps, counters) are read back into
the object.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import F, Model, Q, Value
from django.db.models.expressions import CombinedExpression, Expression

from db.clock import DbClock
from mailboxes.models import Mailbox

from . import daily_cap
from .models import Enrollment, ProviderCancel, SendJob, Sequence
from .sending_mailbox import enrollment_mailbox
from .timeline import Event, event_record, iso


class IllegalTransition(Exception):
    pass


def _check(machine: str, edges: dict, current: Any, to: Any) -> None:
    assert connection.in_atomic_block, f"{machine} transitions run inside a transaction"
    if to not in edges[current]:
        raise IllegalTransition(f"{current} -> {to} is not an edge of the {machine} state machine")


def _guarded_update(obj: Model, where: dict[str, Any], updates: dict[str, Any]) -> bool:
    """UPDATE `obj`'s row only if it still has the values of `where` (compare-and-set); False when someone else
    moved it first. On success the object holds the new values: a column plus or minus a constant is
    computed here (the row matched the values it was read with); what the database decided (a stamp of its
    clock) becomes a deferred field, which Django reads from the row on first use — most callers never do."""
    if not type(obj).objects.filter(pk=obj.pk, **where).update(**updates):
        return False
    for name, value in updates.items():
        attname = type(obj)._meta.get_field(name).attname
        if (shift := _shift(value)) is not None:
            source, delta = shift
            setattr(obj, attname, getattr(obj, type(obj)._meta.get_field(source).attname) + delta)
        elif isinstance(value, Expression):
            obj.__dict__.pop(attname, None)  # deferred: loaded from the row when read
        else:
            setattr(obj, attname, value)
    return True


def _shift(value: Any) -> tuple[str, int] | None:
    """(field, delta) of `F(field) + n` or `F(field) - n`; None for anything else."""
    if (isinstance(value, CombinedExpression) and isinstance(value.lhs, F) and isinstance(value.rhs, Value)
            and value.connector in (CombinedExpression.ADD, CombinedExpression.SUB)):
        return value.lhs.name, value.rhs.value if value.connector == CombinedExpression.ADD else -value.rhs.value
    return None


# --- send jobs -------------------------------------------------------------------------------

S = SendJob.State

JOB_EDGES: dict[str, frozenset[str]] = {
    # scheduled -> scheduled: an out-of-office hold moves the job's time later (the final check still decides).
    S.SCHEDULED: frozenset({S.QUEUED, S.CANCELED, S.SCHEDULED}),
    S.QUEUED: frozenset({S.CLAIMED, S.CANCELED, S.SCHEDULED}),
    # claimed -> queued: a lost claim (lease expired before authorization) is safe to hand out again.
    # claimed -> scheduled: outside the sending window or over the daily cap; try again later.
    # claimed -> failed: the message could not be prepared (a missing value, an invalid address, a broken
    # template); it never reached a transport, and retrying the same data would fail the same way.
    S.CLAIMED: frozenset({S.AUTHORIZED, S.CANCELED, S.QUEUED, S.SCHEDULED, S.FAILED}),
    # authorized -> scheduled: the transport refused before accepting (4xx, connection failure);
    # the retry goes through the guard again and never reuses this authorization.
    S.AUTHORIZED: frozenset({S.SUBMITTED, S.FAILED, S.UNKNOWN, S.SCHEDULED}),
    S.SUBMITTED: frozenset({S.ACCEPTED, S.FAILED}),
    S.ACCEPTED: frozenset({S.FAILED}),  # a later hard bounce (DSN/webhook)
    S.CANCELED: frozenset(),
    S.FAILED: frozenset(),
    S.UNKNOWN: frozenset(),
}

# Jobs that have not passed the point of no return: a stop cancels them.
CANCELABLE = (S.SCHEDULED, S.QUEUED, S.CLAIMED)
# Jobs that passed authorization: a stop cannot recall them.
PASSED_HANDOFF = (S.AUTHORIZED, S.SUBMITTED, S.ACCEPTED, S.UNKNOWN)
# Jobs that hold their step: while one exists, no other job of the step is scheduled.
LIVE = (S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)

# The timestamp field each target state stamps with the database clock.
JOB_STAMP: dict[str, str] = {
    S.QUEUED: "queued_at",
    S.CLAIMED: "claimed_at",
    S.AUTHORIZED: "authorized_at",
    S.SUBMITTED: "submitted_at",
    S.CANCELED: "canceled_at",
    S.FAILED: "finished_at",
    S.UNKNOWN: "finished_at",
}


def job_move(
    *,
    job: SendJob,
    to: str,
    event: Event | None = None,
    worker_id: str = "",
    fields: dict[str, Any] | None = None,
    quiet: bool = False,
    **event_data: Any,
) -> bool:
    """Move `job` from the state and version it was read with to `to`, with its event; requires a transaction.

    `quiet`: the move of a held job's re-check (`services.sending`), which writes no event: the hold's own event
    stays the job's last word while the re-checks find the same hold (three events every few seconds said
    nothing new), and `job_quiet_moves_record` writes the re-check's moves when it ends otherwise."""
    _check("send-job", JOB_EDGES, job.state, to)
    before, version = job.state, job.version
    updates: dict[str, Any] = {"state": to, "version": F("version") + 1, **(fields or {})}
    if to in JOB_STAMP:
        updates.setdefault(JOB_STAMP[to], DbClock())
    authorized_at = job.authorized_at
    if not _guarded_update(job, {"state": before, "version": version}, updates):
        return False
    if not quiet:
        event_record(kind=event or Event(f"job_{to}"), email=job.enrollment.contact.email,
                     enrollment=job.enrollment_id, job=job.pk, version_seen=version, worker_id=worker_id,
                     step=job.step.position, **{"from": before, "to": to}, **event_data)
    if before == S.AUTHORIZED and to == S.SCHEDULED:
        # A transient refusal or a held message did not leave: it is not one of the day's messages.
        mailbox = enrollment_mailbox(job.enrollment)
        daily_cap.slot_give_back(mailbox_id=mailbox.pk, tz=daily_cap.cap_zone(mailbox), authorized_at=authorized_at)
    return True


def job_quiet_moves_record(*, job: SendJob, worker_id: str) -> None:
    """The events of a held job's re-check that was dispatched and claimed quietly (`job_move(quiet=True)`), now
    that the re-check ends otherwise than in the same hold (authorized, canceled, another hold or deferral): the
    job's timeline shows the claim that led to it. `job` is the claimed job read fresh; each event carries the
    version its move saw and, as `moved_at`, when the move happened. Requires the caller's transaction."""
    assert job.state == S.CLAIMED, "a quiet re-check is recorded when it ends, from the claimed job"
    moves = ((S.SCHEDULED, S.QUEUED, job.version - 2, job.queued_at, ""),
             (S.QUEUED, S.CLAIMED, job.version - 1, job.claimed_at, worker_id))
    for before, to, version, at, worker in moves:
        event_record(kind=Event(f"job_{to}"), email=job.enrollment.contact.email, enrollment=job.enrollment_id,
                     job=job.pk, version_seen=version, worker_id=worker, step=job.step.position,
                     **{"from": before, "to": to}, moved_at=iso(at), after_hold=True)


def job_variant_change(*, job: SendJob, variant_id: int, **event_data: Any) -> bool:
    """Give a scheduled job (not yet queued, so nothing of it was rendered) another A/B variant, guarded by the
    state and version it was read with (a dispatcher that queued it first wins: the final check then refuses
    it); its event in the same transaction. Requires a transaction."""
    assert connection.in_atomic_block, "a job's variant changes inside a transaction"
    before, version = job.variant_id, job.version
    if not _guarded_update(job, {"state": S.SCHEDULED, "version": version},
                           {"variant_id": variant_id, "version": F("version") + 1}):
        return False
    event_record(kind=Event.JOB_VARIANT_CHANGED, email=job.enrollment.contact.email, enrollment=job.enrollment_id,
                 job=job.pk, version_seen=version, step=job.step.position, **{"from": before, "to": variant_id},
                 **event_data)
    return True


def job_created(*, job: SendJob, email: str, **event_data: Any) -> None:
    """Write the new `job`, born `scheduled` (the one state a job is created in), and its event; requires a
    transaction."""
    assert job.state == S.SCHEDULED and job._state.adding, "a send job is created scheduled, here"
    job.save(force_insert=True)
    event_record(kind=Event.JOB_SCHEDULED, email=email, enrollment=job.enrollment_id, job=job,
                 version_seen=job.version, step=job.step.position, **event_data)


# The one definition of a message of ours that really left: submitted or accepted, and not canceled at the
# provider before its send time. `LEFT` for a query, `job_left` for a job in hand.
LEFT = Q(state__in=(S.SUBMITTED, S.ACCEPTED)) & ~Q(provider_cancel_status=ProviderCancel.CONFIRMED)


def job_left(job: SendJob) -> bool:
    return job.state in (S.SUBMITTED, S.ACCEPTED) and job.provider_cancel_status != ProviderCancel.CONFIRMED


# --- enrollments -----------------------------------------------------------------------------

E = Enrollment.Status

ENROLLMENT_EDGES: dict[str, frozenset[str]] = {
    E.ACTIVE: frozenset({E.PAUSED, E.STOPPED, E.COMPLETED}),
    E.PAUSED: frozenset({E.ACTIVE, E.STOPPED}),
    E.STOPPED: frozenset({E.ACTIVE}),  # only an operator's explicit resume
    # -> active: its last message was canceled at the provider, so it is not complete after all.
    # -> stopped: a later reply, complaint or suppression still stops the person.
    E.COMPLETED: frozenset({E.ACTIVE, E.STOPPED}),
}


def enrollment_move(
    *, enrollment: Enrollment, to: str, event: Event, fields: dict[str, Any] | None = None, **event_data: Any
) -> bool:
    """Move a locked enrollment from the status and version it was read with; requires a transaction."""
    _check("enrollment", ENROLLMENT_EDGES, enrollment.status, to)
    version = enrollment.version
    if not _guarded_update(enrollment, {"status": enrollment.status, "version": version},
                           {"status": to, "version": F("version") + 1, **(fields or {})}):
        return False
    event_record(kind=event, email=enrollment.contact.email, enrollment=enrollment.pk, version_seen=version,
                 **event_data)
    return True


# --- sequences ---------------------------------------------------------------------------------

SQ = Sequence.Status
SEQUENCE_EDGES: dict[str, frozenset[str]] = {
    SQ.DRAFT: frozenset({SQ.ACTIVE}),  # launch: once; a launched sequence is paused, never a draft again
    SQ.ACTIVE: frozenset({SQ.PAUSED}),
    SQ.PAUSED: frozenset({SQ.ACTIVE}),
}
SEQUENCE_EVENT = {SQ.ACTIVE: Event.SEQUENCE_RESUMED, SQ.PAUSED: Event.SEQUENCE_PAUSED}


def _sequence_event(before: str, to: str) -> Event:
    return Event.SEQUENCE_LAUNCHED if before == SQ.DRAFT else SEQUENCE_EVENT[to]


def sequence_move(*, sequence: Sequence, to: str, **event_data: Any) -> bool:
    """Launch, pause or resume a locked sequence; requires a transaction."""
    _check("sequence", SEQUENCE_EDGES, sequence.status, to)
    event = _sequence_event(sequence.status, to)
    moved = Sequence.objects.filter(pk=sequence.pk, status=sequence.status, version=sequence.version).update(
        status=to, version=F("version") + 1
    )
    if not moved:
        return False
    event_record(kind=event, version_seen=sequence.version, sequence=sequence.name, **event_data)
    sequence.status, sequence.version = to, sequence.version + 1
    return True


# --- mailboxes ----------------------------------------------------------------------------------

MAILBOX_ACTIVE, MAILBOX_PAUSED = "active", "paused"
MAILBOX_EDGES: dict[str, frozenset[str]] = {
    MAILBOX_ACTIVE: frozenset({MAILBOX_PAUSED}),
    MAILBOX_PAUSED: frozenset({MAILBOX_ACTIVE}),
}
MAILBOX_EVENT = {MAILBOX_ACTIVE: Event.MAILBOX_RESUMED, MAILBOX_PAUSED: Event.MAILBOX_PAUSED}


def mailbox_status(mailbox: Mailbox) -> str:
    return MAILBOX_PAUSED if mailbox.paused else MAILBOX_ACTIVE


def mailbox_move(*, mailbox: Mailbox, to: str, **event_data: Any) -> bool:
    """Pause or resume a locked mailbox; requires a transaction."""
    _check("mailbox", MAILBOX_EDGES, mailbox_status(mailbox), to)
    moved = Mailbox.objects.filter(pk=mailbox.pk, paused=mailbox.paused, version=mailbox.version).update(
        paused=to == MAILBOX_PAUSED, version=F("version") + 1
    )
    if not moved:
        return False
    event_record(kind=MAILBOX_EVENT[to], version_seen=mailbox.version, mailbox=mailbox.name, **event_data)
    mailbox.paused, mailbox.version = to == MAILBOX_PAUSED, mailbox.version + 1
    return True


# --- mailbox health --------------------------------------------------------------------------

HEALTH_OK, HEALTH_BLOCKED = "ok", "blocked"
HEALTH_EDGES: dict[str, frozenset[str]] = {
    HEALTH_OK: frozenset({HEALTH_BLOCKED}),
    # blocked -> blocked: a probe failed again (the next one waits longer).
    HEALTH_BLOCKED: frozenset({HEALTH_BLOCKED, HEALTH_OK}),
}


def mailbox_health(mailbox: Mailbox) -> str:
    return HEALTH_BLOCKED if mailbox.blocked_at else HEALTH_OK


def mailbox_health_move(*, mailbox: Mailbox, to: str, reason: str = "", next_probe_at=None, **event_data: Any) -> bool:
    """Block, re-block after a failed probe, or unblock a locked mailbox; requires a transaction."""
    current = mailbox_health(mailbox)
    _check("mailbox-health", HEALTH_EDGES, current, to)
    if to == HEALTH_OK:
        fields: dict[str, Any] = {"blocked_at": None, "blocked_reason": "", "blocked_probes": 0,
                                  "next_probe_at": None, "connect_failures": 0}
        event = Event.MAILBOX_UNBLOCKED
    elif current == HEALTH_OK:
        fields = {"blocked_at": DbClock(), "blocked_reason": reason, "blocked_probes": 0,
                  "next_probe_at": next_probe_at, "connect_failures": 0}
        event = Event.MAILBOX_BLOCKED
    else:
        fields = {"blocked_reason": reason, "blocked_probes": F("blocked_probes") + 1, "next_probe_at": next_probe_at}
        event = Event.MAILBOX_PROBE_FAILED
    moved = Mailbox.objects.filter(pk=mailbox.pk, version=mailbox.version).update(version=F("version") + 1, **fields)
    if not moved:
        return False
    event_record(kind=event, version_seen=mailbox.version, mailbox=mailbox.name, reason=reason,
                 next_probe_at=iso(next_probe_at), **event_data)
    mailbox.refresh_from_db(fields=["blocked_at", "blocked_reason", "blocked_probes", "next_probe_at",
                                    "connect_failures", "version"])
    return True


# --- cancels at a provider ----------------------------------------------------------------------

P = ProviderCancel
NOT_ASKED = ""
PROVIDER_CANCEL_EDGES: dict[str, frozenset[str]] = {
    NOT_ASKED: frozenset({P.REQUESTED}),
    # Only a documented success that came back before cancelable_until is "confirmed".
    P.REQUESTED: frozenset({P.CONFIRMED, P.REFUSED, P.FAILED}),
    P.CONFIRMED: frozenset(),
    P.REFUSED: frozenset(),
    P.FAILED: frozenset(),
}
PROVIDER_CANCEL_EVENT = {
    P.REQUESTED: Event.PROVIDER_CANCEL_REQUESTED,
    P.CONFIRMED: Event.PROVIDER_CANCEL_CONFIRMED,
    P.REFUSED: Event.PROVIDER_CANCEL_REFUSED,
    P.FAILED: Event.PROVIDER_CANCEL_FAILED,
}


def provider_cancel_move(*, job: SendJob, to: str, detail: str, email: str, **event_data: Any) -> bool:
    """Record a cancel request or the provider's answer, guarded by the status it was read with."""
    current = job.provider_cancel_status
    _check("provider-cancel", PROVIDER_CANCEL_EDGES, current, to)
    moved = SendJob.objects.filter(pk=job.pk, provider_cancel_status=current).update(
        provider_cancel_status=to, provider_cancel_detail=detail
    )
    if not moved:
        return False
    event_record(kind=PROVIDER_CANCEL_EVENT[to], email=email, enrollment=job.enrollment_id, job=job,
                 version_seen=job.version, detail=detail, schedule_id=job.provider_schedule_id,
                 provider_send_at=iso(job.provider_send_at), cancelable_until=iso(job.cancelable_until),
                 **event_data)
    job.provider_cancel_status, job.provider_cancel_detail = to, detail
    return True
