"""Timeline events: written inside the transaction of the change they describe.

`Event` names every kind of event the product writes. Pages, drills and
commands match on these names, so they are members here, never ad-hoc strings.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from django.db import connection
from django.db.models import Model

from .inserts import insert_sql, returned_assign
from .models import Enrollment, SendJob, TimelineEvent


class Event(StrEnum):
    # Enrollments
    ENROLLED = "enrolled"
    ENROLLMENT_PAUSED = "enrollment_paused"
    ENROLLMENT_STOPPED = "enrollment_stopped"
    ENROLLMENT_RESUMED = "enrollment_resumed"
    ENROLLMENT_COMPLETED = "enrollment_completed"
    ENROLLMENT_REACTIVATED = "enrollment_reactivated"
    # Sequences and mailboxes
    SEQUENCE_PAUSED = "sequence_paused"
    SEQUENCE_RESUMED = "sequence_resumed"
    MAILBOX_PAUSED = "mailbox_paused"
    MAILBOX_RESUMED = "mailbox_resumed"
    MAILBOX_BLOCKED = "mailbox_blocked"  # the mailbox as a whole cannot send
    MAILBOX_PROBE_FAILED = "mailbox_probe_failed"
    MAILBOX_UNBLOCKED = "mailbox_unblocked"
    MAILBOX_CONNECT_FAILED = "mailbox_connect_failed"  # the server could not be reached (counted)
    # The deliverability guardrail paused the mailbox (outbound webhook `mailbox.paused_by_guardrail`), with the
    # figures; an operator's resume silences it for a stated period.
    MAILBOX_PAUSED_BY_GUARDRAIL = "mailbox_paused_by_guardrail"
    GUARDRAIL_SILENCED = "guardrail_silenced"
    # Send jobs: one per edge of the job state machine (job_<state>), plus the edges with a name of their own
    JOB_SCHEDULED = "job_scheduled"
    JOB_QUEUED = "job_queued"
    JOB_CLAIMED = "job_claimed"
    JOB_AUTHORIZED = "job_authorized"
    JOB_SUBMITTED = "job_submitted"
    JOB_ACCEPTED = "job_accepted"
    JOB_CANCELED = "job_canceled"
    JOB_FAILED = "job_failed"
    JOB_UNKNOWN = "job_unknown"
    JOB_DEFERRED = "job_deferred"  # claimed -> scheduled: sending window or daily cap
    JOB_RETRY_SCHEDULED = "job_retry_scheduled"  # authorized -> scheduled: transient transport error
    JOB_HELD = "job_held"  # authorized -> scheduled: the mailbox failed as a whole; the message waits for it
    JOB_DELIVERED = "job_delivered"  # submitted -> accepted on a provider's delivery event
    JOB_FAILED_AT_PROVIDER = "job_failed_at_provider"
    JOB_PREPARE_FAILED = "job_prepare_failed"  # claimed -> failed: the message could not be built
    JOB_HELD_OUT_OF_OFFICE = "job_held_out_of_office"  # -> scheduled later: the person is away until a date
    CLAIM_EXPIRED = "claim_expired"  # claimed -> queued: the worker's lease ran out before authorization
    WORKER_LOST = "worker_lost"  # authorized -> unknown: the worker's lease ran out after authorization
    # No-ops: a duplicate or stale delivery found the state moved
    CLAIM_NOOP = "claim_noop"
    AUTHORIZE_NOOP = "authorize_noop"
    SUBMIT_AFTER_STATE_CHANGE = "submit_after_state_change"
    # Scheduled sends at a provider
    PROVIDER_CANCEL_REQUESTED = "provider_cancel_requested"
    PROVIDER_CANCEL_CONFIRMED = "provider_cancel_confirmed"
    PROVIDER_CANCEL_REFUSED = "provider_cancel_refused"
    PROVIDER_CANCEL_FAILED = "provider_cancel_failed"
    PROVIDER_EVENT = "provider_event"
    # The suppression ledger
    SUPPRESSION_ADDED = "suppression_added"
    SUPPRESSION_LIFTED = "suppression_lifted"
    # People
    OUT_OF_OFFICE_HOLD = "out_of_office_hold"  # an auto-reply's return date (and its sentence) holds the person
    CONTACT_ERASED = "contact_erased"  # the person's data removed; only the keyed hash of the address stays
    ERASED_ADDRESS_REFUSED = "erased_address_refused"
    # Ingestion
    INBOUND_RECEIVED = "inbound_received"
    IMAP_UIDVALIDITY_CHANGED = "imap_uidvalidity_changed"


# Events that stop or pause sending to an enrollment (what an incident page lists as "the stop").
STOP_EVENTS = (
    Event.ENROLLMENT_STOPPED, Event.ENROLLMENT_PAUSED, Event.SEQUENCE_PAUSED, Event.MAILBOX_PAUSED,
    Event.SUPPRESSION_ADDED,
)


def event_record(
    *,
    kind: Event,
    email: str = "",
    enrollment: Enrollment | int | None = None,
    job: SendJob | int | None = None,
    version_seen: int | None = None,
    worker_id: str = "",
    **data: Any,
) -> TimelineEvent:
    """Append one event; requires the caller's transaction (stamped by the database clock).

    On PostgreSQL one statement writes the event and, for a kind that outbound webhooks carry, reads the
    active endpoints for its outbox rows (`event_written`).
    """
    assert connection.in_atomic_block, "timeline events are written inside the transition's transaction"
    row = event_row(kind=kind, email=email, enrollment=enrollment, job=job, version_seen=version_seen,
                    worker_id=worker_id, data=data)
    if connection.vendor != "postgresql":
        row.save()
        event_written(row)
        return row
    from .webhooks_out.outbox import endpoints_column, endpoints_parse

    endpoints_sql = endpoints_column(row.kind)
    values = event_values(row)
    sql = (f"WITH ev AS (INSERT INTO {EVENT_TABLE} ({', '.join(EVENT_COLUMNS)}) "
           f"VALUES ({', '.join(['%s'] * len(values))}) RETURNING id, at) "
           f"SELECT id, at{endpoints_sql} FROM ev")
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        found = cursor.fetchone()
    row.pk, row.at = found[0], found[1]
    row._state.adding, row._state.db = False, connection.alias
    event_written(row, endpoints=endpoints_parse(found[2]) if endpoints_sql else [])
    return row


def event_record_with_row(instance: Model, *, id_key: str | None, kind: Event, email: str = "",
                          enrollment: Enrollment | int | None = None, job: SendJob | int | None = None,
                          version_seen: int | None = None, **data: Any) -> TimelineEvent:
    """INSERT the new `instance` and append one event that names it: in its data (`data[id_key]`), or, for a
    new send job (`id_key` None), as the event's job; requires the caller's transaction.

    On PostgreSQL one statement: the row's INSERT and the event's, with the active webhook endpoints
    (as event_record). Elsewhere the row is saved, then the event written.
    """
    assert connection.in_atomic_block, "timeline events are written inside the transition's transaction"
    names_job = id_key is None
    assert not names_job or isinstance(instance, SendJob), "an event names a new row in its data, or a new job"
    if connection.vendor != "postgresql":
        instance.save()
        named = {"job": instance} if names_job else {"job": job, id_key: instance.pk}
        return event_record(kind=kind, email=email, enrollment=enrollment, version_seen=version_seen, **named,
                            **data)
    insert, params, returned = insert_sql(instance)  # the primary key returned first
    row, values = _event_naming(f"{insert} RETURNING {', '.join(f.column for f in returned)}", params,
                                id_column=instance._meta.pk.column, id_key=id_key, kind=kind, email=email,
                                enrollment=enrollment, job=job, version_seen=version_seen, data=data)
    returned_assign(instance, returned, values)
    return row


def event_record_reserving(model: type[Model], *, id_key: str, kind: Event, email: str = "",
                           enrollment: Enrollment | int | None = None, job: SendJob | int | None = None,
                           **data: Any) -> tuple[TimelineEvent, int]:
    """Append one event naming the next id of `model`'s table (`data[id_key]`), taken by the same statement, so
    the row itself can be written later in the transaction, once; requires the caller's transaction.

    PostgreSQL only (elsewhere the caller saves the row first, then writes its event)."""
    assert connection.in_atomic_block, "timeline events are written inside the transition's transaction"
    row, (reserved,) = _event_naming("SELECT nextval(pg_get_serial_sequence(%s, %s)) AS id",
                                     [model._meta.db_table, model._meta.pk.column], id_column="id", id_key=id_key,
                                     kind=kind, email=email, enrollment=enrollment, job=job, data=data)
    return row, reserved


def _event_naming(source_sql: str, source_params: list, *, id_column: str, id_key: str | None,
                  data: dict[str, Any], **event: Any) -> tuple[TimelineEvent, list]:
    """One statement: `source_sql` (a query, or a data-modifying statement with RETURNING, of one row whose
    `id_column` comes first) and the event that names that id, in its data (`data[id_key]`) or, `id_key`
    None, as its job; with the active webhook endpoints (as event_record). Returns the event and the
    source's row."""
    from .webhooks_out.outbox import endpoints_column, endpoints_parse

    row = event_row(**event, data=data)
    endpoints_sql = endpoints_column(row.kind)
    selected, params = [], []
    for column, value in zip(EVENT_COLUMNS, event_values(row), strict=True):
        if column == "job_id" and id_key is None:
            selected.append(f"r.{id_column}")
        elif column == "data" and id_key is not None:
            selected.append(f"%s::jsonb || jsonb_build_object(%s::text, r.{id_column})")
            params += [value, id_key]
        else:
            selected.append("%s")
            params.append(value)
    sql = (f"WITH r AS ({source_sql}), ev AS (INSERT INTO {EVENT_TABLE} ({', '.join(EVENT_COLUMNS)}) "
           f"SELECT {', '.join(selected)} FROM r RETURNING id, at) "
           f"SELECT ev.id, ev.at{endpoints_sql}, r.* FROM r, ev")
    with connection.cursor() as cursor:
        cursor.execute(sql, (*source_params, *params))
        found = list(cursor.fetchone())
    row.pk, row.at = found[0], found[1]
    endpoints, source = (found[2], found[3:]) if endpoints_sql else (None, found[2:])
    if id_key is None:
        row.job_id = source[0]
    else:
        row.data[id_key] = source[0]
    row._state.adding, row._state.db = False, connection.alias
    event_written(row, endpoints=endpoints_parse(endpoints) if endpoints_sql else [])
    return row, source


