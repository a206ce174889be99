"""One-statement reads of a send job with everything the pipeline's transactions need.

The send pipeline runs three short transactions per message (claim, authorize,
record). Each used to read the job, its enrollment, contact, sequence,
mailbox and step through several ORM queries; here one hand-written join
returns them all, and the rows become ordinary model instances with their
relations cached, so the services and state moves that follow work on them
unchanged and issue no further reads.

Which mailbox sends an enrollment's messages is decided here, once, for SQL
and for Python: `MAILBOX_JOIN` and `sending_mailbox`.

Every function requires the caller's transaction unless it says otherwise;
`job_lock` takes the enrollment lock of `sequences.locks`' order.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Model
from django.utils import timezone

from mailboxes.models import Mailbox

from .inserts import column_converters
from .models import Contact, Enrollment, ErasedAddress, SendJob, Sequence, Step, Suppression

# alias -> model, in the order of the SELECT list and of MAILBOX_JOIN's joins.
MODELS: tuple[tuple[str, type[Model]], ...] = (
    ("j", SendJob),
    ("e", Enrollment),
    ("c", Contact),
    ("s", Sequence),
    ("m", Mailbox),
    ("st", Step),
)
T = {alias: model._meta.db_table for alias, model in MODELS}

# The mailbox that sends for an enrollment: its own (mailbox rotation), or its sequence's for rows written
# without the services (sequences.services.rotation says the same in Python).
MAILBOX_JOIN = f"JOIN {T['m']} m ON m.id = COALESCE(e.mailbox_id, s.mailbox_id)"
JOINS = (
    f"FROM {T['j']} j JOIN {T['e']} e ON e.id = j.enrollment_id JOIN {T['c']} c ON c.id = e.contact_id "
    f"JOIN {T['s']} s ON s.id = e.sequence_id {MAILBOX_JOIN} JOIN {T['st']} st ON st.id = j.step_id"
)


def sending_mailbox(enrollment: Enrollment) -> Mailbox:
    """The mailbox that sends this enrollment's messages (the same rule as MAILBOX_JOIN)."""
    from .services.rotation import enrollment_mailbox  # here: the services import this module

    return enrollment_mailbox(enrollment)


@dataclass(frozen=True)
class Facts:
    """What the final check reads besides the rows, in the same statement: the clock, the ledger, the last step."""

    now: datetime  # the database clock when the statement ran
    suppressed: bool  # the latest ledger entry of the address or of its domain suppresses it
    previous_step_sent: bool  # step 1, or the step before was submitted (and not canceled at a provider)


def columns_of(alias: str, model: type[Model]) -> str:
    return ", ".join(f"{alias}.{f.column}" for f in model._meta.concrete_fields)


@cache
def _columns() -> str:
    return ", ".join(columns_of(alias, model) for alias, model in MODELS)


@cache
def _model_converters(model: type[Model], vendor: str) -> tuple[int, tuple[tuple[int, Any, tuple], ...]]:
    """How many concrete fields `model` has, and (position, column, converters) of those whose value the ORM
    would convert (on PostgreSQL few do: JSON, for one)."""
    fields = []
    for i, f in enumerate(model._meta.concrete_fields):
        col, converters = column_converters(f, vendor)
        if converters:
            fields.append((i, col, converters))
    return len(model._meta.concrete_fields), tuple(fields)


def instances(models: tuple[type[Model], ...], row: tuple) -> list[Model | None]:
    """One instance per model from consecutive column groups of `row` (None for a group of NULLs: an outer
    join that found nothing), as the ORM would build them."""
    out: list[Model | None] = []
    at = 0
    for model in models:
        count, converted = _model_converters(model, connection.vendor)
        values = row[at : at + count]
        at += count
        if values[0] is None:  # the primary key
            out.append(None)
            continue
        if converted:
            values = list(values)
            for i, col, converters in converted:
                for converter in converters:
                    values[i] = converter(values[i], col, connection)
        out.append(model.from_db(connection.alias, None, values))
    return out


