"""The RQ worker `manage.py rqworker` runs (settings.RQ["WORKER_CLASS"]): RQ's forking worker, with each job's
module imported in the worker itself, before the fork.

A work horse is a fork of the worker process: it starts with what the worker had imported. RQ imports a
job's function in the horse, so a worker that never ran a job itself imported `sequences.tasks` (the
pipeline, the transports, the email package) again in every horse: 40-60 ms of every job on a 2-CPU
machine, more than the send it carries. Resolved in the worker before the fork, the module is imported
once for the worker's life, and every horse inherits it.
"""

from __future__ import annotations

from rq.worker import Worker as RqWorker


class Worker(RqWorker):
    def fork_work_horse(self, job, queue):
        try:
            job.func  # noqa: B018 - imports the job's module here, once, rather than in every horse
        except Exception:  # noqa: BLE001 - a function that cannot be imported fails its job in the horse, as in RQ
            pass
        super().fork_work_horse(job, queue)