def event_row(*, kind: Event | str, email: str = "", enrollment: Enrollment | int | None = None,
              job: SendJob | int | None = None, version_seen: int | None = None, worker_id: str = "",
              data: dict[str, Any] | None = None) -> TimelineEvent:
    """The (unsaved) row of one event."""
    return TimelineEvent(
        kind=Event(kind).value,
        email=email,
        enrollment_id=enrollment.pk if isinstance(enrollment, Enrollment) else enrollment,
        job_id=job.pk if isinstance(job, SendJob) else job,
        version_seen=version_seen,
        worker_id=worker_id,
        data=data or {},
    )


EVENT_TABLE = TimelineEvent._meta.db_table
EVENT_COLUMNS = ("kind", "email", "enrollment_id", "job_id", "version_seen", "worker_id", "data")


def event_values(row: TimelineEvent) -> list[Any]:
    """The parameters of EVENT_COLUMNS for an INSERT of `row` written by hand (here and in sequences.states)."""
    data_field = TimelineEvent._meta.get_field("data")
    return [row.kind, row.email, row.enrollment_id, row.job_id, row.version_seen, row.worker_id,
            data_field.get_db_prep_save(row.data, connection)]


def event_written(row: TimelineEvent, *, endpoints: list[tuple[int, list[str]]] | None = None) -> None:
    """What follows every timeline event in its transaction, however it was written (here, or by a state
    move's single statement in sequences.states): the outbound webhooks' outbox row.

    `endpoints`: the active webhook endpoints (id, event types) when the statement that wrote the event
    read them as well; None reads them here."""
    # Imported here because the outbox reads Event from this module (they would import each other).
    from .webhooks_out.outbox import outbox_write

    outbox_write(row, endpoints=endpoints)