def _hydrate(row: tuple) -> SendJob:
    """Model instances from one joined row, their relations cached as select_related would leave them."""
    job, enrollment, contact, sequence, mailbox, step = instances(tuple(model for _, model in MODELS), row)
    if enrollment.mailbox_id == mailbox.pk:
        enrollment.mailbox = mailbox
    if sequence.mailbox_id == mailbox.pk:
        sequence.mailbox = mailbox
    enrollment.sequence, enrollment.contact = sequence, contact
    job.enrollment, job.step = enrollment, step
    job._email = contact.email  # type: ignore[attr-defined]  # what the state moves write on the timeline
    _addresses_note(job.pk, contact.email)
    return job


def _now(value: Any) -> datetime:
    return value if connection.vendor == "postgresql" else timezone.now()


CLOCK = "clock_timestamp()"


def _clock_sql() -> str:
    return CLOCK if connection.vendor == "postgresql" else "NULL"


def left_sql(alias: str) -> str:
    """A message of ours (the job of `alias`) that really left: submitted or accepted, and not canceled at the
    provider before its send time. The one definition, in SQL: Python reads it as `job.really_left` from
    `enrollment_progress`."""
    return f"{alias}.state IN ('submitted', 'accepted') AND {alias}.provider_cancel_status <> 'confirmed'"


LEFT = left_sql("p")
# The enrollment's earlier messages that left (what a follow-up threads under). One row each, oldest step first.
SENT_BEFORE = (
    f"LEFT JOIN ({T['j']} p JOIN {T['st']} ps ON ps.id = p.step_id) ON p.enrollment_id = j.enrollment_id "
    f"AND ps.position < st.position AND {LEFT}"
)


# In a SELECT: the caller's transaction commits without waiting for its WAL to reach the disk (PostgreSQL's
# synchronous_commit, for this transaction only). One value per row, ignored.
UNFLUSHED_COMMIT = "set_config('synchronous_commit', 'off', true)"
# In a SELECT: the caller's transaction waits for its flush even on a server configured not to
# (synchronous_commit off), and is left as configured otherwise (on, local, or a standby's remote_*).
FLUSHED_COMMIT = ("CASE WHEN current_setting('synchronous_commit') = 'off' "
                  "THEN set_config('synchronous_commit', 'on', true) END")


def job_read(job_id: int, *, unflushed_commit: bool = False) -> tuple[SendJob, datetime] | None:
    """The job with its enrollment, contact, sequence, mailbox and step, and the database clock; no lock.

    With the messages of the enrollment's earlier steps that left, for the threading of this one
    (`job.sent_before`: (Message-ID, subject template, threaded, position), oldest first; see
    `sequences.messages.thread_of`): one row per such message, one statement.

    `unflushed_commit`: the same statement makes the caller's COMMIT return before its WAL is flushed
    (PostgreSQL; see `send_job_claim` for the one transaction that may).
    """
    extra = f", {UNFLUSHED_COMMIT}" if unflushed_commit and connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_columns()}, {_clock_sql()}, p.message_id, ps.subject, ps.thread, ps.position{extra} "
            f"{JOINS} {SENT_BEFORE} WHERE j.id = %s ORDER BY ps.position, p.id",
            [job_id],
        )
        rows = cursor.fetchall()
    if not rows:
        return None
    if extra:
        rows = [row[:-1] for row in rows]
    job = _hydrate(rows[0][:-5])
    job.sent_before = [tuple(row[-4:]) for row in rows if row[-4] is not None]  # type: ignore[attr-defined]
    return job, _now(rows[0][-5])


