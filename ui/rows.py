"""Display rows for the operator UI: jobs with honest labels, timelines, stop results, the operator log.

Reads only. Times shown to people go through `labels.stamp` (database clock, ms, UTC);
words for what a stop did come from `labels`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Count, Q
from django.urls import reverse

from sequences.labels import stamp, stop_summary_sentences
from sequences.models import Enrollment, OperatorAction, SendJob, TimelineEvent
from sequences.sending_mailbox import enrollment_mailbox
from sequences.states import CANCELABLE
from sequences.stop_summary import StopSummary
from sequences.timeline import Event

S = SendJob.State
T = OperatorAction.TargetKind


# --- timelines ------------------------------------------------------------------------------

_INBOUND_REF = re.compile(r"^inbound:(\d+)$")
# Shown in their own columns, not repeated among the details.
_EVENT_SKIP = {"from", "to"}


@dataclass
class EventRow:
    event: TimelineEvent
    at: str
    transition: str
    details: list[tuple[str, str]] = field(default_factory=list)
    inbound_ids: list[int] = field(default_factory=list)


def event_rows(events: Iterable[TimelineEvent]) -> list[EventRow]:
    rows = []
    for event in events:
        data = event.data or {}
        transition = f"{data['from']} → {data['to']}" if "from" in data and "to" in data else ""
        details, inbound = [], []
        for key in sorted(data):
            if key in _EVENT_SKIP:
                continue
            value = data[key]
            if value in ("", None, [], {}):
                continue
            text = value if isinstance(value, str) else _json_text(value)
            details.append((key, text))
            match = _INBOUND_REF.match(text) if isinstance(value, str) else None
            if match:
                inbound.append(int(match.group(1)))
            elif key in ("inbound", "inbound_id", "inbound_message") and isinstance(value, int):
                inbound.append(value)
        rows.append(EventRow(event=event, at=stamp(event.at), transition=transition, details=details,
                             inbound_ids=inbound))
    return rows


def _json_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def enrollment_events(enrollment: Enrollment):
    """Everything that happened to an enrollment, its jobs, its address, its sequence and mailbox, in commit order."""
    email = enrollment.contact.email
    sequence = enrollment.sequence
    # The job ids as a list, not a join: every arm of the OR is then one index scan (a join in an
    # OR made PostgreSQL read the whole timeline, seconds at a million events).
    job_ids = list(SendJob.objects.filter(enrollment=enrollment).values_list("pk", flat=True))
    return (
        TimelineEvent.objects.filter(
            Q(enrollment=enrollment)
            | Q(job_id__in=job_ids)
            | Q(kind__in=(Event.SUPPRESSION_ADDED, Event.SUPPRESSION_LIFTED),
                email__in=[email, "@" + enrollment.contact.domain])
            | Q(kind__in=(Event.SEQUENCE_PAUSED, Event.SEQUENCE_RESUMED), data__sequence=sequence.name)
            | Q(kind__in=(Event.MAILBOX_PAUSED, Event.MAILBOX_RESUMED),
                data__mailbox=enrollment_mailbox(enrollment).name)
        )
        .filter(at__gte=enrollment.created_at - timedelta(seconds=1))
        .order_by("at", "id")
    )


def stop_summary_of(enrollment: Enrollment) -> dict[str, Any] | None:
    """For a stopped or paused enrollment: what its stop canceled and what had already passed the hand-off."""
    if enrollment.status not in (Enrollment.Status.STOPPED, Enrollment.Status.PAUSED):
        return None
    kind = Event.ENROLLMENT_STOPPED if enrollment.status == Enrollment.Status.STOPPED else Event.ENROLLMENT_PAUSED
    event = TimelineEvent.objects.filter(enrollment=enrollment, kind=kind).order_by("-at", "-id").first()
    if event is None:
        return None
    data = event.data or {}
    summary = StopSummary(canceled=data.get("canceled", 0), in_flight=data.get("in_flight", 0),
                          submitted=data.get("submitted", 0))
    return {
        "kind": kind,
        "at": stamp(event.at),
        "reason": data.get("reason", "") or enrollment.stop_reason,
        **summary.as_dict(),
        "lines": stop_summary_sentences(canceled=summary.canceled, in_flight=summary.in_flight,
                                        submitted=summary.submitted,
                                        before="the stop" if kind == Event.ENROLLMENT_STOPPED else "the pause"),
        "actor": data.get("actor", ""),
        "source": data.get("source", ""),
        "because": data.get("because", ""),  # which event stopped it, and where, in words
    }


# --- what a pause or stop will do (confirmation pages) -------------------------------------

def jobs_forecast(jobs_qs) -> dict[str, int]:
    """Counts a stop of these jobs' enrollments would report: canceled, in flight, already submitted."""
    counts = Counter(dict(jobs_qs.order_by().values_list("state").annotate(n=Count("id"))))
    return {
        "cancel": sum(counts[s] for s in CANCELABLE),
        "claimed": counts[S.CLAIMED],
        "in_flight": counts[S.AUTHORIZED],
        "submitted": counts[S.SUBMITTED] + counts[S.ACCEPTED] + counts[S.UNKNOWN],
    }


# --- operator log -------------------------------------------------------


# What an action leaves behind when its result does not say (it always leaves this, or changes nothing).
_STATE_AFTER = {"enrollment_stop": "stopped", "suppression_add": "suppressed", "suppression_lift": "lifted",
                "sequence_pause": "paused", "sequence_resume": "active", "enrollment_resume": "active"}


@dataclass
class LogRow:
    action: OperatorAction
    at: str
    result: list[tuple[str, str]]
    state_after: str
    link: str | None  # the page of what the action was done to


def log_rows(actions: Iterable[OperatorAction]) -> list[LogRow]:
    rows = []
    for a in actions:
        result = a.result or {}
        if "status" in result:
            after = str(result["status"])
        elif "paused" in result:
            after = "paused" if result["paused"] else "active"
        elif a.action == "enrollment_pause":
            after = "paused" if result.get("changed") else "unchanged"
        else:
            after = _STATE_AFTER.get(a.action, "")
        rows.append(LogRow(action=a, at=stamp(a.at), state_after=after,
                           result=[(k, _json_text(v)) for k, v in result.items() if k not in ("status", "paused")],
                           link=_target_link(a)))
    return rows


CONTACT_ACTIONS = ("contact_edit", "contact_enroll")  # logged with the contact's id (no target kind of their own)


def _target_link(action: OperatorAction) -> str | None:
    kind, pk = action.target_kind, action.target_id
    if action.action in CONTACT_ACTIONS and pk:
        return reverse("contact_detail", args=[pk])
    if kind == T.ENROLLMENT and pk:
        return reverse("enrollment_detail", args=[pk])
    if kind == T.SEQUENCE and pk:
        return reverse("sequence_detail", args=[pk])
    if kind == T.MAILBOX:
        return reverse("mailbox_list")
    if kind == T.SUPPRESSION:
        return f"{reverse('suppression_history')}?{urlencode({'value': action.target})}"
    return None


