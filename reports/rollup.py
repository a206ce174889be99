"""The reports' rollup: what each message counts for, summed per day, kept up to date by the scheduler.

At a million jobs, counting replies, bounces and categories per step, variant, mailbox and week from the jobs,
the inbound ledger and the conversations takes seconds: too long for a page. The scheduler runs
`reports.tasks.reports_rollup` once a minute (outreach/cron.py); the page and the exports read `DailyFigures`.

Incremental. Every change a report counts writes a timeline event in its own transaction (a send, a reply and
its category, an operator's new category, a stop, a bounce, a booking: sequences.timeline). A run reads the
events since the last run began, less OVERLAP (an event stamped before that moment but committed after it is
still read), finds the people (enrollments) they touch, and counts those people's messages again from what the
system knows. `PersonFigures` holds what each person's messages counted for last time: the run adds to
`DailyFigures` only the difference, so a repeated run, or an event read twice, changes nothing. The first run
counts everyone, in one transaction.

A run is one transaction that first locks the mark's row: two runs at once (a slow run and the next minute's)
take turns, and each reads the records after the other's commit; a run that dies leaves nothing half-counted.
The first run, over everything, holds that lock longest: the scheduler's next runs wait for it; the send
pipeline, ingestion and the pages never take it. Each day's row is written once per run.

What each message counts for (reports.figures has the words the page shows):
- sent: handed off and taken by the mail server or provider (a provider's confirmed cancel is not a send);
  refused at the hand-off (a failed job that passed the final check but never reached submitted): tried only;
- replied, unsubscribed, bounced hard, complained, and the conversation's category (interested, meeting booked,
  out of office, not interested): once per person and sequence, at their last message that reached the mail
  server, as the sequence page counts them (ui/results.py). Replied is a human reply correlated to this
  enrollment (not a stop because the person replied in another sequence); the others are the enrollment's stop
  reason and its conversation's category (the operator's choice first);
- bounced soft: a soft bounce of this very message (a DSN or the provider's bounce event; a delay warning is no
  bounce); delivered: sent, and no bounce of it known.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from anymail.signals import EventType
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce

from db.clock import db_now
from inbound.ingest.effects import DELAYED
from inbound.kinds import BounceType, Category, Kind
from inbound.models import InboundMessage
from mailboxes.models import ProviderEvent
from sequences.models import Enrollment, ProviderCancel, SendJob, TimelineEvent
from sequences.timeline import Event

from .models import COUNTS, DailyFigures, PersonFigures, RollupMark

S = SendJob.State
R = Enrollment.StopReason
MARK = 1  # the one row of RollupMark
# Re-read this much of the timeline before the last run's start: a transaction commits a little after the
# database clock stamped its event (they are short by design: sequences/STYLE), and a re-read changes nothing.
OVERLAP = timedelta(minutes=2)
BATCH = 1000  # people (enrollments) read at a time
REACHED_SERVER = (S.SUBMITTED, S.ACCEPTED, S.FAILED, S.UNKNOWN)  # as ui/results.py: where outcomes are counted
STOP_COUNTS = {R.UNSUBSCRIBED: "unsubscribed", R.HARD_BOUNCE: "bounced_hard", R.COMPLAINED: "complained"}
CATEGORY_COUNTS = {Category.INTERESTED: "interested", Category.MEETING: "meeting",
                   Category.OUT_OF_OFFICE: "out_of_office", Category.NOT_INTERESTED: "not_interested"}
# Events that name a person by address only and may change what their conversations or stops count: a booking
# sets every conversation of the person to Meeting booked.
PERSON_WIDE = (Event.MEETING_BOOKED, Event.SUPPRESSION_ADDED, Event.SUPPRESSION_LIFTED)

Key = tuple[date, int, int, int | None, int]  # day, sequence, step, variant, mailbox


@dataclass(frozen=True)
class Run:
    """What one rollup run did."""

    enrollments: int  # people counted again
    messages: int  # messages whose counts changed
    seconds: float
    read_to: datetime

    def words(self) -> str:
        return (f"reports rolled up: {self.enrollments} people counted again, {self.messages} messages changed, "
                f"in {self.seconds:.2f} s")


def rollup(*, rebuild: bool = False) -> Run:
    """Count again the people the timeline says changed since the last run (everyone on the first run, or with
    *rebuild*); one transaction, holding the mark's row lock."""
    began = time.perf_counter()
    with transaction.atomic():
        mark = _mark()
        # After the lock: a run that waited for another reads from where that one began.
        started = db_now()
        if mark.read_to is None or rebuild:
            people, messages = _count_everyone()
        else:
            people, messages = _count_again(sorted(touched(since=mark.read_to - OVERLAP)))
        seconds = time.perf_counter() - began
        RollupMark.objects.filter(pk=MARK).update(read_to=started, rolled_at=db_now(), seconds=seconds,
                                                  enrollments=people, messages=messages)
    return Run(enrollments=people, messages=messages, seconds=seconds, read_to=started)


