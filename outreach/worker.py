"""The RQ worker `manage.py rqworker` runs (settings.RQ["WORKER_CLASS"]): RQ's forking worker, with each job's
module imported in the worker itself, before the fork.

A work horse is a fork of the worker process: it starts with what the worker had imported. RQ imports a
job's function in the horse, so a worker that never ran a job itself imported `sequences.tasks` (the
pipeline, the transports, the email package) again in every horse: 40-60 ms of every job on a 2-CPU
machine, more than the send it carries. Resolved in the worker before the fork, the module is imported
once for the worker's life, and every horse inherits it. The same holds for what a queue's jobs load on first
use (WARM): loaded in the worker at its start.
"""

from __future__ import annotations

from django.utils.module_loading import import_string
from django_rq.queues import DjangoRQ
from rq.worker import Worker as RqWorker

from workspaces.scoping import current_scope, workspace_scope

# What a worker of a queue loads once, at its start, so that every work horse inherits it: ingestion's learned
# reply classifier (a second of imports and weights that a reply would otherwise wait for, in every horse).
WARM = {"ingest": "inbound.tasks.warm"}


class Queue(DjangoRQ):
    """django-rq's queue (settings.RQ["QUEUE_CLASS"]); a job queued inside a workspace (a page's, an API call's)
    carries it in its meta, and runs inside it."""

    def create_job(self, *args, meta: dict | None = None, **kwargs):
        scope = current_scope()
        if scope is not None:
            # [workspace id, with_unowned]: the jobs already queued carry this list, so it keeps its shape
            meta = {**(meta or {}), "workspace": [scope.workspace_id, scope.with_unowned]}
        return super().create_job(*args, meta=meta, **kwargs)


class Worker(RqWorker):
    def work(self, *args, **kwargs):
        for name in self.queue_names():
            if name in WARM:
                import_string(WARM[name])()
        return super().work(*args, **kwargs)

    def fork_work_horse(self, job, queue):
        try:
            job.func  # noqa: B018 - imports the job's module here, once, rather than in every horse
        except Exception:  # noqa: BLE001 - a function that cannot be imported fails its job in the horse, as in RQ
            pass
        super().fork_work_horse(job, queue)

    def perform_job(self, job, queue, *args, **kwargs):
        carried = (job.meta or {}).get("workspace")
        if not carried:
            return super().perform_job(job, queue, *args, **kwargs)
        with workspace_scope(int(carried[0]), with_unowned=bool(carried[1])):
            return super().perform_job(job, queue, *args, **kwargs)
