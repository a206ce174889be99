"""The send-job state machine: its edges in one table, every transition through `job_move`.

A transition is a compare-and-set UPDATE on (state, version); 0 rows updated
means someone else moved the job first, and the caller reloads instead of
retrying blindly. Each successful move writes its timeline event in the same
transaction.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import F

from .dbclock import DbClock
from .models import SendJob
from .timeline import event_record

S = SendJob.State

EDGES: dict[str, frozenset[str]] = {
    S.SCHEDULED: frozenset({S.QUEUED, S.CANCELED}),
    S.QUEUED: frozenset({S.CLAIMED, S.CANCELED, S.SCHEDULED}),
    # claimed -> queued: a lost claim (lease expired before authorization) is safe to hand out again.
    # claimed -> scheduled: outside the sending window or over the daily cap; try again later.
    S.CLAIMED: frozenset({S.AUTHORIZED, S.CANCELED, S.QUEUED, S.SCHEDULED}),
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
SENT_OR_SENDING = (S.AUTHORIZED, S.SUBMITTED, S.ACCEPTED)
FINAL = (S.CANCELED, S.FAILED, S.UNKNOWN)

# The timestamp field each target state stamps with the database clock.
STAMP: dict[str, str] = {
    S.QUEUED: "queued_at",
    S.CLAIMED: "claimed_at",
    S.AUTHORIZED: "authorized_at",
    S.SUBMITTED: "submitted_at",
    S.CANCELED: "canceled_at",
    S.FAILED: "finished_at",
    S.UNKNOWN: "finished_at",
}


class IllegalTransition(Exception):
    pass


def job_move(
    *,
    job: SendJob,
    to: str,
    event: str | None = None,
    worker_id: str = "",
    fields: dict[str, Any] | None = None,
    **event_data: Any,
) -> bool:
    """Move `job` from the state and version it was read with to `to`; requires a transaction.

    Returns False (and writes nothing) when the row no longer matches.
    """
    assert connection.in_atomic_block, "job transitions run inside a transaction"
    if to not in EDGES[job.state]:
        raise IllegalTransition(f"{job.state} -> {to} is not an edge of the send-job state machine")
    updates: dict[str, Any] = dict(fields or {})
    if to in STAMP:
        updates.setdefault(STAMP[to], DbClock())
    moved = SendJob.objects.filter(pk=job.pk, state=job.state, version=job.version).update(
        state=to, version=F("version") + 1, **updates
    )
    if not moved:
        return False
    event_record(
        kind=event or f"job_{to}",
        email=_email_of(job),
        enrollment=job.enrollment_id,
        job=job.pk,
        version_seen=job.version,
        worker_id=worker_id,
        step=_position_of(job),
        **{"from": job.state, "to": to},
        **event_data,
    )
    job.state, job.version = to, job.version + 1
    return True


def _email_of(job: SendJob) -> str:
    cache = getattr(job, "_email", None)
    if cache is None:
        cache = job.enrollment.contact.email
        job._email = cache  # type: ignore[attr-defined]
    return cache


def _position_of(job: SendJob) -> int:
    return job.step.position