def rollup_rebuild() -> Run:
    """Forget every count and count everyone again (after a restore, or to check the increments)."""
    return rollup(rebuild=True)


def recount(enrollment_ids: list[int]) -> tuple[int, int]:
    """Count these people again now, as a run does for the people the timeline names (the benchmark's measure of
    a run); one transaction. Returns (people, messages whose counts changed)."""
    with transaction.atomic():
        _mark()
        return _count_again(sorted(enrollment_ids))


def touched(*, since: datetime) -> set[int]:
    """The enrollments whose counts may have changed since *since*: named by a timeline event, through its job,
    or, for events about a person, through their address."""
    events = TimelineEvent.objects.filter(at__gte=since).order_by()
    ids = set(events.filter(enrollment__isnull=False).values_list("enrollment_id", flat=True).distinct())
    ids |= set(events.filter(enrollment__isnull=True, job__isnull=False)
               .values_list("job__enrollment_id", flat=True).distinct())
    emails = sorted(set(events.filter(kind__in=PERSON_WIDE).exclude(email="").values_list("email", flat=True)))
    for part in _chunks(emails):
        ids |= set(Enrollment.objects.filter(contact__email__in=part).values_list("pk", flat=True))
    return ids


def _mark() -> RollupMark:
    """The mark's row, locked until the caller's transaction ends: one run at a time."""
    return RollupMark.objects.select_for_update().get_or_create(pk=MARK)[0]


def _chunks(items: list, size: int = BATCH) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _every_enrollment() -> Iterator[list[int]]:
    """Every enrollment, a batch at a time by id (the first run)."""
    last = 0
    while ids := list(Enrollment.objects.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:BATCH]):
        yield ids
        last = ids[-1]


Entry = list  # [job id, day (ISO), sequence id, step id, variant id or None, mailbox id, counts as bits]


def _key(entry: Entry) -> Key:
    return (date.fromisoformat(entry[1]), entry[2], entry[3], entry[4], entry[5])


def _add(deltas: dict[Key, list[int]], entry: Entry, sign: int) -> None:
    row, bits = deltas[_key(entry)], entry[6]
    for i in range(len(COUNTS)):
        if bits >> i & 1:
            row[i] += sign


def _deltas() -> dict[Key, list[int]]:
    return defaultdict(lambda: [0] * len(COUNTS))


def _count_everyone() -> tuple[int, int]:
    """Every message counted from nothing (the first run, or a rebuild); requires the run's transaction. Returns
    (people, messages)."""
    DailyFigures.objects.all().delete()
    PersonFigures.objects.all().delete()
    deltas = _deltas()
    people = messages = 0
    for ids in _every_enrollment():
        found = person_figures(ids)
        PersonFigures.objects.bulk_create([PersonFigures(enrollment_id=pk, messages=entries)
                                           for pk, entries in found.items()], batch_size=BATCH)
        for entries in found.values():
            for entry in entries:
                _add(deltas, entry, 1)
            messages += len(entries)
        people += len(ids)
    _days_add(deltas)
    return people, messages


def _count_again(enrollment_ids: list[int]) -> tuple[int, int]:
    """Count these people's messages again, a batch at a time, and add the differences to the days once at the
    end (each day's row written once per run, however many people it holds); requires the run's transaction.
    Returns (people, messages whose counts changed)."""
    deltas = _deltas()
    messages = 0
    for ids in _chunks(enrollment_ids):
        new = person_figures(ids)
        old = dict(PersonFigures.objects.filter(enrollment_id__in=ids).values_list("enrollment_id", "messages"))
        changed = []
        for pk in new.keys() | old.keys():
            now, before = new.get(pk, []), old.get(pk, [])
            if now == before:
                continue
            changed.append(pk)
            for entry in before:
                _add(deltas, entry, -1)
            for entry in now:
                _add(deltas, entry, 1)
            now_by, before_by = {e[0]: e for e in now}, {e[0]: e for e in before}
            messages += sum(now_by.get(job) != before_by.get(job) for job in now_by.keys() | before_by.keys())
        PersonFigures.objects.filter(enrollment_id__in=changed).delete()
        PersonFigures.objects.bulk_create([PersonFigures(enrollment_id=pk, messages=new[pk])
                                           for pk in changed if new.get(pk)], batch_size=BATCH)
    _days_add(deltas)
    return len(enrollment_ids), messages


