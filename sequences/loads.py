"""Reads of a send job and of what the final check decides on, shared by the pipeline's transactions.

The send pipeline runs three short transactions per message (claim, authorize, record). Each reads the job
with its enrollment, contact, sequence, mailbox and step in one ORM query (`job_read`); the final check
also reads its facts (`facts_read`: the database clock, the ledger, the previous step) in one more, and
gets them back as a frozen `Facts`, never as attributes pinned on the job.

Every function requires the caller's transaction unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from db.clock import DbClock, db_now
from mailboxes.models import ImapCursor, Mailbox

from .digests import address_digest
from .models import Enrollment, ErasedAddress, SendJob, Step, StepVariant, Suppression, TimelineEvent
from .reasons import HOLDS_WHILE_CAUSE_LASTS
from .selectors import normalize_email
from .sending_mailbox import sends_from
from .states import LEFT
from .timeline import Event

# What every transaction of the pipeline needs of a job, loaded with it: the enrollment's own mailbox (the
# services always set it; a row written without them reads its sequence's mailbox when asked, see
# sequences.sending_mailbox). Each model joined here costs the ORM's compilation of its columns, every read.
# The job's A/B variant comes in the same statement: the final check reads its stopped flag from it, as it
# reads the sequence's status (a draft holds the job) from the sequence joined here.
JOB_RELATED = ("enrollment__contact", "enrollment__mailbox", "enrollment__sequence", "step", "variant")
# The final check's deferrals that hold a job while their cause lasts (`sequences.services.sending`): their
# re-checks write nothing while they find the same hold.
HOLD_REASONS = HOLDS_WHILE_CAUSE_LASTS


def jobs_loaded(*related: str) -> QuerySet[SendJob]:
    return SendJob.objects.select_related(*(related or JOB_RELATED))


def job_read(job_id: int, *, without_mailbox: bool = False) -> SendJob | None:
    """The job with its enrollment, contact, sequence, mailbox and step; one statement, no lock.

    `without_mailbox`: the caller reads the mailbox itself (the final check locks it, then reads it).
    """
    related = tuple(r for r in JOB_RELATED if r != "enrollment__mailbox") if without_mailbox else JOB_RELATED
    try:
        return jobs_loaded(*related).get(pk=job_id)  # get(): no ORDER BY to compile or run
    except SendJob.DoesNotExist:
        return None


@dataclass(frozen=True)
class FolderViews:
    """What a mailbox's reply folders say of its reply view (`inbound.ingest.view` keeps each folder's)."""

    read: int = 0  # folders with a read-through time
    read_through: datetime | None = None  # the oldest of those times
    unread_since: datetime | None = None  # the oldest mark of mail heard of but not yet read


def folder_views(marks: Iterable[tuple[datetime | None, datetime | None]]) -> FolderViews:
    """FolderViews from each reply folder's (read_through, unread_since)."""
    read_through, unread = [], []
    for read, mark in marks:
        if read is not None:
            read_through.append(read)
        if mark is not None:
            unread.append(mark)
    return FolderViews(len(read_through), min(read_through, default=None), min(unread, default=None))


@dataclass(frozen=True)
class Facts:
    """What the final check reads besides the rows: the clock, the ledger, the last step."""

    now: datetime  # the database clock when the facts were read
    suppressed: bool  # the latest ledger entry of the address or of its domain suppresses it, or it was erased
    previous_step_sent: bool  # step 1, or the step before really left (`sequences.states.LEFT`)
    # The reply view (`sequences.reply_view`): whether this is a follow-up (a message of ours from this mailbox
    # to this person really left before), and what the mailbox's reply folders say (read only for one).
    follow_up: bool = False
    views: FolderViews = FolderViews()
    # The data of the job's last event when it is a hold (a deferral of HOLD_REASONS): what this check's quiet
    # re-check started from.
    hold: dict[str, Any] | None = None


def hold_of(kind: str | None, data: dict[str, Any] | None) -> dict[str, Any] | None:
    """A job's last event (its kind and data) as a hold, or None when it is something else."""
    if kind == Event.JOB_DEFERRED and (data or {}).get("reason") in HOLD_REASONS:
        return data
    return None


