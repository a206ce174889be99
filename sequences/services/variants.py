"""A/B variants of a step: save one, stop one, and what becomes of the people it was given to.

A stop of a variant is a stop like the others (`sequences.locks`): it locks the enrollments that have a live
job of the variant (ascending id), then the variant's row, and marks it stopped in one transaction. Then:

- a job not yet queued (scheduled: nothing of it was rendered) is given a remaining variant by weight, with
  the same person's share (`sequences.variants`), by a guarded move (`states.job_variant_change`);
- a job already queued or claimed keeps it: the final check reads the variant's stopped flag with the job
  (`loads.job_read`) under the enrollment lock, refuses it ("variant_stopped") and schedules the step again
  from a remaining variant (`variant_stopped_follow_up`), so a message rendered from the stopped text never
  leaves;
- a job past the final check is counted as already sent: a stop never recalls;
- when no running variant remains, the people waiting for the step are stopped (reason: operator), through
  the one stop path (`stops.enrollment_stop_locked`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count

from db.clock import DbClock

from ..locks import enrollments_lock
from ..messages import step_validate
from ..models import Enrollment, SendJob, Step, StepVariant
from ..reasons import Reason
from ..states import LIVE, PASSED_HANDOFF, job_variant_change
from ..timeline import Event, event_record
from ..variants import running_variants, variant_pick
from .campaigns import StepInvalid
from .common import T, fields_saved, operator_log
from .scheduling import schedule_next
from .stops import enrollment_stop_locked

S = SendJob.State
VARIANT_STOPPED = Reason.VARIANT_STOPPED
NAME_MAX = 40


def variant_stopped_follow_up(enrollment: Enrollment) -> None:
    """After the final check refused a job of a stopped variant: the step again, from a remaining variant, or
    the enrollment stopped when none remains. The caller holds the enrollment lock."""
    step_id = (SendJob.objects.filter(enrollment_id=enrollment.pk, cancel_reason=VARIANT_STOPPED)
               .order_by("-pk").values_list("step_id", flat=True).first())
    if step_id is not None and not running_variants(step_id):
        enrollment_stop_locked(enrollment, reason=Enrollment.StopReason.OPERATOR,
                               source="every variant of the step was stopped",
                               because="every A/B variant of the step it was waiting for was stopped")
        return
    schedule_next(enrollment, reason=VARIANT_STOPPED)


@dataclass
class VariantStop:
    """What stopping a variant did, for the page that follows and the operator log."""

    variant: str
    step: int
    changed: bool = False
    moved: dict[str, int] = field(default_factory=dict)  # remaining variant's name -> people moved to it
    at_final_check: int = 0  # queued or being prepared: the final check refuses them and moves them
    people_stopped: int = 0  # no variant remained: enrollments stopped
    in_flight: int = 0  # authorized, being handed off: may leave
    sent: int = 0  # already handed off: cannot recall

    def words(self) -> list[str]:
        lines = []
        if not self.changed:
            return [f"Variant {self.variant} of step {self.step} was already stopped: nothing changed."]
        if self.moved:
            parts = ", ".join(f"{name} ({n})" for name, n in self.moved.items())
            lines.append(f"{sum(self.moved.values())} people waiting for step {self.step} now get {parts} instead.")
        if self.at_final_check:
            lines.append(f"{self.at_final_check} message{'' if self.at_final_check == 1 else 's'} of {self.variant} "
                         "already on a worker's desk: the final check refuses "
                         f"{'it' if self.at_final_check == 1 else 'them'} and the step goes to a remaining "
                         "variant.")
        if self.people_stopped:
            lines.append(f"It was the last running variant of step {self.step}: {self.people_stopped} "
                         f"{'person' if self.people_stopped == 1 else 'people'} waiting for the step "
                         f"{'was' if self.people_stopped == 1 else 'were'} stopped (stopped by operator).")
        if self.in_flight:
            lines.append(f"{self.in_flight} being handed off right now may still leave — cannot recall.")
        lines.append(f"{self.sent} message{'' if self.sent == 1 else 's'} of {self.variant} already sent — "
                     "cannot recall.")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"moved": self.moved, "at_final_check": self.at_final_check, "people_stopped": self.people_stopped,
                "in_flight": self.in_flight, "already_sent": self.sent}


def variant_stop(*, variant_id: int, actor: str) -> VariantStop:
    """Stop a variant: nothing of it is sent after this commits; its waiting people move. One durable transaction."""
    with transaction.atomic(durable=True):
        found = StepVariant.objects.select_related("step__sequence").get(pk=variant_id)
        step = found.step
        # The rows every stop and the final check lock, first; then the variant's row.
        live = SendJob.objects.filter(step_id=step.pk, variant_id=variant_id, state__in=LIVE)
        enrollments = enrollments_lock(Enrollment.objects.filter(pk__in=live.values("enrollment_id")))
        variant = StepVariant.objects.select_for_update(no_key=True).get(pk=variant_id)
        result = VariantStop(variant=variant.name, step=step.position)
        if variant.stopped_at is not None:
            return result
        result.changed = True
        StepVariant.objects.filter(pk=variant_id).update(stopped_at=DbClock(), stopped_by=actor)
        remaining = running_variants(step.pk)
        names = dict(StepVariant.objects.filter(step_id=step.pk).values_list("pk", "name"))
        by_enrollment: dict[int, list[SendJob]] = {}
        for job in live.select_related("step").order_by("pk"):
            by_enrollment.setdefault(job.enrollment_id, []).append(job)
        for enrollment in enrollments:
            if not remaining:
                if enrollment.status in (Enrollment.Status.ACTIVE, Enrollment.Status.PAUSED):
                    summary = enrollment_stop_locked(
                        enrollment, reason=Enrollment.StopReason.OPERATOR, actor=actor,
                        source=f"variant {variant.name} of step {step.position} stopped",
                        because=f"the last running A/B variant of step {step.position} was stopped")
                    result.people_stopped += summary.enrollments
                    result.in_flight += summary.in_flight
                continue
            for job in by_enrollment.get(enrollment.pk, []):
                job.enrollment = enrollment
                if job.state == S.AUTHORIZED:
                    result.in_flight += 1
                    continue
                new = variant_pick(remaining, enrollment_id=enrollment.pk, step_id=step.pk)
                if job.state == S.SCHEDULED and job_variant_change(job=job, variant_id=new, actor=actor,
                                                                   reason=VARIANT_STOPPED):
                    result.moved[names[new]] = result.moved.get(names[new], 0) + 1
                else:  # queued or claimed (or queued since we read it): the final check refuses it
                    result.at_final_check += 1
        result.moved = dict(sorted(result.moved.items()))
        result.sent = SendJob.objects.filter(step_id=step.pk, variant_id=variant_id,
                                             state__in=[s for s in PASSED_HANDOFF if s != S.AUTHORIZED]).count()
        event_record(kind=Event.VARIANT_STOPPED, sequence=step.sequence.name, step=step.position,
                     variant=variant.name, actor=actor, **result.as_dict())
        operator_log(actor=actor, action="variant_stop", kind=T.SEQUENCE, target_id=step.sequence_id,
                     target=f"variant {variant.name} of step {step.position} of {step.sequence.name}",
                     result=result.as_dict())
        return result


def variant_save(*, step_id: int, variant_id: int | None, name: str, subject: str, body: str, weight: int,
                 actor: str) -> StepVariant:
    """Add a variant to a step or change one; StepInvalid says what is wrong. Its own transaction.

    A new variant takes part from the next job created for the step; jobs already scheduled keep theirs.
    """
    name = name.strip()
    with transaction.atomic():
        step = Step.objects.select_related("sequence").select_for_update(of=("self",)).get(pk=step_id)
        errors = step_validate(subject=subject, body=body, position=step.position, thread=step.thread)
        if step.position > 1 and not step.thread and not subject.strip():
            errors.setdefault("subject", []).append("a step that starts a new thread needs a subject")
        if not name:
            errors.setdefault("name", []).append("a variant needs a name (A, B, …)")
        elif len(name) > NAME_MAX:
            errors.setdefault("name", []).append(f"at most {NAME_MAX} characters")
        if weight < 1:
            errors.setdefault("weight", []).append("a weight is a whole number of at least 1")
        if errors:
            raise StepInvalid(errors)
        values = {"name": name, "subject": subject, "body": body, "weight": weight}
        try:
            with transaction.atomic():
                if variant_id is None:
                    variant = StepVariant.objects.create(step=step, **values)
                    changed = sorted(values)
                else:
                    variant = StepVariant.objects.select_for_update().get(pk=variant_id, step=step)
                    changed = fields_saved(variant, values)
        except IntegrityError:
            raise StepInvalid({"name": [f"step {step.position} already has a variant named “{name}”"]}) from None
        if changed:
            operator_log(actor=actor, action="variant_add" if variant_id is None else "variant_edit",
                         kind=T.SEQUENCE, target_id=step.sequence_id,
                         target=f"variant {name} of step {step.position} of {step.sequence.name}",
                         result={"changed": ", ".join(changed)})
    return variant


def variant_counts(step_id: int) -> dict[int, dict[str, int]]:
    """Per variant of a step: its live jobs and those past the hand-off; one grouped read."""
    rows = (SendJob.objects.filter(step_id=step_id, variant__isnull=False).values("variant_id", "state")
            .annotate(n=Count("id")))
    out: dict[int, dict[str, int]] = {}
    for row in rows:
        counts = out.setdefault(row["variant_id"], {"live": 0, "sent": 0})
        if row["state"] in LIVE:
            counts["live"] += row["n"]
        if row["state"] in PASSED_HANDOFF:
            counts["sent"] += row["n"]
    return out


def variant_running_names(step_id: int) -> list[str]:
    return list(StepVariant.objects.filter(step_id=step_id, stopped_at__isnull=True).order_by("id")
                .values_list("name", flat=True))


def variant_stop_forecast(variant: StepVariant) -> VariantStop:
    """What stopping the variant would do, as of now (the confirmation page); reads only."""
    forecast = VariantStop(variant=variant.name, step=variant.step.position, changed=variant.stopped_at is None)
    jobs = dict(SendJob.objects.filter(step_id=variant.step_id, variant=variant).values("state")
                .annotate(n=Count("id")).values_list("state", "n"))
    others = [n for n in variant_running_names(variant.step_id) if n != variant.name]
    waiting = jobs.get(S.SCHEDULED, 0)
    if others:
        forecast.moved = {" or ".join(others): waiting} if waiting else {}
        forecast.at_final_check = jobs.get(S.QUEUED, 0) + jobs.get(S.CLAIMED, 0)
    else:
        forecast.people_stopped = waiting + jobs.get(S.QUEUED, 0) + jobs.get(S.CLAIMED, 0)
    forecast.in_flight = jobs.get(S.AUTHORIZED, 0)
    forecast.sent = sum(jobs.get(s, 0) for s in PASSED_HANDOFF if s != S.AUTHORIZED)
    return forecast