def _days_add(deltas: dict[Key, list[int]]) -> None:
    """Add *deltas* (counts in the order of COUNTS) to the days' rows: update those that exist, make the others,
    drop those left at zero."""
    deltas = {key: d for key, d in deltas.items() if any(d)}
    if not deltas:
        return
    rows = DailyFigures.objects.filter(day__in=sorted({k[0] for k in deltas}), step_id__in={k[2] for k in deltas})
    existing = {(r.day, r.sequence_id, r.step_id, r.variant_id, r.mailbox_id): r for r in rows}
    made, kept, emptied = [], [], []
    for key, delta in deltas.items():
        row = existing.get(key)
        if row is None:
            day, sequence_id, step_id, variant_id, mailbox_id = key
            row = DailyFigures(day=day, sequence_id=sequence_id, step_id=step_id, variant_id=variant_id,
                               mailbox_id=mailbox_id)
        for name, n in zip(COUNTS, delta, strict=True):
            setattr(row, name, getattr(row, name) + n)
        counts_something = any(row.counts().values())
        if row.pk is None:
            if counts_something:
                made.append(row)
        elif counts_something:
            kept.append(row)
        else:
            emptied.append(row.pk)
    DailyFigures.objects.bulk_create(made, batch_size=BATCH)
    DailyFigures.objects.bulk_update(kept, list(COUNTS), batch_size=200)  # 12 columns: ~7,000 parameters
    if emptied:
        DailyFigures.objects.filter(pk__in=emptied).delete()


def _day(*moments: datetime | None) -> date:
    return next(m for m in moments if m is not None).astimezone(UTC).date()


def person_figures(enrollment_ids: Iterable[int]) -> dict[int, list[Entry]]:
    """{enrollment id: an Entry for each of its messages that counts for something, by job id}; enrollments
    whose messages count for nothing are left out. Five reads, each through an index on the enrollment (or the
    job)."""
    ids = list(enrollment_ids)
    jobs = list(
        SendJob.objects.filter(Q(state__in=REACHED_SERVER) | Q(submitted_at__isnull=False), enrollment_id__in=ids)
        .annotate(mailbox=Coalesce("enrollment__mailbox_id", "enrollment__sequence__mailbox_id"))
        .order_by("pk").values("pk", "enrollment_id", "step__sequence_id", "step_id", "step__position", "variant_id",
                               "mailbox", "state", "provider_cancel_status", "submitted_at", "authorized_at",
                               "finished_at", "canceled_at", "scheduled_at"))
    people = {pk: (reason if status == Enrollment.Status.STOPPED else "", category)
              for pk, status, reason, category in Enrollment.objects.filter(pk__in=ids)
              .values_list("pk", "status", "stop_reason", "conversation__category")}
    replied = set(InboundMessage.objects.filter(enrollment_id__in=ids, kind=Kind.HUMAN_REPLY, duplicate_of__isnull=True)
                  .values_list("enrollment_id", flat=True))
    soft = set(InboundMessage.objects.filter(enrollment_id__in=ids, kind=Kind.BOUNCE, bounce_type=BounceType.SOFT,
                                             duplicate_of__isnull=True, job__isnull=False)
               .exclude(classification_reason__contains=DELAYED).values_list("job_id", flat=True))
    # A provider's bounce event that left the job sent was a soft one (a hard one fails the job).
    soft |= set(ProviderEvent.objects.filter(job__enrollment_id__in=ids, event_type=EventType.BOUNCED,
                                             job__state__in=(S.SUBMITTED, S.ACCEPTED)).values_list("job_id", flat=True))
    # Each person's last message that reached the mail server: where their outcomes count.
    last: dict[int, tuple[int, int]] = {}
    for job in jobs:
        if job["state"] in REACHED_SERVER:
            e = job["enrollment_id"]
            last[e] = max(last.get(e, (0, 0)), (job["step__position"], job["pk"]))
    found: dict[int, list[Entry]] = defaultdict(list)
    for job in jobs:
        pk, enrollment_id = job["pk"], job["enrollment_id"]
        sent = job["submitted_at"] is not None and job["provider_cancel_status"] != ProviderCancel.CONFIRMED
        refused = job["state"] == S.FAILED and job["submitted_at"] is None and job["authorized_at"] is not None
        counts = dict.fromkeys(COUNTS, 0) | {"sent": int(sent), "tried": int(sent or refused)}
        if last.get(enrollment_id) == (job["step__position"], pk):
            reason, category = people.get(enrollment_id, ("", None))
            counts["replied"] = int(enrollment_id in replied)
            if reason in STOP_COUNTS:
                counts[STOP_COUNTS[reason]] = 1
            if category in CATEGORY_COUNTS:
                counts[CATEGORY_COUNTS[category]] = 1
        counts["bounced_soft"] = int(pk in soft and not counts["bounced_hard"])
        counts["delivered"] = int(sent and not counts["bounced_hard"] and not counts["bounced_soft"])
        bits = sum(1 << i for i, name in enumerate(COUNTS) if counts[name])
        if bits:
            day = _day(job["submitted_at"], job["finished_at"], job["authorized_at"], job["canceled_at"],
                       job["scheduled_at"])
            found[enrollment_id].append([pk, day.isoformat(), job["step__sequence_id"], job["step_id"],
                                         job["variant_id"], job["mailbox"], bits])
    return dict(found)
