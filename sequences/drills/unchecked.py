"""The guard bypassed, for showing that a drill can FAIL. Never part of the product.

Only the drill's own worker launcher uses this, and only when the drill
command runs with OUTREACH_DRILL_UNCHECKED=1: it starts its worker with
`--job-class sequences.drills.unchecked.UncheckedJob`, which runs
`send_job_unchecked` in place of `sequences.tasks.send_job`. The product's
workers, tasks and settings know nothing of it.
"""

from __future__ import annotations

from rq.job import Job

from sequences import services
from sequences.pipeline import send_job_process
from sequences.tasks import worker_identity

ENV_FLAG = "OUTREACH_DRILL_UNCHECKED"


def send_job_unchecked(job_id: int) -> str:
    """sequences.tasks.send_job with the final check replaced by services.send_job_authorize_unchecked."""
    outcome = send_job_process(job_id=job_id, worker_id=worker_identity(),
                               authorize=services.send_job_authorize_unchecked)
    return outcome.state


class UncheckedJob(Job):
    @property
    def func(self):
        if self.func_name == "sequences.tasks.send_job":
            return send_job_unchecked
        return super().func
