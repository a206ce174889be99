"""Any number of schedulers, one working: RQ's cron scheduler behind a lease with a fencing term in Redis.

Every `manage.py rqcron` process (outreach/management/commands/rqcron.py) runs a `LeasedCronScheduler`. It
enqueues only while it holds the scheduler lease: one Redis key whose value names the holder, its term (a
number incremented at every take-over) and when the term began, with a time to live of
OUTREACH_SCHEDULER_LEASE_SECONDS. The holder renews it every quarter of that; the others try to take it as
often, so a dead leader's work resumes within 1.25 leases (25 s by default). A scheduler that stops (SIGTERM,
Ctrl-C) gives the lease up at once.

The fence is Redis itself. Each enqueue is one MULTI/EXEC transaction under WATCH of the lease key, after
reading that the key still holds this process's own value: when the lease changed hands or expired after
that read, EXEC refuses and nothing is enqueued. So a leader paused anywhere (SIGSTOP, a frozen VM, a long
GC), even between its check and its enqueue, wakes up to a refused transaction and becomes a follower.

Why Redis and not a database row: what the lease guards is the enqueue into Redis, and only the store that
takes the enqueue can refuse a stale one in the same step. A row lease in the database could be checked
just before the enqueue, never with it (a pause between the two would still enqueue), and would make the
scheduler depend on the database as well as Redis. Times come from Redis (TTL, TIME): one clock for every
host, as the database clock is for the send pipeline.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass

from django.conf import settings
from django_rq.cron import DjangoCronScheduler
from redis import Redis, WatchError
from rq import cron_job_registry
from rq.cron import CronJob
from rq.defaults import DEFAULT_CRON_JOB_HISTORY_LIMIT, DEFAULT_CRON_JOB_HISTORY_TTL
from rq.job import Job
from rq.queue import Queue
from rq.utils import now

LEASE_KEY = "outreach:scheduler:lease"
TERM_KEY = "outreach:scheduler:term"
# A drill: the leader stops itself (SIGSTOP) once, after reading that it holds the lease and before its
# enqueue commits, the worst moment to be paused (tests/ops/test_scheduler_lease.py).
DRILL_STOP_ENV = "OUTREACH_SCHEDULER_DRILL_STOP_AFTER_CHECK"

log = logging.getLogger("rq.cron")

# Take the lease when nobody holds it: a new term, "<term> <start, ms of Redis's clock> <holder>".
_ACQUIRE = """
if redis.call('exists', KEYS[1]) == 1 then return false end
local term = redis.call('incr', KEYS[2])
local t = redis.call('time')
local value = string.format('%d %d %s', term, t[1] * 1000 + math.floor(t[2] / 1000), ARGV[1])
redis.call('set', KEYS[1], value, 'px', ARGV[2])
return value
"""
# Renew (or give up) the lease only while it still holds this holder's value.
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


@dataclass(frozen=True)
class Lease:
    """The scheduler lease as Redis holds it now (for /healthz and the tests)."""

    holder: str  # the scheduler's name: host:pid:random
    term: int
    held_for_seconds: float  # since this holder took it
    renewed_seconds_ago: float
    expires_in_seconds: float


def lease_read(connection: Redis) -> Lease | None:
    """The current lease, or None when no scheduler holds it."""
    with connection.pipeline(transaction=True) as pipe:
        pipe.get(LEASE_KEY)
        pipe.pttl(LEASE_KEY)
        pipe.time()
        value, ttl_ms, (seconds, micros) = pipe.execute()
    if value is None or ttl_ms < 0:
        return None
    term, started_ms, holder = value.decode().split(" ", 2)
    clock_ms = seconds * 1000 + micros / 1000
    return Lease(holder=holder, term=int(term),
                 held_for_seconds=round(max(clock_ms - int(started_ms), 0) / 1000, 3),
                 renewed_seconds_ago=round(max(lease_seconds() - ttl_ms / 1000, 0.0), 3),
                 expires_in_seconds=round(ttl_ms / 1000, 3))


def lease_seconds() -> float:
    return float(settings.OUTREACH_SCHEDULER_LEASE_SECONDS)


class SchedulerLease:
    """This process's side of the lease: take or renew it, enqueue under its fence, give it up."""

    def __init__(self, connection: Redis, *, holder: str, seconds: float):
        self.connection = connection
        self.holder = holder
        self.ttl_ms = max(int(seconds * 1000), 1)
        self.check_every = seconds / 4
        self.value: bytes | None = None  # what the lease key holds while this process leads
        self._acquire = connection.register_script(_ACQUIRE)
        self._renew = connection.register_script(_RENEW)
        self._release = connection.register_script(_RELEASE)
        self._drill_stop = os.environ.get(DRILL_STOP_ENV) == "1"

    @property
    def term(self) -> int | None:
        return int(self.value.split(b" ", 1)[0]) if self.value else None

    def hold(self) -> bool:
        """Renew the lease if this process has it, else try to take it; True while this process leads."""
        if self.value is not None and not self._renew(keys=[LEASE_KEY], args=[self.value, self.ttl_ms]):
            self._lost()
        if self.value is None:
            self.value = self._acquire(keys=[LEASE_KEY, TERM_KEY], args=[self.holder, self.ttl_ms])
            if self.value is not None:
                log.info("scheduler %s took the lease (term %s): it enqueues the periodic jobs", self.holder,
                         self.term)
        return self.value is not None

    def enqueue(self, cron_job: CronJob) -> Job | None:
        """Enqueue `cron_job` in one transaction with the check that this process still holds the lease.

        None (and nothing enqueued) when it does not: another scheduler took over meanwhile."""
        if self.value is None:
            return None
        queue = Queue(cron_job.queue_name, connection=self.connection)
        meta = {**cron_job.job_options.get("meta", {}), "scheduler": self.holder, "scheduler_term": self.term}
        options = {**cron_job.job_options, "meta": meta}
        with self.connection.pipeline() as pipe:
            try:
                pipe.watch(LEASE_KEY)
                if pipe.get(LEASE_KEY) != self.value:
                    self._lost()
                    return None
                if self._drill_stop:
                    self._drill_stop = False
                    os.kill(os.getpid(), signal.SIGSTOP)
                pipe.multi()
                job = queue.enqueue(cron_job.func, args=cron_job.args, kwargs=cron_job.kwargs, **options,
                                    pipeline=pipe)
                # The job history, as rq.cron.CronJob.enqueue keeps it (django-rq's admin shows it).
                enqueued_at = job.enqueued_at.timestamp()
                pipe.zadd(cron_job.job_history_key, {job.id: enqueued_at})
                pipe.zremrangebyrank(cron_job.job_history_key, 0, -(DEFAULT_CRON_JOB_HISTORY_LIMIT + 1))
                pipe.expire(cron_job.job_history_key, DEFAULT_CRON_JOB_HISTORY_TTL)
                cron_job_registry.add(cron_job.name, pipe, enqueue_timestamp=enqueued_at)
                pipe.execute()
            except WatchError:  # the lease key changed (taken over, or expired) since the read above
                self._lost()
                return None
        return job

    def release(self) -> None:
        if self.value is not None:
            self._release(keys=[LEASE_KEY], args=[self.value])
            self.value = None

    def _lost(self) -> None:
        log.warning("scheduler %s lost the lease (term %s): another scheduler enqueues; this one waits",
                    self.holder, self.term)
        self.value = None


class LeasedCronScheduler(DjangoCronScheduler):
    """django-rq's cron scheduler that enqueues only under the scheduler lease; any number may run."""

    lease: SchedulerLease

    def start(self) -> None:
        self.lease = SchedulerLease(self.connection, holder=self.name, seconds=lease_seconds())
        super().start()

    def enqueue_jobs(self) -> list[CronJob]:
        if not self.lease.hold():
            return []
        enqueue_time = now()
        enqueued = []
        for job in self._cron_jobs:
            if job.should_run():
                if self.lease.enqueue(job) is None:
                    break  # the lease is gone: a follower from now on
                job.set_enqueue_time(enqueue_time)
                enqueued.append(job)
        return enqueued

    def calculate_sleep_interval(self) -> float:
        # Wake at least every quarter lease: the leader to renew it, the others to take it when it expires.
        return min(super().calculate_sleep_interval(), self.lease.check_every)

    def register_death(self, pipeline=None) -> None:
        self.lease.release()  # a successor takes over now, not when the lease would have expired
        super().register_death(pipeline)
