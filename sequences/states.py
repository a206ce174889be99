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
memory. Every move requires the caller's transaction; the caller holds the
locks (see `sequences.locks` for their order).

On PostgreSQL a job or enrollment move is one statement: the guarded UPDATE
and the INSERT of its event in one data-modifying CTE (one round trip, and
the event exists exactly when the row moved). Elsewhere (SQLite, the local
demo) they are two statements in the same transaction.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connection
from django.db.models import F, Model, Value
from django.db.models.expressions import CombinedExpression, Expression

from mailboxes.models import Mailbox

from . import daily_cap
from .dbclock import DbClock, iso
from .inserts import converted
from .models import Enrollment, ProviderCancel, SendJob, Sequence
from .timeline import (
    EVENT_COLUMNS,
    EVENT_TABLE,
    Event,
    event_record,
    event_record_with_row,
    event_row,
    event_values,
    event_written,
)
from .webhooks_out.outbox import endpoints_column, endpoints_parse


class IllegalTransition(Exception):
    pass


def _check(machine: str, edges: dict, current: Any, to: Any) -> None:
    assert connection.in_atomic_block, f"{machine} transitions run inside a transaction"
    if to not in edges[current]:
        raise IllegalTransition(f"{current} -> {to} is not an edge of the {machine} state machine")


def _guarded_update(model: type[Model], where: dict[str, Any], updates: dict[str, Any], event: dict[str, Any],
                    gate: tuple[str, list] | None = None) -> dict[str, Any] | None:
    """UPDATE the one row of `model` matching `where` (field -> value) and INSERT its timeline event if it moved;
    the row's new values, or None.

    PostgreSQL: one statement (`WITH moved AS (UPDATE ... RETURNING ...) INSERT ... SELECT ... FROM moved`),
    written here rather than compiled by the ORM for every move (`_move_sql`, one text per shape of move).
    The event's `at` is the column's database default, the database clock. `gate`: a data-modifying
    statement (SQL, params) with RETURNING that must return a row for the row to move (the daily cap's
    slot); on PostgreSQL it runs in the same statement, elsewhere just before.
    """
    if connection.vendor != "postgresql":
        if gate is not None:
            with connection.cursor() as cursor:
                cursor.execute(*gate)
                if cursor.fetchone() is None:
                    return None
        if not model.objects.filter(**where).update(**updates):
            return None
        event_record(**{k: v for k, v in event.items() if k != "data"}, **event.get("data", {}))
        return {}
    written = event_row(**event)
    values = event_values(written)
    # An event that outbound webhooks carry reads the active endpoints in the same statement (for the outbox).
    endpoints_sql = endpoints_column(written.kind)
    sets, set_params = _set_clause(model, updates)
    sql = _move_sql(model, tuple(where), sets, gate[0] if gate else "", endpoints_sql)
    where_params = [_field(model, name).get_db_prep_value(value, connection)
                    for name, value in where.items()]
    with connection.cursor() as cursor:
        cursor.execute(sql, (*(gate[1] if gate else ()), *set_params, *where_params, *values))
        row = cursor.fetchone()
    if row is None:
        return None
    row = list(row)
    endpoints = endpoints_parse(row.pop()) if endpoints_sql else []
    written.pk = row.pop()
    written._state.adding, written._state.db = False, connection.alias
    # The event was written by the statement above: what follows every event (the webhook outbox) follows it too.
    event_written(written, endpoints=endpoints)
    out = {}
    for name, value in zip(updates, row, strict=True):
        field = model._meta.get_field(name)
        out[field.attname] = converted(field, value)
    return out


def _set_clause(model: type[Model], updates: dict[str, Any]) -> tuple[tuple[str, ...], list[Any]]:
    """`column = ...` of each update, and its parameters: a value, the database clock, or a column plus or
    minus a constant (`F("version") + 1`). Anything else is not a move's update."""
    sets, params = [], []
    for name, value in updates.items():
        field = model._meta.get_field(name)
        if isinstance(value, DbClock):
            sets.append(f'"{field.column}" = {DbClock.template}')
        elif (isinstance(value, CombinedExpression) and isinstance(value.lhs, F) and isinstance(value.rhs, Value)
              and value.connector in (CombinedExpression.ADD, CombinedExpression.SUB)):
            source = model._meta.get_field(value.lhs.name).column
            sets.append(f'"{field.column}" = "{source}" {value.connector} %s')
            params.append(value.rhs.value)
        elif isinstance(value, Expression):
            raise TypeError(f"a state move cannot write {value!r} to {name}")
        else:
            sets.append(f'"{field.column}" = %s')
            params.append(field.get_db_prep_save(value, connection))
    return tuple(sets), params


