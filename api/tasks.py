"""The API's jobs on RQ: a bulk enrollment accepted by POST /api/v1/enrollments/bulk, run in the background, and
the hourly purge of old idempotency keys (outreach.cron)."""

from __future__ import annotations

from . import bulk
from .idempotency import idempotency_keys_purge


def bulk_enrollment_run(bulk_id: int) -> str:
    return bulk.bulk_enrollment_run(bulk_id=bulk_id)


def api_housekeeping() -> int:
    """Periodic: forget idempotency keys older than a day."""
    return idempotency_keys_purge()
