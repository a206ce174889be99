"""Bulk enrollment: up to 10,000 contacts per call, enrolled by an RQ job in batches, with per-row results.

The call validates every row (as `manage.py enroll` does), records the
validated rows in a BulkEnrollment row and enqueues the job after commit; the
status URL reads the row. Each batch is one `enrollments_create_batch`
transaction followed by the progress update, so a worker that dies part-way
leaves the rows already enrolled recorded and a re-run skips them as
"already enrolled".
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import django_rq
from django.db import transaction

from api.models import BulkEnrollment
from db.clock import DbClock
from sequences.models import Sequence
from sequences.services.common import ServiceError
from sequences.services.enrollments import ContactRow, enrollments_create_batch
from sequences.storable import shown

from .contacts import contact_row

BULK_ENROLL_TASK = "api.tasks.bulk_enrollment_run"

MAX_ROWS = 10_000
BATCH = 500
B = BulkEnrollment.Status


def bulk_enrollment_submit(
    *, sequence_id: int, contacts: list[dict[str, Any]], update_contacts: bool, token_id: int | None
) -> BulkEnrollment:
    """Validate every row, record the call, enqueue its job after commit."""
    if len(contacts) > MAX_ROWS:
        raise ServiceError(f"at most {MAX_ROWS:,} contacts per call ({len(contacts):,} given)")
    if not Sequence.objects.filter(pk=sequence_id).exists():
        raise ServiceError(f"no sequence {sequence_id}")
    rows, results, seen = [], [], {}
    for line, data in enumerate(contacts, 1):
        email = shown(str(data.get("email", "")))  # as it is stored in the results and shown back
        try:
            row = contact_row(data, line=line)
        except ServiceError as exc:
            results.append({"line": line, "email": email, "status": "rejected", "reason": str(exc)})
            continue
        if row.email in seen:
            results.append(
                {
                    "line": line,
                    "email": row.email,
                    "status": "rejected",
                    "reason": f"{row.email} duplicates row {seen[row.email]}",
                }
            )
            continue
        seen[row.email] = line
        rows.append(asdict(row))
        results.append({"line": line, "email": row.email, "status": "pending"})
    with transaction.atomic(durable=True):
        bulk = BulkEnrollment.objects.create(
            sequence_id=sequence_id,
            update_contacts=update_contacts,
            token_id=token_id,
            total=len(contacts),
            rows=rows,
            results=results,
            processed=len(contacts) - len(rows),
        )
        transaction.on_commit(lambda: enqueue_bulk_enrollment(bulk.pk))
    return bulk


def bulk_enrollment_run(*, bulk_id: int) -> str:
    """The RQ job: enroll the recorded rows batch by batch, recording each row's result."""
    moved = BulkEnrollment.objects.filter(pk=bulk_id, status__in=(B.QUEUED, B.RUNNING)).update(status=B.RUNNING)
    if not moved:
        return "not queued (done already)"
    bulk = BulkEnrollment.objects.get(pk=bulk_id)
    results = {r["line"]: r for r in bulk.results}
    try:
        pending = [ContactRow(**r) for r in bulk.rows if results[r["line"]]["status"] == "pending"]
        for start in range(0, len(pending), BATCH):
            batch = pending[start : start + BATCH]
            outcome = enrollments_create_batch(
                sequence_id=bulk.sequence_id,
                rows=batch,
                update_contacts=bulk.update_contacts,
                actor=f"api bulk {bulk.pk}",
            )
            rejected = dict(outcome.rejected)
            ids = outcome.enrollment_ids
            for row in batch:
                if row.line in rejected:
                    results[row.line] |= {"status": "rejected", "reason": rejected[row.line]}
                else:
                    results[row.line] |= {"status": "enrolled", "enrollment_id": ids.get(row.email)}
            done = sum(r["status"] != "pending" for r in results.values())
            BulkEnrollment.objects.filter(pk=bulk_id).update(results=list(results.values()), processed=done)
    except ServiceError as exc:
        _failed(bulk_id, str(exc))
        return f"failed: {exc}"
    except Exception as exc:
        # Anything else (a database refusing the batch, a bug): the call still ends as failed with a reason, and
        # RQ keeps the traceback in its failed registry. The batch's own transaction was rolled back, so this
        # update commits on its own.
        _failed(bulk_id, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        raise
    BulkEnrollment.objects.filter(pk=bulk_id).update(status=B.DONE, finished_at=DbClock(), processed=bulk.total)
    return f"{sum(r['status'] == 'enrolled' for r in results.values())} enrolled"


def _failed(bulk_id: int, reason: str) -> None:
    """The call ends as failed with `reason` (the rows enrolled by earlier batches stay enrolled)."""
    with transaction.atomic(durable=True):
        BulkEnrollment.objects.filter(pk=bulk_id).update(status=B.FAILED, error=reason, finished_at=DbClock())


def bulk_out(bulk: BulkEnrollment, *, status_url: str) -> dict[str, Any]:
    results = bulk.results
    return {
        "id": bulk.pk,
        "status": bulk.status,
        "status_url": status_url,
        "sequence_id": bulk.sequence_id,
        "total": bulk.total,
        "processed": bulk.processed,
        "enrolled": sum(r["status"] == "enrolled" for r in results),
        "rejected": sum(r["status"] == "rejected" for r in results),
        "error": bulk.error,
        "created_at": bulk.created_at,
        "finished_at": bulk.finished_at,
        "results": results,
    }


def enqueue_bulk_enrollment(bulk_id: int) -> None:
    """After the transaction that recorded the bulk enrollment has committed."""
    django_rq.get_queue("default").enqueue(BULK_ENROLL_TASK, bulk_id, result_ttl=3600, failure_ttl=86400,
                                           job_timeout=3600)
