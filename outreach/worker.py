"""The RQ worker `manage.py rqworker` runs (settings.RQ["WORKER_CLASS"]): RQ's forking worker, except for the
queues whose jobs a reply's stop waits on (IN_PROCESS), which it runs itself.

A work horse is a fork of the worker process: it starts with what the worker had imported. RQ imports a
job's function in the horse, so a worker that never ran a job itself imported `sequences.tasks` (the
pipeline, the transports, the email package) again in every horse: 40-60 ms of every job on a 2-CPU
machine, more than the send it carries. Resolved in the worker before the fork, the module is imported
once for the worker's life, and every horse inherits it. The same holds for what a queue's jobs load on first
use (WARM): loaded in the worker at its start.

A poll of the `ingest` queue runs in the worker process, without a horse: a reply's stop waits for it, and a
horse costs a poll a fork and a new database connection, whose server process then reads its catalogues
afresh (268 against 150 ms a poll on a quiet machine, `bench watcher --folders 200`). The worker keeps its
database connection from one such job to the next, as Django does between requests, except that a connection
which failed, or was left inside a transaction, is closed first (`connections_checked`). Before it forks a
horse for any other job it closes its connections: a horse never shares the worker's. A poll that hangs is
ended by its job timeout (SIGALRM, as in a horse), and the IMAP and database timeouts bound it before that.
"""

from __future__ import annotations

from django.db import connections
from django.utils.module_loading import import_string
from django_rq.queues import DjangoRQ
from rq.defaults import DEFAULT_WORKER_TTL
from rq.worker import Worker as RqWorker
from rq.worker import WorkerStatus

from workspaces.scoping import current_scope, workspace_scope

# What a worker of a queue loads once, at its start, so that every work horse inherits it: ingestion's learned
# reply classifier (a second of imports and weights that a reply would otherwise wait for, in every horse).
WARM = {"ingest": "inbound.tasks.warm"}
# The queues whose jobs run in the worker process itself: the polls a reply's stop waits on.
IN_PROCESS = frozenset({"ingest"})


class Queue(DjangoRQ):
    """django-rq's queue (settings.RQ["QUEUE_CLASS"]); a job queued inside a workspace (a page's, an API call's)
    carries it in its meta, and runs inside it."""

    def create_job(self, *args, meta: dict | None = None, **kwargs):
        scope = current_scope()
        if scope is not None:
            # [workspace id, with_unowned]: the jobs already queued carry this list, so it keeps its shape
            meta = {**(meta or {}), "workspace": [scope.workspace_id, scope.with_unowned]}
        return super().create_job(*args, meta=meta, **kwargs)


def connections_checked() -> None:
    """Before a job runs in the worker process: keep each database connection the last job opened (CONN_MAX_AGE
    does not end it here), but close one that failed and no longer answers or that is not in autocommit, as
    Django does between requests (close_if_unusable_or_obsolete)."""
    for conn in connections.all(initialized_only=True):
        conn.close_at = None
        conn.close_if_unusable_or_obsolete()


class Worker(RqWorker):
    def work(self, *args, **kwargs):
        for name in self.queue_names():
            if name in WARM:
                import_string(WARM[name])()
        return super().work(*args, **kwargs)

    def execute_job(self, job, queue):
        if queue.name not in IN_PROCESS:
            connections.close_all()  # the horse opens its own: two processes never share one connection
            return super().execute_job(job, queue)
        # RQ's SimpleWorker.execute_job: the job in this process, its timeout by SIGALRM.
        connections_checked()
        execution = self.prepare_execution(job)
        self.perform_job(job, queue, execution)
        self.set_state(WorkerStatus.IDLE)
        return None

    def get_heartbeat_ttl(self, job, working_time: float = 0.0) -> int:
        if job.origin not in IN_PROCESS:
            return super().get_heartbeat_ttl(job, working_time)
        # As RQ's SimpleWorker: no heartbeat is sent while the job runs here, so the one before it lasts it out.
        return DEFAULT_WORKER_TTL if job.timeout == -1 else int(job.timeout or DEFAULT_WORKER_TTL) + 60

    def kill_horse(self, *args, **kwargs):
        if self.horse_pid:  # none while a job runs in this process: RQ would signal the worker's own group
            super().kill_horse(*args, **kwargs)

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
