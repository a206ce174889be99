"""Seeded interleavings: a stop lands at a random point of a random step's send, for many enrollments.

The seed draws, for each enrollment, which step's send a stop meets, where
(queued but not claimed, or paused at one of the pipeline's checkpoints),
what kind of stop it is, and whether the RQ job is delivered twice. Gates at
the checkpoints, not sleeps, put the stop there: the worker thread waits at
the checkpoint, the stop commits from another connection, the worker goes on.
So each seed is one exact interleaving, the same on every run and machine.

The invariant is checked from the timeline and the SMTP server's log, not
from the code under test: no message reached the server whose authorization
committed after the stop of its enrollment, the server received exactly the
jobs recorded as submitted, nothing canceled was received, and nothing was
received twice. With the final check bypassed, the same interleavings must
show exactly the violations the plan predicts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from proving.variants import send_job_authorize_unchecked
from sequences.labels import job_label
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due, send_job_authorize
from sequences.services.stops import enrollment_pause, enrollment_stop
from sequences.services.suppressions import suppression_add
from tests.factories import enroll, make_sequence
from tests.races.helpers import Gate, Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
STOP_EVENTS = ("enrollment_stopped", "enrollment_paused")

ENROLLMENTS = 36
STEPS = 2
SEEDS = (20261129, 7)
WHEN = ("nowhere", "queued", "claimed", "prepared", "authorized", "submitted")
BEFORE_AUTHORIZATION = ("claimed", "prepared")
KINDS = ("stop", "pause", "suppress")


@dataclass(frozen=True)
class Plan:
    email: str
    step: int  # the step whose send the stop meets
    when: str  # one of WHEN
    kind: str  # one of KINDS
    duplicate: bool  # the RQ job of that send is delivered a second time

    def sent_guarded(self) -> int:
        """Messages that must reach the server with the final check in place."""
        if self.when == "nowhere":
            return STEPS
        return self.step if self.when in ("authorized", "submitted") else self.step - 1

    def sent_unchecked(self) -> int:
        """Without the final check, a stop between claim and authorization no longer stops that send."""
        return self.step if self.when in BEFORE_AUTHORIZATION else self.sent_guarded()


def plans(seed: int) -> list[Plan]:
    """Every (place, kind of stop) pair once, then random ones; the order and the rest are the seed's."""
    rng = random.Random(seed)
    places = [(when, kind) for when in WHEN for kind in KINDS]
    places += [(rng.choice(WHEN), rng.choice(KINDS)) for _ in range(ENROLLMENTS - len(places))]
    rng.shuffle(places)
    return [Plan(email=f"p{i}@example.com", step=rng.randint(1, STEPS), when=when, kind=kind,
                 duplicate=rng.random() < 0.25) for i, (when, kind) in enumerate(places)]


def commit_stop(plan: Plan, enrollment: Enrollment) -> None:
    if plan.kind == "stop":
        enrollment_stop(enrollment_id=enrollment.pk, reason="replied")
    elif plan.kind == "pause":
        enrollment_pause(enrollment_id=enrollment.pk)
    else:
        suppression_add(value=plan.email, reason="unsubscribe", source="test")


def run_plan(mailbox, *, seed: int, authorize) -> tuple[list[Plan], dict[str, int]]:
    """Play every enrollment's plan; returns the plans and the enrollment id of each address."""
    sequence = make_sequence(mailbox=mailbox, steps=STEPS)
    the_plans = plans(seed)
    ids = {}
    for plan in the_plans:
        enrollment = enroll(sequence, plan.email)
        ids[plan.email] = enrollment.pk
        for step in range(1, STEPS + 1):
            due = dispatch_due()
            if not due:
                break  # stopped: nothing more to send
            (job_id,) = due
            meets_stop = plan.step == step and plan.when != "nowhere"
            if meets_stop and plan.when == "queued":
                commit_stop(plan, enrollment)
            gate = Gate(plan.when) if meets_stop and plan.when not in ("queued",) else None
            worker = Worker(lambda j=job_id: send_job_process(job_id=j, worker_id="w1", authorize=authorize))
            worker.start()
            if gate is not None:
                gate.wait()
                commit_stop(plan, enrollment)
                gate.release()
                gate.remove()
            worker.outcome()
            if meets_stop and plan.duplicate:
                again = send_job_process(job_id=job_id, worker_id="w1-dup", authorize=authorize)
                assert again.state == "noop"
            if meets_stop:
                break
    return the_plans, ids


def audit(smtp_server) -> dict:
    received = smtp_server.message_ids()
    jobs = {j.message_id: j for j in SendJob.objects.all()}
    stop_at = {e.enrollment_id: e.at for e in TimelineEvent.objects.filter(kind__in=STOP_EVENTS).order_by("-at")}
    authorized_at = {e.job_id: e.at for e in TimelineEvent.objects.filter(kind="job_authorized")}
    violations = []
    for message_id in received:
        job = jobs[message_id]
        stopped = stop_at.get(job.enrollment_id)
        if stopped is not None and authorized_at[job.pk] > stopped:
            violations.append(job.enrollment_id)
        if job.state == S.CANCELED:
            violations.append(job.enrollment_id)
    submitted = {j.message_id for j in jobs.values() if j.state == S.SUBMITTED}
    return {"received": received, "violations": violations, "submitted_equals_received": submitted == set(received)}


@pytest.mark.parametrize("seed", SEEDS)
def test_guarded_pipeline_never_sends_after_a_stop(seed, mailbox, smtp_server):
    the_plans, ids = run_plan(mailbox, seed=seed, authorize=send_job_authorize)
    result = audit(smtp_server)

    assert result["violations"] == []
    assert len(result["received"]) == len(set(result["received"])), "a duplicated RQ job sent twice"
    assert result["submitted_equals_received"]
    assert len(result["received"]) == sum(p.sent_guarded() for p in the_plans)
    # Every place a stop can land, and each says what it did in honest words.
    for plan in the_plans:
        jobs = list(SendJob.objects.filter(enrollment_id=ids[plan.email]).select_related(
            "enrollment__sequence__mailbox", "step").order_by("step__position"))
        if plan.when in ("authorized", "submitted"):
            assert job_label(jobs[plan.step - 1]).endswith("— cannot recall"), plan
        elif plan.when != "nowhere":
            assert jobs[plan.step - 1].state == S.CANCELED, plan
            assert job_label(jobs[plan.step - 1]).startswith("Canceled — never sent"), plan
        if plan.when != "nowhere":
            assert not [j for j in jobs if j.state in (S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)], plan


@pytest.mark.parametrize("seed", SEEDS)
def test_with_the_final_check_bypassed_the_predicted_violations_appear(seed, mailbox, smtp_server):
    the_plans, ids = run_plan(mailbox, seed=seed, authorize=send_job_authorize_unchecked)
    result = audit(smtp_server)

    predicted = sorted(ids[p.email] for p in the_plans if p.when in BEFORE_AUTHORIZATION)
    assert predicted, "the seed must put some stops between claim and authorization"
    assert sorted(result["violations"]) == predicted
    assert len(result["received"]) == sum(p.sent_unchecked() for p in the_plans)
