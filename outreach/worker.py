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
from rq.worker import Worker as RqWorker

# What a worker of a queue loads once, at its start, so that every work horse inherits it: ingestion's learned
# reply classifier (a second of imports and weights that a reply would otherwise wait for, in every horse).
WARM = {"ingest": "inbound.tasks.warm"}


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