@cache
def _move_sql(model: type[Model], where: tuple[str, ...], sets: tuple[str, ...], gate_sql: str,
              endpoints_sql: str) -> str:
    """The one statement of a move on PostgreSQL, for one shape of move (its parameters vary, not its text)."""
    table = model._meta.db_table
    conditions = [f'"{table}"."{_field(model, name).column}" = %s' for name in where]
    if gate_sql:
        conditions.append("EXISTS (SELECT 1 FROM gate)")
    returning = ", ".join(s.split(" = ", 1)[0] for s in sets)
    placeholders = ", ".join(["%s"] * len(EVENT_COLUMNS))
    return (f"WITH {f'gate AS ({gate_sql}), ' if gate_sql else ''}"
            f'moved AS (UPDATE "{table}" SET {", ".join(sets)} WHERE {" AND ".join(conditions)} '
            f"RETURNING {returning}), "
            f"ev AS (INSERT INTO {EVENT_TABLE} ({', '.join(EVENT_COLUMNS)}) SELECT {placeholders} FROM moved "
            f"RETURNING id) SELECT {returning}, (SELECT id FROM ev){endpoints_sql} FROM moved")


def _field(model: type[Model], name: str):
    return model._meta.pk if name == "pk" else model._meta.get_field(name)



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
    gate: tuple[str, list] | None = None,
    **event_data: Any,
) -> bool:
    """Move `job` from the state and version it was read with to `to`; requires a transaction.

    `gate`: a statement that must return a row for the job to move, run with the move (the daily cap's
    slot, `sequences.daily_cap.slot_gate`); False then also when it returned none."""
    _check("send-job", JOB_EDGES, job.state, to)
    updates: dict[str, Any] = {"state": to, "version": F("version") + 1, **(fields or {})}
    if to in JOB_STAMP:
        updates.setdefault(JOB_STAMP[to], DbClock())
    back_from_hand_off = job.state == S.AUTHORIZED and to == S.SCHEDULED
    moved = _guarded_update(
        SendJob, {"pk": job.pk, "state": job.state, "version": job.version}, updates,
        {"kind": event or Event(f"job_{to}"), "email": _email_of(job), "enrollment": job.enrollment_id,
         "job": job.pk, "version_seen": job.version, "worker_id": worker_id,
         "data": {"step": job.step.position, "from": job.state, "to": to, **event_data}},
        gate=gate,
    )
    if moved is None:
        return False
    if back_from_hand_off:
        # A transient refusal or a held message did not leave: it is not one of the day's messages.
        mailbox = _sending_mailbox(job)
        daily_cap.slot_give_back(mailbox_id=mailbox.pk, tz=daily_cap.cap_zone(mailbox), authorized_at=job.authorized_at)
    _apply(job, moved, to=to, state_field="state")
    return True


def _apply(obj, moved: dict[str, Any], *, to: str, state_field: str) -> None:
    """Bring the moved row's instance up to date: the values the UPDATE returned (database-clock stamps,
    counters), or, where it returned none (SQLite), the new state and version."""
    if moved:
        for attname, value in moved.items():
            setattr(obj, attname, value)
    else:
        setattr(obj, state_field, to)
        obj.version += 1


def _sending_mailbox(job: SendJob) -> Mailbox:
    from .loads import sending_mailbox

    return sending_mailbox(job.enrollment)


def job_created(*, job: SendJob, email: str, **event_data: Any) -> None:
    """Write the new `job`, born `scheduled` (the one state a job is created in), and its event: one statement
    on PostgreSQL; requires a transaction."""
    assert job.state == S.SCHEDULED and job._state.adding, "a send job is created scheduled, here"
    event_record_with_row(job, id_key=None, kind=Event.JOB_SCHEDULED, email=email, enrollment=job.enrollment_id,
                          version_seen=job.version, step=job.step.position, **event_data)


def _email_of(job: SendJob) -> str:
    cache = getattr(job, "_email", None)
    if cache is None:
        cache = job.enrollment.contact.email
        job._email = cache  # type: ignore[attr-defined]
    return cache


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
    moved = _guarded_update(
        Enrollment, {"pk": enrollment.pk, "status": enrollment.status, "version": enrollment.version},
        {"status": to, "version": F("version") + 1, **(fields or {})},
        {"kind": event, "email": enrollment.contact.email, "enrollment": enrollment.pk,
         "version_seen": enrollment.version, "data": event_data},
    )
    if moved is None:
        return False
    _apply(enrollment, moved, to=to, state_field="status")
    return True


# --- sequences ---------------------------------------------------------------------------------

SQ = Sequence.Status
SEQUENCE_EDGES: dict[str, frozenset[str]] = {
    SQ.ACTIVE: frozenset({SQ.PAUSED}),
    SQ.PAUSED: frozenset({SQ.ACTIVE}),
}
SEQUENCE_EVENT = {SQ.ACTIVE: Event.SEQUENCE_RESUMED, SQ.PAUSED: Event.SEQUENCE_PAUSED}


def sequence_move(*, sequence: Sequence, to: str, **event_data: Any) -> bool:
    """Pause or resume a locked sequence; requires a transaction."""
    _check("sequence", SEQUENCE_EDGES, sequence.status, to)
    moved = Sequence.objects.filter(pk=sequence.pk, status=sequence.status, version=sequence.version).update(
        status=to, version=F("version") + 1
    )
    if not moved:
        return False
    event_record(kind=SEQUENCE_EVENT[to], version_seen=sequence.version, sequence=sequence.name, **event_data)
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