def facts_read(job: SendJob, mailbox: Mailbox) -> Facts:
    """The final check's facts about `job` (read with `job_read`) sent from `mailbox`: one statement, and for a
    follow-up from a mailbox that reads replies, one more for its reply folders. The job's last event comes in
    the same statement (`Facts.hold`).

    Run after the enrollment lock was granted: under READ COMMITTED its snapshot holds every stop that
    committed before (a stop that comes later waits for the caller's transaction). The ledger is read once
    for the address and its domain: the latest entry of each value decides; the hashed ledger of erased
    people (the job's workspace's part and the agency's) in the same statement.
    """
    address = normalize_email(job.enrollment.contact.email)
    domain = "@" + address.rsplit("@", 1)[-1]
    # The ledger's part of the job's workspace and the agency's ("everywhere"): the latest entry of each decides.
    workspace_id = job.enrollment.sequence.workspace_id
    ledger = Suppression._base_manager.filter(value__in=(address, domain), action=Suppression.Action.ADD)
    latest_own = (Suppression._base_manager.filter(value=OuterRef("value"), workspace_id=workspace_id)
                  .order_by("-id").values("pk")[:1])
    latest_agency = (Suppression._base_manager.filter(value=OuterRef("value"), workspace__isnull=True)
                     .order_by("-id").values("pk")[:1])
    last_event = TimelineEvent.objects.filter(job_id=job.pk).order_by("-id")
    read = SendJob.objects.filter(pk=job.pk).values(
        now=DbClock(),
        suppressed=Exists(ledger.filter(workspace_id=workspace_id, pk=Subquery(latest_own)))
        | Exists(ledger.filter(workspace__isnull=True, pk=Subquery(latest_agency))),
        erased=Exists(ErasedAddress._base_manager.filter(Q(workspace_id=workspace_id) | Q(workspace__isnull=True),
                                                         digest=address_digest(address))),
        previous_left=Exists(SendJob.objects.filter(LEFT, enrollment_id=job.enrollment_id,
                                                    step__position=job.step.position - 1)),
        follow_up=Exists(SendJob.objects.filter(LEFT, sends_from(mailbox.pk, via="enrollment__"),
                                                enrollment__contact_id=job.enrollment.contact_id)),
        last_kind=Subquery(last_event.values("kind")[:1]),
        last_data=Subquery(last_event.values("data")[:1]),
    ).get()
    views = FolderViews()
    if read["follow_up"] and mailbox.has_imap:
        views = folder_views(ImapCursor.objects.filter(mailbox_id=mailbox.pk, folder__in=mailbox.reply_folders)
                             .values_list("read_through", "unread_since"))
    return Facts(now=read["now"], suppressed=read["suppressed"] or read["erased"],
                 previous_step_sent=job.step.position == 1 or read["previous_left"], follow_up=read["follow_up"],
                 views=views, hold=hold_of(read["last_kind"], read["last_data"]))


def sent_before(job: SendJob) -> list[tuple[str, str, bool, int]]:
    """The enrollment's earlier messages that really left, oldest step first: (Message-ID, subject template (its
    variant's, if it had one), threaded, position), what a follow-up threads under (`sequences.messages.thread_of`).
    One statement."""
    return list(
        SendJob.objects.filter(LEFT, enrollment_id=job.enrollment_id, step__position__lt=job.step.position)
        .order_by("step__position", "pk")
        .values_list("message_id", Coalesce("variant__subject", "step__subject"), "step__thread", "step__position")
    )


def last_authorized_to(email: str) -> SendJob | None:
    """The latest job to this (normalized) address that passed the final check, with its mailbox loaded: what
    a hard bounce or complaint is counted against. One statement, no lock."""
    return (jobs_loaded().filter(enrollment__contact__email=email, authorized_at__isnull=False)
            .order_by("-authorized_at", "-pk").first())


def enrollment_jobs(enrollment_id: int) -> list[SendJob]:
    """Every job of the enrollment, by id, each with its step loaded (what a stop reads under the lock)."""
    return list(SendJob.objects.filter(enrollment_id=enrollment_id).select_related("step").order_by("pk"))


def enrollment_progress(enrollment: Enrollment) -> tuple[list[Step], list[SendJob], datetime]:
    """Every step of the enrollment's sequence (by position), the enrollment's jobs that are not canceled (by
    id, each with its step), and the database clock: what the enrollment sends next
    (`sequences.services.scheduling`). The caller holds the enrollment lock. Each step says, in the same
    statement, whether it has A/B variants (`has_variants`): only then are they read."""
    steps = list(Step.objects.filter(sequence_id=enrollment.sequence_id).order_by("position")
                 .annotate(has_variants=Exists(StepVariant.objects.filter(step_id=OuterRef("pk")))))
    by_id = {step.pk: step for step in steps}
    jobs = list(SendJob.objects.filter(enrollment_id=enrollment.pk).exclude(state=SendJob.State.CANCELED)
                .order_by("pk"))
    for job in jobs:
        job.step = by_id[job.step_id]
    return steps, jobs, db_now()
