"""RQ task functions: take ids, call a service. Redis is transport, never the record."""

from __future__ import annotations

import logging
import os
import socket

import django_rq
from django.db import transaction

from . import services
from .pipeline import send_job_process
from .provider_services import provider_cancels_stale
from .provider_tasks import enqueue_provider_cancel

log = logging.getLogger("outreach.tasks")


def worker_identity() -> str:
    try:
        from rq import get_current_job

        current = get_current_job()
    except Exception:  # noqa: BLE001 - outside a worker
        current = None
    rq_id = current.id if current else "inline"
    return f"{socket.gethostname()}:{os.getpid()}:{rq_id}"


def send_job(job_id: int) -> str:
    outcome = send_job_process(job_id=job_id, worker_id=worker_identity())
    log.info("job %s -> %s %s", job_id, outcome.state, outcome.detail)
    return outcome.state


# Set when a send job is enqueued, expiring after the stale period: a queued
# job is enqueued again only when its mark is gone (lost with Redis, or the
# job has waited a whole period). Without it a backlog older than the period
# would be enqueued again on every dispatcher pass.
ENQUEUED_MARK = "outreach:send-enqueued:{}"
STALE_AFTER_SECONDS = 600


def enqueue_sends(job_ids: list[int], *, mark_seconds: int = STALE_AFTER_SECONDS) -> None:
    """Enqueue after commit, with ids only."""
    if not job_ids:
        return
    queue = django_rq.get_queue("send")

    def push() -> None:
        for job_id in job_ids:
            queue.enqueue(send_job, job_id, result_ttl=3600, failure_ttl=86400)
            queue.connection.set(ENQUEUED_MARK.format(job_id), 1, ex=max(mark_seconds, 1))

    transaction.on_commit(push)


def dispatch(stale_after_seconds: int = STALE_AFTER_SECONDS) -> dict[str, int]:
    """One dispatcher pass: queue due jobs, re-enqueue queued jobs Redis may have lost, sweep leases."""
    sweep = services.leases_sweep()
    due = services.dispatch_due()
    connection = django_rq.get_queue("send").connection
    stale = [
        job_id for job_id in services.queued_stale(older_than_seconds=stale_after_seconds)
        if job_id not in due and not connection.exists(ENQUEUED_MARK.format(job_id))
    ]
    requeue = sweep["requeued_ids"] + due + stale
    enqueue_sends(requeue, mark_seconds=stale_after_seconds)
    # Provider cancel requests whose RQ job was lost: ask again while the send time is ahead.
    for job_id in provider_cancels_stale():
        enqueue_provider_cancel(job_id)
    return {"queued": len(due), "re_enqueued": len(stale) + sweep["requeued"], "marked_unknown": sweep["unknown"]}
