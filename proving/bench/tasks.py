"""RQ task functions the bench enqueues; they run in real `manage.py rqworker` processes.

`send_timed` is the product's send task (`sequences.tasks.send_job`) with the
authorize step and the whole pipeline run wrapped in timers, so both variants
pay the same timing and bookkeeping cost; the samples go to the bench's
private Redis after the job.
"""

from __future__ import annotations

import time

from rq import get_current_job
from rq.job import Job

from proving import variants
from sequences import checkpoints
from sequences.pipeline import send_job_process
from sequences.services.sending import send_job_authorize
from sequences.tasks import worker_identity

AUTHORIZE = {
    "guarded": send_job_authorize,
    "unchecked": variants.send_job_authorize_unchecked,
}


def samples_key(variant: str) -> str:
    return f"outreach:bench:authorize:{variant}"


def send_key(variant: str) -> str:
    return f"outreach:bench:send:{variant}"


# A send's phases, each ending at a checkpoint of the pipeline (the last one at its return).
PHASES = ("claim", "prepare", "authorize", "hand-off", "record")


def phase_key(variant: str, phase: str, *, cpu: bool = False) -> str:
    """The samples of a phase: its wall-clock seconds, or (cpu) the worker process's CPU seconds in it."""
    return f"outreach:bench:phase{'-cpu' if cpu else ''}:{variant}:{phase}"


def keys_of(variant: str) -> list[str]:
    """Every Redis list `send_timed` pushes a variant's samples to."""
    return [samples_key(variant), send_key(variant),
            *[phase_key(variant, phase, cpu=cpu) for phase in PHASES for cpu in (False, True)]]


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _phase_marks(marks: list[tuple[float, float]]) -> list:
    """Install a hook at every checkpoint that notes when (and after how much CPU) the pipeline reached it;
    returns the removers."""
    return [checkpoints.install(name, lambda _job_id: marks.append(_now())) for name in checkpoints.NAMES]


def send_timed(job_id: int, variant: str) -> str:
    """Send one job with the given authorize step ('guarded', 'unchecked') or the rejected 'lock_held' design."""
    if variant == "lock_held":
        return variants.send_job_process_lock_held(job_id=job_id, worker_id=worker_identity())
    authorize = AUTHORIZE[variant]
    samples: list[float] = []

    def timed(**kwargs):
        started = time.perf_counter()
        try:
            return authorize(**kwargs)
        finally:
            samples.append(time.perf_counter() - started)

    marks: list[tuple[float, float]] = []
    removers = _phase_marks(marks)
    started = _now()
    try:
        outcome = send_job_process(job_id=job_id, worker_id=worker_identity(), authorize=timed)
    finally:
        ended = _now()
        for remove in removers:
            remove()
    whole = ended[0] - started[0]
    job = get_current_job()
    if job is not None and samples:
        pipe = job.connection.pipeline(transaction=False)
        pipe.rpush(samples_key(variant), *samples)
        pipe.rpush(send_key(variant), whole)
        if len(marks) == len(checkpoints.NAMES):  # a send that went the whole way
            bounds = [started, *marks, ended]
            for i, phase in enumerate(PHASES):
                pipe.rpush(phase_key(variant, phase), bounds[i + 1][0] - bounds[i][0])
                pipe.rpush(phase_key(variant, phase, cpu=True), bounds[i + 1][1] - bounds[i][1])
        pipe.execute()
    return outcome.state


def noop(i: int) -> int:
    """RQ's own cost per job: nothing to do."""
    return i


def send_job_timed(job_id: int) -> str:
    """sequences.tasks.send_job, timed as send_timed times the guarded variant."""
    return send_timed(job_id, "guarded")


class TimedSendJob(Job):
    """Runs what the dispatcher enqueued (sequences.tasks.send_job) through send_timed: the same pipeline, with
    its authorize step timed in the worker. Only `bench scale` starts workers with it."""

    @property
    def func(self):
        if self.func_name == "sequences.tasks.send_job":
            return send_job_timed
        return super().func
