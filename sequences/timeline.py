"""Timeline events: written inside the transaction of the change they describe."""

from __future__ import annotations

from typing import Any

from django.db import connection

from .models import Enrollment, SendJob, TimelineEvent


def event_record(
    *,
    kind: str,
    email: str = "",
    enrollment: Enrollment | int | None = None,
    job: SendJob | int | None = None,
    version_seen: int | None = None,
    worker_id: str = "",
    **data: Any,
) -> TimelineEvent:
    """Append one event; requires the caller's transaction (stamped by the database clock)."""
    assert connection.in_atomic_block, "timeline events are written inside the transition's transaction"
    return TimelineEvent.objects.create(
        kind=kind,
        email=email,
        enrollment_id=enrollment.pk if isinstance(enrollment, Enrollment) else enrollment,
        job_id=job.pk if isinstance(job, SendJob) else job,
        version_seen=version_seen,
        worker_id=worker_id,
        data=data,
    )
