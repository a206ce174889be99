"""Randomized interleavings: many enrollments, several worker threads, stops at random moments.

The invariant is checked from the timeline and the SMTP server's log, not from
the code under test: no message reached the server whose authorization
committed after the stop of its enrollment, the server received exactly the
jobs recorded as submitted, and nothing canceled was received. The same run
with the final check bypassed must show violations, or the test proves nothing.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from proving import variants
from sequences import checkpoints, services
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from tests.factories import enroll, make_sequence
from tests.races.helpers import Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
LIVE = (S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)
STOP_KINDS = ("enrollment_stopped", "enrollment_paused")

ENROLLMENTS = 60
WORKERS = 4
SEED = 20261129


def run_interleaving(mailbox, smtp_server, *, guarded: bool, seed: int) -> dict:
    rng = random.Random(seed)
    sequence = make_sequence(mailbox=mailbox, steps=3)
    enrollment_ids = [enroll(sequence, f"p{i}@example.com").pk for i in range(ENROLLMENTS)]
    authorize = services.send_job_authorize if guarded else variants.send_job_authorize_unchecked
    # Preparation takes time in real life (templates, MIME): widen the window a stop can land in.
    checkpoints.install("prepared", lambda job_id: time.sleep(rng.uniform(0.005, 0.03)))
    done = threading.Event()
    processed = []

    def work(name: str):
        local = random.Random(f"{seed}-{name}")
        while not done.is_set():
            ids = services.dispatch_due(limit=3)
            if not ids:
                if not SendJob.objects.filter(state__in=LIVE).exists():
                    return
                time.sleep(0.002)
                continue
            for job_id in ids:
                processed.append(send_job_process(job_id=job_id, worker_id=name, authorize=authorize))
                if local.random() < 0.1:  # a duplicated RQ delivery
                    processed.append(send_job_process(job_id=job_id, worker_id=name + "-dup", authorize=authorize))

    def stop_randomly():
        local = random.Random(f"{seed}-stopper")
        remaining = set(enrollment_ids)
        budget = ENROLLMENTS * 2 // 3
        while budget and not done.is_set() and SendJob.objects.filter(state__in=LIVE).exists():
            time.sleep(local.uniform(0.002, 0.03))
            # Most stops aim at an enrollment whose job a worker holds right
            # now (as a reply racing a send would); some land anywhere.
            busy = sorted(set(SendJob.objects.filter(state=S.CLAIMED).values_list(
                "enrollment_id", flat=True)) & remaining)
            if busy and local.random() < 0.7:
                enrollment_id = local.choice(busy)
            elif local.random() < 0.2:
                enrollment_id = local.choice(sorted(remaining))
            else:
                continue
            remaining.discard(enrollment_id)
            budget -= 1
            if local.random() < 0.5:
                services.enrollment_stop(enrollment_id=enrollment_id, reason="replied")
            else:
                services.enrollment_pause(enrollment_id=enrollment_id)

    threads = [Worker(lambda n=f"w{i}": work(n)) for i in range(WORKERS)] + [Worker(stop_randomly)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.outcome(timeout=120)
    finally:
        done.set()
    return audit(smtp_server, processed)


def audit(smtp_server, processed) -> dict:
    received = smtp_server.message_ids()
    jobs = {j.message_id: j for j in SendJob.objects.all()}
    stop_at = {
        e.enrollment_id: e.at
        for e in TimelineEvent.objects.filter(kind__in=STOP_KINDS).order_by("-at")
    }
    authorized_at = {e.job_id: e.at for e in TimelineEvent.objects.filter(kind="job_authorized")}
    violations = []
    for message_id in received:
        job = jobs[message_id]
        stopped = stop_at.get(job.enrollment_id)
        if stopped is not None and authorized_at[job.pk] > stopped:
            violations.append(f"job {job.pk} authorized {authorized_at[job.pk]} after stop {stopped}")
        if job.state == S.CANCELED:
            violations.append(f"job {job.pk} was canceled but reached the server")
    submitted = {j.message_id for j in jobs.values() if j.state == S.SUBMITTED}
    return {
        "trials": len(processed),
        "received": len(received),
        "duplicates": len(received) - len(set(received)),
        "violations": violations,
        "submitted_equals_received": submitted == set(received),
        "stopped": Enrollment.objects.exclude(status="active").exclude(status="completed").count(),
        "canceled": SendJob.objects.filter(state=S.CANCELED).count(),
    }


def test_guarded_pipeline_never_sends_after_a_stop(mailbox, smtp_server):
    result = run_interleaving(mailbox, smtp_server, guarded=True, seed=SEED)
    print("guarded:", {k: v if k != "violations" else len(v) for k, v in result.items()})
    assert result["violations"] == []
    assert result["duplicates"] == 0
    assert result["submitted_equals_received"]
    assert result["stopped"] >= ENROLLMENTS // 4 and result["canceled"] > 0
    assert result["received"] > 0  # the run really sent mail while stops landed


def test_with_the_final_check_bypassed_violations_appear(mailbox, smtp_server):
    result = run_interleaving(mailbox, smtp_server, guarded=False, seed=SEED)
    print("bypassed:", {k: v if k != "violations" else len(v) for k, v in result.items()})
    assert result["violations"], "the same interleavings without the guard must produce sends after stops"
