"""Receipts for every stop: for each reply, when it reached the mailbox (the IMAP server's INTERNALDATE), when
outreach read it (the inbound row's commit), when the stop it caused was committed, and what that stop did; and,
per mailbox, how long replies took from the inbox to their stop over the last days (the dashboard, `/metrics`).

All of it is what ingestion recorded in the reply's own transaction (`inbound.ingest.record`): the row's
`committed_at`, and each stop or pause event naming it as its source ("inbound:<id>") with the counts of what it
canceled and what had already left (`sequences.stop_summary`). Nothing is measured again here.

Clocks: `committed_at` and the stop are the database clock's; INTERNALDATE is the IMAP server's, in whole seconds
(truncated: reply → stop reads up to a second long, and a server clock ahead of the database's shortens it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import QuerySet

from db.clock import db_now
from sequences.crossing import STOPPING
from sequences.models import Enrollment, TimelineEvent
from sequences.timeline import Event

from ..models import Conversation, InboundMessage
from .services import DECIDED

# A stop is written in its reply's transaction, just after the row: its event is looked for this long after the
# row's commit time (and a second before it: SQLite keeps milliseconds, a parameter six decimals).
STOP_WITHIN = timedelta(minutes=5)
SLACK = timedelta(seconds=1)
DAYS = 7  # the dashboard's and /metrics' window
QUANTILES = (0.5, 0.95)


@dataclass(frozen=True)
class Stopped:
    """One enrollment a reply stopped or paused, and what that did to its messages."""

    enrollment_id: int
    sequence: str
    paused: bool  # an out-of-office pause, not a stop
    at: datetime
    canceled: int  # never sent
    in_flight: int  # past the final check, being handed off
    submitted: int  # already left: cannot recall

    @property
    def words(self) -> str:
        done = [f"{self.canceled} canceled — never sent"] if self.canceled else []
        if self.in_flight:
            done.append(f"{self.in_flight} being handed off — cannot recall")
        if self.submitted:
            done.append(f"{self.submitted} already submitted — cannot recall")
        verb = "paused" if self.paused else "stopped"
        return f"{self.sequence}: {verb} ({', '.join(done) or 'no message was waiting'})"


@dataclass(frozen=True)
class Receipt:
    inbound_id: int
    mailbox: str
    received_at: datetime | None  # IMAP INTERNALDATE
    read_at: datetime  # the inbound row's commit: when outreach had read it
    stopped: list[Stopped] = field(default_factory=list)
    effect: str = ""  # what ingestion did, in its words (when it stopped nothing, this says why)

    @property
    def stop_at(self) -> datetime | None:
        """The first stop (or pause) it committed."""
        return min((s.at for s in self.stopped), default=None)

    @property
    def reply_to_stop(self) -> float | None:
        """Seconds from the inbox to the stop's commit."""
        if self.received_at is None or self.stop_at is None:
            return None
        return (self.stop_at - self.received_at).total_seconds()

    @property
    def read_after(self) -> float | None:
        """Seconds from the inbox to outreach's commit of the reply."""
        return None if self.received_at is None else (self.read_at - self.received_at).total_seconds()


def _inbound_id(data: dict) -> int | None:
    source = str((data or {}).get("source", ""))
    return int(source[8:]) if source.startswith("inbound:") and source[8:].isdigit() else None


def reply_receipts(replies: list[InboundMessage]) -> dict[int, Receipt]:
    """{reply id: its receipt}. One query per reply (the timeline's time index, a few minutes after its commit),
    and one for the names of the sequences it stopped."""
    found: dict[int, list[tuple]] = {}
    for reply in replies:
        events = TimelineEvent.objects.filter(at__gte=reply.committed_at - SLACK,
                                              at__lte=reply.committed_at + STOP_WITHIN, kind__in=STOPPING,
                                              data__source=f"inbound:{reply.pk}")
        found[reply.pk] = list(events.order_by("at", "id").values_list("enrollment_id", "kind", "at", "data"))
    enrollment_ids = {row[0] for rows in found.values() for row in rows}
    names = dict(Enrollment.objects.filter(pk__in=enrollment_ids).values_list("pk", "sequence__name"))
    receipts = {}
    for reply in replies:
        stopped = [Stopped(enrollment_id=enrollment_id, sequence=names.get(enrollment_id, "?"),
                           paused=kind == Event.ENROLLMENT_PAUSED, at=at, canceled=int(data.get("canceled", 0)),
                           in_flight=int(data.get("in_flight", 0)), submitted=int(data.get("submitted", 0)))
                   for enrollment_id, kind, at, data in found[reply.pk]]
        receipts[reply.pk] = Receipt(inbound_id=reply.pk, mailbox=reply.mailbox.name, received_at=reply.internaldate,
                                     read_at=reply.committed_at, stopped=stopped, effect=reply.effect)
    return receipts


# --- reply -> stop per mailbox ---------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    """Reply → stop of one mailbox's replies over the window: how many, and the quantiles (seconds)."""

    mailbox: str
    replies: int
    quantiles: dict[float, float]

    @property
    def p50(self) -> float:
        return self.quantiles[0.5]

    @property
    def p95(self) -> float:
        return self.quantiles[0.95]


def quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def reply_to_stop_seconds(*, days: int = DAYS) -> dict[str, list[float]]:
    """{mailbox name: seconds from inbox to stop} for each reply committed in the last `days` that stopped someone.

    Three bounded reads: the conversations with a reply in the window (their newest-first index), their replies
    in the window (the enrollment's index), and those enrollments' stops in the window (the same). A reply is
    counted once, at its first stop; one whose person was stopped already stopped nothing and is not counted."""
    since = db_now() - timedelta(days=days)
    recent: QuerySet = Conversation.objects.filter(last_reply_at__gte=since).values("pk")
    replies = {pk: (mailbox, internaldate) for pk, mailbox, internaldate in InboundMessage.objects.filter(
        enrollment_id__in=recent, committed_at__gte=since, kind__in=list(DECIDED), duplicate_of=None,
        internaldate__isnull=False).values_list("pk", "mailbox__name", "internaldate")}
    first: dict[int, datetime] = {}
    for at, data in (TimelineEvent.objects.filter(enrollment_id__in=recent, kind__in=STOPPING, at__gte=since - SLACK)
                     .values_list("at", "data")):
        inbound_id = _inbound_id(data)
        if inbound_id in replies and (inbound_id not in first or at < first[inbound_id]):
            first[inbound_id] = at
    seconds: dict[str, list[float]] = defaultdict(list)
    for inbound_id, at in sorted(first.items()):
        mailbox, internaldate = replies[inbound_id]
        seconds[mailbox].append((at - internaldate).total_seconds())
    return dict(seconds)


def reply_to_stop_latencies(*, days: int = DAYS) -> list[Latency]:
    """Per mailbox, by name: reply → stop p50 and p95 over the last `days`."""
    return [Latency(mailbox=name, replies=len(values), quantiles={q: quantile(values, q) for q in QUANTILES})
            for name, values in sorted(reply_to_stop_seconds(days=days).items())]
