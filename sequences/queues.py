"""Enqueueing RQ work, by dotted path: services import this leaf, never the task modules.

Enqueue only after the transaction that made the work due has committed
(`transaction.on_commit`), with ids only: Redis is transport, the database
decides.
"""

from __future__ import annotations

import django_rq
from django.db import transaction

SEND_TASK = "sequences.tasks.send_job"
PROVIDER_CANCEL_TASK = "sequences.tasks.provider_cancel"
PROBE_TASK = "sequences.tasks.mailbox_probe"
GUARDRAIL_SWEEP_TASK = "sequences.tasks.mailbox_guardrail_sweep"

# Set when a send job is enqueued, expiring after the stale period: a queued
# job is enqueued again only when its mark is gone (lost with Redis, or the
# job has waited a whole period). Without it a backlog older than the period
# would be enqueued again on every dispatcher pass.
ENQUEUED_MARK = "outreach:send-enqueued:{}"
STALE_AFTER_SECONDS = 600


def enqueue_sends(job_ids: list[int], *, mark_seconds: int = STALE_AFTER_SECONDS) -> None:
    """Enqueue send jobs after the current transaction commits (at once outside one)."""
    if not job_ids:
        return
    queue = django_rq.get_queue("send")

    def push() -> None:
        for job_id in job_ids:
            queue.enqueue(SEND_TASK, job_id, result_ttl=3600, failure_ttl=86400)
            queue.connection.set(ENQUEUED_MARK.format(job_id), 1, ex=max(mark_seconds, 1))

    transaction.on_commit(push)


def send_enqueued_recently(job_id: int) -> bool:
    """Whether a send of this job was enqueued within the stale period (its mark is still in Redis)."""
    return bool(django_rq.get_queue("send").connection.exists(ENQUEUED_MARK.format(job_id)))


def enqueue_provider_cancel(job_id: int) -> None:
    """Call only after the transaction that requested the cancel has committed (transaction.on_commit)."""
    django_rq.get_queue("default").enqueue(PROVIDER_CANCEL_TASK, job_id, result_ttl=3600, failure_ttl=86400)


def enqueue_probe(mailbox_id: int) -> None:
    """A blocked mailbox's probe; a duplicate finds it no longer due and does nothing."""
    django_rq.get_queue("default").enqueue(PROBE_TASK, mailbox_id, result_ttl=3600, failure_ttl=86400)


def enqueue_guardrail_sweep(mailbox_id: int) -> None:
    """Call only after the transaction that paused the mailbox has committed (transaction.on_commit)."""
    django_rq.get_queue("default").enqueue(GUARDRAIL_SWEEP_TASK, mailbox_id, result_ttl=3600, failure_ttl=86400)
WEBHOOK_DELIVER_TASK = "sequences.tasks.webhook_deliver"


def enqueue_webhook_deliveries(delivery_ids: list[int]) -> None:
    """Call only after the transaction that wrote the outbox rows has committed (transaction.on_commit)."""
    queue = django_rq.get_queue("default")
    for delivery_id in delivery_ids:
        queue.enqueue(WEBHOOK_DELIVER_TASK, delivery_id, result_ttl=3600, failure_ttl=86400)