def sent_before(job_id: int) -> list[tuple]:
    """What `job_read` leaves in `job.sent_before`, for a job read otherwise; one statement, no lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT p.message_id, ps.subject, ps.thread, ps.position FROM {T['j']} j "
            f"JOIN {T['st']} st ON st.id = j.step_id {SENT_BEFORE} WHERE j.id = %s AND p.id IS NOT NULL "
            "ORDER BY ps.position, p.id",
            [job_id],
        )
        return [tuple(row) for row in cursor.fetchall()]


def _lock_sql() -> str:
    lock = " FOR NO KEY UPDATE OF e" if connection.features.has_select_for_no_key_update else ""
    return (f"SELECT e.id, c.email FROM {T['j']} j JOIN {T['e']} e ON e.id = j.enrollment_id "
            f"JOIN {T['c']} c ON c.id = e.contact_id WHERE j.id = %s{lock}")


def _locked(job_id: int, row: tuple | None) -> tuple[int, str]:
    if row is None:
        raise SendJob.DoesNotExist(f"send job {job_id} does not exist")
    _addresses_note(job_id, row[1])
    return row[0], row[1]


def job_lock(job_id: int) -> tuple[int, str]:
    """Lock the job's enrollment (the row every stop path locks) and return its id and the contact's address.

    The first read folded into the lock: one statement. FOR NO KEY UPDATE, as
    `sequences.locks.enrollments_lock` takes it. Raises SendJob.DoesNotExist.
    """
    with connection.cursor() as cursor:
        cursor.execute(_lock_sql(), [job_id])
        return _locked(job_id, cursor.fetchone())


# The contact's address each recent job was read with, in this process: what lets `job_lock_read` send the
# read with the lock. Only a guess: the lock's own answer decides, and a wrong or missing guess costs one more
# statement, never a wrong read.
_ADDRESSES: dict[int, str] = {}
_ADDRESSES_KEPT = 256
_ADDRESSES_LOCK = threading.Lock()


def _addresses_note(job_id: int, email: str) -> None:
    with _ADDRESSES_LOCK:
        _ADDRESSES.pop(job_id, None)
        _ADDRESSES[job_id] = email
        while len(_ADDRESSES) > _ADDRESSES_KEPT:
            del _ADDRESSES[next(iter(_ADDRESSES))]


def job_lock_read(job_id: int) -> tuple[SendJob, Facts]:
    """job_lock, then job_read_checked: the rows and the final check's facts read after the lock was granted.

    On PostgreSQL, when this process read the job before (its claim, or an earlier transaction of the
    pipeline), both statements go to the server together in one round trip (psycopg's pipeline mode). The
    server still runs them one after the other, each with its own snapshot: the read's is taken once the
    lock is granted, exactly as when they are sent apart. The read names the contact's address (the
    ledger's key); if the lock finds another address than the one the read was sent with, the read is run
    again with the lock's.
    """
    guess = _ADDRESSES.get(job_id)
    if guess is None or connection.vendor != "postgresql":
        _, email = job_lock(job_id)
        return job_read_checked(job_id, email=email)
    read_sql, read_params = _read_checked_sql(job_id, guess)
    with connection.cursor() as lock_cursor, connection.cursor() as read_cursor:
        with connection.wrap_database_errors, connection.connection.pipeline():
            lock_cursor.execute(_lock_sql(), [job_id])
            read_cursor.execute(read_sql, read_params)
        _, email = _locked(job_id, lock_cursor.fetchone())
        row = read_cursor.fetchone()
    if email != guess:
        return job_read_checked(job_id, email=email)
    return _checked(row)


SUPPRESSION = Suppression._meta.db_table
ERASED = ErasedAddress._meta.db_table


def job_read_checked(job_id: int, *, email: str) -> tuple[SendJob, Facts]:
    """After job_lock: the rows and the final check's facts, in one statement.

    It runs after the enrollment lock was granted, so under READ COMMITTED its
    snapshot holds every stop that committed before (a stop that comes later
    waits for this transaction). The ledger is read once for the address and
    its domain: the latest entry of each value decides; the hashed ledger of
    erased people in the same lookup.

    On PostgreSQL it also makes the caller's COMMIT wait for the disk where the
    server is set not to (`FLUSHED_COMMIT`): the final check must be durable
    before a message is handed off, or a crash could undo it after the message
    left, and the message would be sent again.

    The mailbox row is read FOR SHARE: a pause or block that does not lock the
    enrollments first (the deliverability guardrail, a mailbox-level failure)
    either committed before this read, which then sees it, or waits for this
    transaction; concurrent authorizations share the lock.
    """
    sql, params = _read_checked_sql(job_id, email)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return _checked(cursor.fetchone())


def _read_checked_sql(job_id: int, email: str) -> tuple[str, list]:
    from .selectors import normalize_email
    from .services.suppressions import address_digest

    address = normalize_email(email)
    domain = "@" + address.rsplit("@", 1)[-1]
    share = " FOR SHARE OF m" if connection.features.has_select_for_update_of else ""
    flushed = f", {FLUSHED_COMMIT}" if connection.vendor == "postgresql" else ""
    sql = (
        f"SELECT {_columns()}, {_clock_sql()}, "
        f"(EXISTS (SELECT 1 FROM {SUPPRESSION} sp WHERE sp.value IN (%s, %s) AND sp.action = 'add' "
        f"AND sp.id = (SELECT MAX(l.id) FROM {SUPPRESSION} l WHERE l.value = sp.value)) "
        f"OR EXISTS (SELECT 1 FROM {ERASED} x WHERE x.digest = %s)), "
        f"(st.position = 1 OR EXISTS (SELECT 1 FROM {T['j']} p JOIN {T['st']} ps ON ps.id = p.step_id "
        f"WHERE p.enrollment_id = j.enrollment_id AND ps.position = st.position - 1 "
        f"AND {LEFT})){flushed} "
        f"{JOINS} WHERE j.id = %s{share}"
    )
    return sql, [address, domain, address_digest(address), job_id]


def _checked(row: tuple) -> tuple[SendJob, Facts]:
    if connection.vendor == "postgresql":
        row = row[:-1]  # FLUSHED_COMMIT's value
    job = _hydrate(row[:-3])
    return job, Facts(now=_now(row[-3]), suppressed=bool(row[-2]), previous_step_sent=bool(row[-1]))


def last_authorized_to(email: str) -> tuple[int, Mailbox] | None:
    """The latest job to this (normalized) address that passed the final check, and the mailbox that sent it
    (MAILBOX_JOIN): what a hard bounce or complaint is counted against. One statement, no lock."""
    sql = (f"SELECT j.id, {columns_of('m', Mailbox)} FROM {T['j']} j JOIN {T['e']} e ON e.id = j.enrollment_id "
           f"JOIN {T['c']} c ON c.id = e.contact_id JOIN {T['s']} s ON s.id = e.sequence_id {MAILBOX_JOIN} "
           "WHERE c.email = %s AND j.authorized_at IS NOT NULL ORDER BY j.authorized_at DESC, j.id DESC LIMIT 1")
    with connection.cursor() as cursor:
        cursor.execute(sql, [email])
        row = cursor.fetchone()
    if row is None:
        return None
    (mailbox,) = instances((Mailbox,), row[1:])
    return row[0], mailbox


def enrollment_jobs(enrollment_id: int) -> list[SendJob]:
    """Every job of the enrollment, by id, each with its step loaded: one statement (what a stop reads under
    the enrollment lock)."""
    sql = (f"SELECT {columns_of('j', SendJob)}, {columns_of('st', Step)} FROM {T['j']} j "
           f"JOIN {T['st']} st ON st.id = j.step_id WHERE j.enrollment_id = %s ORDER BY j.id")
    with connection.cursor() as cursor:
        cursor.execute(sql, [enrollment_id])
        rows = cursor.fetchall()
    jobs = []
    for row in rows:
        job, step = instances((SendJob, Step), row)
        job.step = step
        jobs.append(job)
    return jobs


def enrollment_progress(enrollment: Enrollment) -> tuple[list[Step], list[SendJob], datetime]:
    """Every step of the enrollment's sequence (by position), the enrollment's jobs that are not canceled (by
    id, each with its step loaded, and `job.really_left`: `left_sql`), and the database clock, in one
    statement. For what the enrollment sends next (`sequences.services.scheduling`); the caller holds the
    enrollment lock."""
    sql = (
        f"SELECT {columns_of('st', Step)}, {columns_of('j', SendJob)}, {left_sql('j')}, {_clock_sql()} "
        f"FROM {T['st']} st "
        f"LEFT JOIN {T['j']} j ON j.step_id = st.id AND j.enrollment_id = %s AND j.state <> 'canceled' "
        "WHERE st.sequence_id = %s ORDER BY st.position, j.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [enrollment.pk, enrollment.sequence_id])
        rows = cursor.fetchall()
    steps: dict[int, Step] = {}
    jobs: list[SendJob] = []
    for row in rows:
        step, job = instances((Step, SendJob), row[:-2])
        step = steps.setdefault(step.pk, step)
        if job is not None:
            job.step = step
            job.really_left = bool(row[-2])  # type: ignore[attr-defined]
            jobs.append(job)
    jobs.sort(key=lambda job: job.pk)
    now = _now(rows[-1][-1]) if rows else timezone.now()
    return list(steps.values()), jobs, now
