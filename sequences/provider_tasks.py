"""RQ tasks for provider-side work: take ids, call the service. Redis is transport, never the record."""

from __future__ import annotations

import logging

import django_rq

from . import provider_services

log = logging.getLogger("outreach.tasks")


def provider_cancel(job_id: int) -> str:
    status = provider_services.send_job_provider_cancel(job_id=job_id)
    log.info("job %s: provider cancel -> %s", job_id, status)
    return status


def enqueue_provider_cancel(job_id: int) -> None:
    """Call only after the transaction that requested the cancel has committed (transaction.on_commit)."""
    django_rq.get_queue("default").enqueue(provider_cancel, job_id, result_ttl=3600, failure_ttl=86400)
