"""Any number of schedulers, one working: real `manage.py rqcron outreach.cron` processes (outreach/scheduler.py).

The lease lives 3 s here (20 s by default) and the dispatcher runs every second (10 s by default); no worker
runs, so every dispatcher pass a scheduler enqueues stays in RQ's record of the cron job's enqueues, with
the time it was enqueued. Each case fails with the lease taken away (`LeasedCronScheduler.enqueue_jobs`
enqueuing as django-rq's scheduler does): two schedulers then dispatch twice as often, and a paused one
enqueues its overdue passes when it wakes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from django.conf import settings
from rq.cron import get_cron_job_history_key
from rq.job import Job

from outreach.scheduler import DRILL_STOP_ENV, lease_read
from proving.harness.stack import Process, wait_for

pytestmark = pytest.mark.slow
INTERVAL = 1.0  # seconds between dispatcher passes
LEASE = 3.0
DISPATCH = get_cron_job_history_key("sequences.tasks.dispatch")


def scheduler(name: str, tmp_path: Path, **extra: str) -> Process:
    env = {key: value for key, value in os.environ.items() if key != DRILL_STOP_ENV}
    env.update(REDIS_URL=settings.REDIS_URL, OUTREACH_SCHEDULER_LEASE_SECONDS=str(LEASE),
               OUTREACH_DISPATCH_INTERVAL=str(int(INTERVAL)), PYTHONUNBUFFERED="1", **extra)
    return Process(name, ["rqcron", "outreach.cron", "--logging-level", "INFO"], env=env, log_dir=tmp_path)


def dispatches(conn, since: float = 0.0, until: float = float("inf")) -> list[tuple[str, float]]:
    """(job id, enqueued at) of the dispatcher passes enqueued in [since, until)."""
    return [(job_id.decode(), at) for job_id, at in conn.zrangebyscore(DISPATCH, since, until, withscores=True)
            if at < until]


def enqueued_by(conn, job_id: str) -> str:
    return Job.fetch(job_id, connection=conn).meta.get("scheduler", "")


def pid_of(holder: str) -> int:
    return int(holder.split(":")[-2])


def leader(conn, processes: list[Process]) -> Process:
    lease = wait_for(lambda: lease_read(conn), timeout=20, what="a scheduler to take the lease")
    (held,) = [p for p in processes if p.pid == pid_of(lease.holder)]
    return held


def stopped(process: Process) -> bool:
    stat = Path(f"/proc/{process.pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "T"


def at_most_one_scheduler_rate(conn, *, since: float, seconds: float) -> int:
    """The dispatcher passes enqueued in `seconds` from `since`: those of one scheduler, not of two."""
    wait_for(lambda: time.time() >= since + seconds, timeout=seconds + 5, what="the window to end")
    count = len(dispatches(conn, since, since + seconds))
    assert count <= seconds / INTERVAL + 1, f"{count} dispatcher passes in {seconds} s: more than one scheduler"
    assert count >= seconds / INTERVAL - 1, f"{count} dispatcher passes in {seconds} s: the dispatcher stalled"
    return count


def test_two_schedulers_dispatch_as_often_as_one(redis_conn, tmp_path):
    processes = [scheduler("a", tmp_path), scheduler("b", tmp_path)]
    try:
        wait_for(lambda: all(p.log_path.exists() and "registering birth" in p.log_path.read_text()
                             for p in processes), timeout=30, what="both schedulers to start")
        first = wait_for(lambda: dispatches(redis_conn), timeout=20, what="the first dispatcher pass")[0][1]
        at_most_one_scheduler_rate(redis_conn, since=first, seconds=5)
        assert all(p.alive() for p in processes)
        held = leader(redis_conn, processes)
        enqueuers = {enqueued_by(redis_conn, job_id) for job_id, _ in dispatches(redis_conn)}
        assert {pid_of(name) for name in enqueuers} == {held.pid}, "a pass was enqueued by the follower"
    finally:
        for p in processes:
            p.stop()


def test_killing_the_leader_hands_dispatching_to_another_scheduler_within_40_s(redis_conn, tmp_path):
    processes = [scheduler("a", tmp_path), scheduler("b", tmp_path)]
    try:
        held = leader(redis_conn, processes)
        (other,) = [p for p in processes if p is not held]
        wait_for(lambda: "registering birth" in other.log_path.read_text(), timeout=30, what="the other to start")
        first = wait_for(lambda: dispatches(redis_conn), timeout=20, what="the first dispatcher pass")[0][1]
        at_most_one_scheduler_rate(redis_conn, since=first, seconds=3)

        held.kill()  # SIGKILL: no chance to give the lease up
        killed_at = time.time()
        resumed = wait_for(lambda: dispatches(redis_conn, killed_at), timeout=40,
                           what="a dispatcher pass after the leader was killed")
        job_id, at = resumed[0]
        assert at - killed_at < 40
        assert pid_of(enqueued_by(redis_conn, job_id)) == other.pid
        at_most_one_scheduler_rate(redis_conn, since=at, seconds=3)
    finally:
        for p in processes:
            p.stop()


@pytest.mark.parametrize("moment", ["asleep", "between its check and its enqueue"])
def test_a_paused_leader_that_lost_the_lease_enqueues_nothing_when_it_wakes(redis_conn, tmp_path, moment):
    """SIGSTOP the leader (while it sleeps, or stopped by the drill right after it read that it holds the
    lease), let the other take over, SIGCONT it: no pass from the old leader after the take-over, no double
    dispatch."""
    drill = {DRILL_STOP_ENV: "1"} if moment != "asleep" else {}
    processes = [scheduler("first", tmp_path, **drill)]
    try:
        held = leader(redis_conn, processes)
        processes.append(scheduler("second", tmp_path))
        successor = processes[1]
        if moment == "asleep":
            wait_for(lambda: dispatches(redis_conn), timeout=20, what="the first dispatcher pass")
            os.kill(held.pid, signal.SIGSTOP)
        wait_for(lambda: stopped(held), timeout=20, what="the leader to be stopped")
        before = {job_id for job_id, _ in dispatches(redis_conn)}
        if moment != "asleep":
            assert not before  # stopped before its first enqueue committed

        wait_for(lambda: (lease := lease_read(redis_conn)) and pid_of(lease.holder) == successor.pid,
                 timeout=30, what="the second scheduler to take the lease")
        taken_over = wait_for(lambda: dispatches(redis_conn, time.time() - 0.5), timeout=10,
                              what="the new leader's first pass")[0][1]

        os.kill(held.pid, signal.SIGCONT)
        woke_at = time.time()
        wait_for(lambda: "lost the lease" in held.log_path.read_text(), timeout=10,
                 what="the old leader to see it lost the lease")
        at_most_one_scheduler_rate(redis_conn, since=woke_at, seconds=3)
        late = [job_id for job_id, _ in dispatches(redis_conn, taken_over)
                if pid_of(enqueued_by(redis_conn, job_id)) == held.pid]
        assert not late, f"the old leader enqueued {len(late)} dispatcher passes after it woke"
        assert held.alive() and successor.alive()
        assert pid_of(lease_read(redis_conn).holder) == successor.pid
    finally:
        for p in processes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGCONT)
            p.stop()
