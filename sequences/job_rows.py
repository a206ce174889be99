"""Send jobs with their honest labels ("Step 1: Submitted — cannot recall"), as every page, the admin and the
incident search show them; the queryset comes from `selectors.jobs_with_labels`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .labels import job_label_and_tone
from .models import SendJob, TimelineEvent
from .reply_view import hand_off_words
from .selectors import jobs_with_labels
from .timeline import Event


@dataclass
class JobRow:
    job: SendJob
    label: str
    tone: str
    position: int
    hand_off: str = ""  # what the final check knew of the replies when it let the message go (in words)


def job_rows(jobs: Iterable[SendJob], *, brief: bool = False) -> list[JobRow]:
    """Jobs with their honest labels; the queryset comes from `selectors.jobs_with_labels`. `brief`: times to the
    minute, for lists of people."""
    rows = []
    for job in jobs:
        label = job_label_and_tone(job, brief=brief)
        rows.append(JobRow(job=job, label=label.text, tone=label.tone, position=job.step.position))
    return rows


def with_reply_view_at_hand_off(rows: list[JobRow]) -> list[JobRow]:
    """Each authorized job's evidence: how long before its hand-off the mailbox had read its replies through
    (the authorization event's `replies_read_seconds_before`). One query, by the jobs' index."""
    authorized = TimelineEvent.objects.filter(job_id__in=[r.job.pk for r in rows], kind=Event.JOB_AUTHORIZED)
    seen = {job_id: data for job_id, data in authorized.order_by("at", "id").values_list("job_id", "data")}
    for row in rows:
        data = seen.get(row.job.pk) or {}
        if "replies_read_seconds_before" in data:
            row.hand_off = hand_off_words(data["replies_read_seconds_before"], first_message=row.position == 1)
    return rows


def latest_job_rows(enrollment_ids: list[int], *, brief: bool = False) -> dict[int, JobRow]:
    """The most recent job of each enrollment (by step, then id), labelled (`brief`: as in `job_rows`). Which job
    is the latest is read from ids alone; only those jobs are read with what their labels need."""
    latest: dict[int, int] = {}
    ids = SendJob.objects.filter(enrollment_id__in=enrollment_ids).order_by("step__position", "id")
    for enrollment_id, job_id in ids.values_list("enrollment_id", "pk"):
        latest[enrollment_id] = job_id
    jobs = jobs_with_labels().filter(pk__in=list(latest.values()))
    return {row.job.enrollment_id: row for row in job_rows(jobs, brief=brief)}
