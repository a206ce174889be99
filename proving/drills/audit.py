"""What a fault drill checks, from the database and the SMTP server's received log only.

- lost: a job that is neither final nor received, or that the database calls
  submitted while the server never got it;
- duplicated: a Message-ID the server received more than once;
- reopened: an enrollment with a stop or pause on its timeline that is active again;
- sent after stop: a received message whose authorization committed after its enrollment's stop;
- non-final: a job a worker or the dispatcher should still act on (queued,
  claimed, authorized, or scheduled and due); a follow-up scheduled for later is not;
- unknown labelled: `unknown` jobs whose label says "Outcome unknown — may have been sent";
- stranded: an active enrollment with no live job and no recorded reason to wait (doctor).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from db.clock import db_now
from sequences.labels import job_label
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.services.doctor import enrollments_doctor

S = SendJob.State
UNKNOWN_LABEL = "Outcome unknown — may have been sent"
STOP_EVENTS = ("enrollment_stopped", "enrollment_paused")
WORKING = (S.QUEUED, S.CLAIMED, S.AUTHORIZED)


@dataclass
class Audit:
    jobs: int = 0
    submitted: int = 0
    received: int = 0  # deliveries of these jobs' Message-IDs at the server
    lost: int = 0
    duplicated: int = 0
    reopened: int = 0
    sent_after_stop: int = 0
    non_final: int = 0
    unknown: int = 0
    unknown_labelled: int = 0
    stranded: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.duplicated or self.reopened or self.sent_after_stop or self.non_final
                    or self.stranded or self.unknown_labelled != self.unknown or self.problems)

    def as_dict(self) -> dict:
        return asdict(self)


def audit(jobs, received: list[str]) -> Audit:
    """Audit `jobs` (a SendJob queryset) against the Message-IDs the SMTP server received."""
    jobs = list(jobs.select_related("enrollment__mailbox", "enrollment__sequence__mailbox", "enrollment__contact",
                                    "step"))
    counts = Counter(received)
    now = db_now()
    result = Audit(jobs=len(jobs))
    enrollment_ids = {j.enrollment_id for j in jobs}
    stops: dict[int, object] = {}
    for event in TimelineEvent.objects.filter(enrollment_id__in=enrollment_ids, kind__in=STOP_EVENTS).order_by("at"):
        stops.setdefault(event.enrollment_id, event.at)
    authorized = {e.job_id: e.at for e in TimelineEvent.objects.filter(job__in=[j.pk for j in jobs],
                                                                        kind="job_authorized")}
    for job in jobs:
        got = counts.get(job.message_id, 0)
        result.received += got
        result.submitted += job.state in (S.SUBMITTED, S.ACCEPTED)
        if got > 1:
            result.duplicated += got - 1
            result.problems.append(f"job {job.pk} received {got} times")
        working = job.state in WORKING or (job.state == S.SCHEDULED and job.scheduled_at <= now)
        if working:
            result.non_final += 1
        if (working and not got) or (job.state in (S.SUBMITTED, S.ACCEPTED) and not got):
            result.lost += 1
            result.problems.append(f"job {job.pk} lost: {job.state}, never received")
        stop_at = stops.get(job.enrollment_id)
        if got and stop_at is not None and job.pk in authorized and authorized[job.pk] > stop_at:
            result.sent_after_stop += 1
            result.problems.append(f"job {job.pk} authorized after its enrollment's stop and received")
        if job.state == S.UNKNOWN:
            result.unknown += 1
            label = job_label(job)
            if label.startswith(UNKNOWN_LABEL):
                result.unknown_labelled += 1
            else:
                result.problems.append(f"job {job.pk} is unknown but labelled {label!r}")
    reopened = Enrollment.objects.filter(pk__in=list(stops), status=Enrollment.Status.ACTIVE)
    result.reopened = reopened.count()
    for enrollment in reopened:
        result.problems.append(f"enrollment {enrollment.pk} was stopped and is active again")
    for finding in enrollments_doctor(repair=False, enrollment_ids=sorted(enrollment_ids)):
        if finding.action:  # no reason on record to wait
            result.stranded += 1
            result.problems.append(f"enrollment {finding.enrollment_id} is stranded: {finding.finding}")
    return result
