"""The incident view: find a job or an inbound message, and lay out the evidence of a send against a reply.

Every time here is the database clock, so the order of a final check and a
reply's commit is a fact, not a guess from Date headers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from inbound.models import InboundMessage
from sequences.job_rows import job_rows
from sequences.labels import stamp
from sequences.models import SendJob, TimelineEvent
from sequences.reply_view import max_age_seconds
from sequences.selectors import jobs_with_labels, normalize_email
from sequences.sending_mailbox import enrollment_mailbox
from sequences.states import PASSED_HANDOFF
from sequences.timeline import STOP_EVENTS, Event

from .rows import enrollment_events, event_rows

S = SendJob.State



def message_id_forms(q: str) -> list[str]:
    bare = q.strip().strip("<>").strip()
    return [bare, f"<{bare}>"] if bare else []


def incident_search(q: str) -> dict[str, Any]:
    """Jobs and inbound messages matching an address, @domain, Message-ID or SMTP/provider id."""
    q = q.strip()
    if not q:
        return {"jobs": [], "inbound": [], "total_jobs": 0}
    ids = message_id_forms(q)
    address = normalize_email(q.strip("<>"))
    job_filter = Q(message_id__in=ids) | Q(provider_message_id__in=ids) | Q(provider_request_id=q) | Q(
        provider_schedule_id=q
    )
    inbound_filter = Q(message_id__in=ids) | Q(job__message_id__in=ids)
    if address.startswith("@"):
        job_filter |= Q(enrollment__contact__email__iendswith=address)
        inbound_filter |= Q(from_address__iendswith=address)
    elif "@" in address:
        job_filter |= Q(enrollment__contact__email=address)
        inbound_filter |= Q(from_address__iexact=address) | Q(enrollment__contact__email=address)
    if len(q) >= 5 and " " not in q:
        # An SMTP queue id is only in the server's reply text ("250 2.0.0 Ok: queued as 4F2A1B").
        job_filter |= Q(smtp_reply__icontains=q)
    jobs = jobs_with_labels().filter(job_filter).order_by("-id")
    inbound = InboundMessage.objects.filter(inbound_filter).select_related("mailbox").order_by("-id")
    return {"jobs": job_rows(jobs[:100]), "total_jobs": jobs.count(), "inbound": list(inbound[:100])}


@dataclass
class LanePoint:
    lane: str  # "job" | "reply"
    at: datetime
    label: str
    kind: str  # css class: claim, check, authorized, submitted, canceled, received, committed, stop
    x: float = 0.0
    y: float = 0.0
    text_y: float = 0.0
    anchor: str = "middle"
    stamp: str = ""
    number: int = 0


def _job_point_kind(event: TimelineEvent) -> tuple[str, str] | None:
    data = event.data or {}
    kind = event.kind
    if kind == Event.JOB_CLAIMED:
        return "claim", "claimed"
    if kind == Event.JOB_AUTHORIZED:
        return "authorized", "final check: authorized" if data.get("final_check", True) else "authorized (unchecked)"
    if kind == Event.JOB_CANCELED and data.get("final_check"):
        return "canceled", f"final check: canceled ({data.get('reason', '')})"
    if kind == Event.JOB_CANCELED:
        return "canceled", f"canceled ({data.get('reason', '')})"
    if kind == Event.AUTHORIZE_NOOP:
        return "check", f"final check: refused (job {data.get('state', '?')})"
    if kind == Event.JOB_SUBMITTED:
        return "submitted", "submitted"
    if kind in (Event.JOB_UNKNOWN, Event.WORKER_LOST):
        return "unknown", "outcome unknown"
    if kind == Event.JOB_FAILED:
        return "canceled", "failed"
    if kind == Event.JOB_DEFERRED:
        return "check", f"final check: deferred ({data.get('reason', '')})"
    if kind == Event.JOB_QUEUED:
        return "queued", "queued"
    return None


# What lifts each kind of stop: a pause lifted before the job existed (or before its final check) did not
# apply to it, so it neither stopped it nor "violated" anything.
LIFTED_BY = {
    Event.SEQUENCE_PAUSED: (Event.SEQUENCE_RESUMED,),
    Event.MAILBOX_PAUSED: (Event.MAILBOX_RESUMED,),
    Event.ENROLLMENT_PAUSED: (Event.ENROLLMENT_RESUMED, Event.ENROLLMENT_REACTIVATED),
    Event.ENROLLMENT_STOPPED: (Event.ENROLLMENT_RESUMED, Event.ENROLLMENT_REACTIVATED),
    Event.SUPPRESSION_ADDED: (Event.SUPPRESSION_LIFTED,),
}
LIFT_EVENTS = tuple(dict.fromkeys(kind for kinds in LIFTED_BY.values() for kind in kinds))


@dataclass(frozen=True)
class Stop:
    """A stop event and, when it was lifted later, the event that lifted it."""

    event: TimelineEvent
    lifted: TimelineEvent | None

    def in_force_at(self, moment: datetime) -> bool:
        return self.event.at <= moment and (self.lifted is None or self.lifted.at > moment)


def _scope(event: TimelineEvent) -> tuple[str, Any]:
    """What a stop or a lift applies to: its sequence, mailbox, enrollment or ledger value."""
    data = event.data or {}
    if event.kind in (Event.SEQUENCE_PAUSED, Event.SEQUENCE_RESUMED):
        return "sequence", data.get("sequence")
    if event.kind in (Event.MAILBOX_PAUSED, Event.MAILBOX_RESUMED):
        return "mailbox", data.get("mailbox")
    if event.kind in (Event.SUPPRESSION_ADDED, Event.SUPPRESSION_LIFTED):
        return "ledger", event.email
    return "enrollment", event.enrollment_id


def stops_with_lifts(events: list[TimelineEvent]) -> list[Stop]:
    """Each stop event, paired with the first later event that lifted it (events in commit order)."""
    found = []
    for index, event in enumerate(events):
        if event.kind not in LIFTED_BY:
            continue
        lifts = LIFTED_BY[Event(event.kind)]
        lifted = next((e for e in events[index + 1:] if e.kind in lifts and _scope(e) == _scope(event)), None)
        found.append(Stop(event, lifted))
    return found


def incident_evidence(job: SendJob) -> dict[str, Any]:
    """The evidence for 'a follow-up was sent after my reply', and the two-lane picture of it."""
    enrollment = job.enrollment
    job_events = list(TimelineEvent.objects.filter(job=job).order_by("at", "id"))
    inbound = list(
        InboundMessage.objects.filter(Q(job=job) | Q(enrollment=enrollment)).filter(duplicate_of=None)
        .order_by("committed_at", "id")
    )
    scope_events = [
        e for e in enrollment_events(enrollment).filter(kind__in=STOP_EVENTS + LIFT_EVENTS)
        if e.kind not in (Event.SUPPRESSION_ADDED, Event.SUPPRESSION_LIFTED)
        or e.email in (enrollment.contact.email, "@" + enrollment.contact.domain)
    ]
    stops = stops_with_lifts(scope_events)
    final_checks = [e for e in job_events if e.kind in (Event.JOB_AUTHORIZED, Event.AUTHORIZE_NOOP, Event.JOB_DEFERRED)
                    or (e.kind == Event.JOB_CANCELED and (e.data or {}).get("final_check"))]
    claims = [e for e in job_events if e.kind == Event.JOB_CLAIMED]
    view = reply_view_at_authorization(job, job_events)
    # The moment that decided the job: its final check's authorization, or its cancellation. A stop lifted
    # before it did not apply to this job.
    decided = job.authorized_at or job.canceled_at
    relevant = [stop for stop in stops if decided is None or stop.lifted is None or stop.lifted.at > decided]

    points: list[LanePoint] = []
    for event in job_events:
        found = _job_point_kind(event)
        if found:
            css, label = found
            points.append(LanePoint("job", event.at, f"{label} v{event.version_seen or '?'}", css))
    for message in inbound:
        what = message.get_kind_display().lower()
        if message.internaldate:
            points.append(LanePoint("reply", message.internaldate, f"{what} received (INTERNALDATE)", "received"))
        points.append(LanePoint("reply", message.committed_at, f"{what} committed", "committed"))
    for stop in relevant:
        points.append(LanePoint("reply", stop.event.at, stop.event.kind.replace("_", " ") + " committed", "stop"))

    stop_times = [p.at for p in points if p.lane == "reply" and p.kind in ("committed", "stop")]
    return {
        "claims": [(stamp(e.at), e.version_seen, e.worker_id) for e in claims],
        "final_checks": event_rows(final_checks),
        "inbound": [
            {"message": m, "received": stamp(m.internaldate) if m.internaldate else "not reported",
             "committed": stamp(m.committed_at)} for m in inbound
        ],
        "stops": event_rows([stop.event for stop in stops]),
        "events": event_rows(job_events),
        "reply_view": view,
        "causes": causes(job, stops=stops, inbound=inbound, view=view,
                         existed=job_events[0].at if job_events else None),
        "verdict": verdict(job, stop_times, inbound, stops=stops),
        "lanes": lanes(points, window=_window(claims, final_checks)),
    }


@dataclass(frozen=True)
class ReplyViewAt:
    """The mailbox's reply view as the final check that authorized the job read it."""

    age: float | None  # seconds between the replies' read-through time and the authorization; None: no view
    max_age: int  # the mailbox's reply_view_max_age now
    read_through: datetime | None

    @property
    def stale(self) -> bool:
        return self.age is not None and self.age > self.max_age

    def words(self) -> str:
        if self.age is None:
            return "no reply view: the mailbox reads no replies (its follow-ups are allowed without one)"
        return (f"replies read through {stamp(self.read_through)}, {_gap(self.age).removeprefix('+')} before the "
                f"authorization (max age {self.max_age} s{': stale' if self.stale else ''})")


def reply_view_at_authorization(job: SendJob, job_events: list[TimelineEvent]) -> ReplyViewAt | None:
    """The reply view's age the authorization recorded (`replies_read_seconds_before`); None: not authorized."""
    authorized = next((e for e in reversed(job_events) if e.kind == Event.JOB_AUTHORIZED), None)
    if authorized is None or job.authorized_at is None:
        return None
    age = (authorized.data or {}).get("replies_read_seconds_before")
    read_through = job.authorized_at - timedelta(seconds=age) if age is not None else None
    return ReplyViewAt(age, max_age_seconds(enrollment_mailbox(job.enrollment)), read_through)


@dataclass(frozen=True)
class Cause:
    """One finding about what allowed (or did not allow) a send, most telling first."""

    tone: str  # css class: violation, reply-pending, stale-view, cannot-recall, not-a-cause
    title: str
    text: str


def causes(job: SendJob, *, stops: list[Stop], inbound: list[InboundMessage], view: ReplyViewAt | None,
           existed: datetime | None) -> list[Cause]:
    """What really allowed a send that passed the final check, in this order: a stop in force at the check
    (a guard violation), a reply received before the check but committed after it, a reply view that was
    stale; then what did not apply (a pause lifted before the job existed or before its check)."""
    at = job.authorized_at
    if at is None or not (job.state in PASSED_HANDOFF or job.state == S.FAILED):
        return []
    found: list[Cause] = []
    for stop in stops:
        if stop.in_force_at(at):
            found.append(Cause("violation", "Guard violation", f"{_stop_words(stop.event)} committed at "
                               f"{stamp(stop.event.at)} and was still in force when this job was authorized at "
                               f"{stamp(at)}. This must not happen: report it with this page."))
    for message in inbound:
        if message.internaldate and message.internaldate < at < message.committed_at:
            text = (f"A {message.get_kind_display().lower()} from {message.from_address or 'the person'} reached the "
                    f"mailbox at {stamp(message.internaldate)} (INTERNALDATE), "
                    f"{_gap((at - message.internaldate).total_seconds()).removeprefix('+')} before the final check, "
                    f"and was committed at {stamp(message.committed_at)}, "
                    f"{_gap((message.committed_at - at).total_seconds()).removeprefix('+')} after it: "
                    "the final check could not see it.")
            if view is not None and view.read_through is not None:
                through = stamp(view.read_through)
                text += (f" The reply view had read the folders only through {through}: the reply came after "
                         "that." if message.internaldate >= view.read_through else
                         f" The reply view had read the folders through {through} (from the age the authorization "
                         "recorded), after the reply arrived: the reply was not yet in a folder it read (moved "
                         "there later, or in a folder not watched).")
            found.append(Cause("reply-pending", "Reply received, not yet committed", text))
    # A first message needs no view; a follow-up leaves only on one (sequences.reply_view).
    if view is not None and view.age is None and job.step.position > 1:
        found.append(Cause("stale-view", "No reply view", "This follow-up passed the final check with no reply "
                           "view: the mailbox reads no replies (its follow-ups are allowed without one). A reply "
                           "that reached the mailbox could not stop it."))
    elif view is not None and view.stale and job.step.position > 1:
        found.append(Cause("stale-view", "Stale reply view", f"At the final check, {view.words()}. A reply that "
                           "reached the mailbox after the read-through time could not stop this job."))
    for stop in stops:
        if stop.lifted is not None and stop.lifted.at <= at:
            when = ("before this job existed" if existed is not None and stop.lifted.at <= existed
                    else "before its final check")
            found.append(Cause("not-a-cause", "Not a cause", f"{_stop_words(stop.event)} at {stamp(stop.event.at)}, "
                               f"lifted at {stamp(stop.lifted.at)} ({stop.lifted.kind.replace('_', ' ')}), {when}: "
                               "it did not apply to this job."))
    return found


def _stop_words(event: TimelineEvent) -> str:
    data = event.data or {}
    scope = data.get("sequence") or data.get("mailbox") or event.email or ""
    return event.kind.replace("_", " ").capitalize() + (f" ({scope})" if scope else "")


def _window(claims, final_checks) -> tuple[datetime, datetime] | None:
    if not claims:
        return None
    start = claims[-1].at
    end = next((e.at for e in final_checks if e.at >= start), None)
    return (start, end) if end else None


def _gap(seconds: float) -> str:
    if seconds < 1:
        return f"+{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"+{seconds:.1f} s"
    if seconds < 7200:
        return f"+{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"+{seconds / 3600:.0f} h"
    return f"+{seconds / 86400:.0f} d"


def _later(seconds: float) -> str:
    """A long gap in words, as drawn across a break: '… 105 s later …'."""
    return f"… {_gap(seconds).removeprefix('+')} later …"


# Spacing of the x axis: a gap takes more room the longer it is (on a log scale, so 10 ms and
# 105 s no longer look alike), and a gap of BREAK_SECONDS or more is drawn as a break labelled
# with its length. Every gap is labelled; labels are numbers matched to a list under the picture.
MIN_GAP_PX = 44.0
GAP_PX_PER_DECADE = 22.0  # extra room per factor of 10 above 1 ms
BREAK_SECONDS = 2.0
BREAK_PX = 170.0
SAME_X_PX = 16.0  # two events on one lane closer than this get their numbers stacked


def _gap_px(seconds: float) -> float:
    if seconds >= BREAK_SECONDS:
        return BREAK_PX
    return MIN_GAP_PX + GAP_PX_PER_DECADE * max(0.0, math.log10(max(seconds * 1000, 1.0)))


def lanes(points: list[LanePoint], *, window: tuple[datetime, datetime] | None) -> dict[str, Any]:
    """SVG geometry: two lanes on one database-clock axis, every gap sized by its length and labelled.

    Labels are short numbers next to the dots (above the send-job lane, below the reply lane, so
    the dashed guides between the lanes never cross one); the numbered list under the picture says
    what each is, with its time.
    """
    left, right_pad = 110, 30
    lane_y = {"job": 70, "reply": 170}
    height = 250
    times = sorted({p.at for p in points})
    xs: dict[datetime, float] = {}
    gaps, breaks = [], []
    x = float(left)
    for i, t in enumerate(times):
        if i:
            seconds = (t - times[i - 1]).total_seconds()
            width = _gap_px(seconds)
            middle = x + width / 2
            if seconds >= BREAK_SECONDS:
                breaks.append({"x": round(middle, 1), "text": _later(seconds)})
            else:
                gaps.append({"x": round(middle, 1), "text": _gap(seconds)})
            x += width
        xs[t] = round(x, 1)
    width = max(760, int(x) + right_pad)
    if len(times) == 1:  # one moment: in the middle
        xs[times[0]] = round(left + (width - left - right_pad) / 2, 1)

    ordered = sorted(points, key=lambda p: (p.at, p.lane))
    last_x: dict[str, float] = {}
    stack: dict[str, int] = defaultdict(int)
    for number, point in enumerate(ordered, 1):
        point.number = number
        point.x = xs[point.at]
        point.y = lane_y[point.lane]
        close = point.lane in last_x and point.x - last_x[point.lane] < SAME_X_PX
        stack[point.lane] = stack[point.lane] + 1 if close else 0
        last_x[point.lane] = point.x
        offset = 14 + 13 * stack[point.lane]
        point.text_y = point.y - offset if point.lane == "job" else point.y + offset + 8
        point.anchor = "middle"
        point.stamp = stamp(point.at)
    # Gap labels alternate between two rows where they are close, so neighbours never overlap.
    for i, gap in enumerate(gaps):
        gap["y"] = height - 26 if i % 2 == 0 else height - 12
    band = None
    if window and window[0] in xs and window[1] in xs:
        band = {"x": xs[window[0]], "w": max(xs[window[1]] - xs[window[0]], 2), "y": lane_y["job"] - 10, "h": 20}
    return {
        "width": width, "height": height, "left": left, "right": width - right_pad, "lane_y": lane_y,
        "points": ordered, "gaps": gaps, "breaks": breaks, "band": band, "break_y": height - 40,
        "empty": not points,
    }


def verdict(job: SendJob, stop_times: list[datetime], inbound: list[InboundMessage], *,
            stops: list[Stop] = ()) -> dict[str, str]:
    """One sentence an investigator can repeat, derived only from database-clock times. `stop_times`: when each
    reply or stop that applied to this job committed (not a pause lifted before the job was decided)."""
    passed = job.state in PASSED_HANDOFF or (job.state == S.FAILED and job.authorized_at is not None)
    if passed and job.authorized_at is not None:
        in_force = [s for s in stops if s.in_force_at(job.authorized_at)]
        if in_force:
            return {"tone": "violation", "text": f"A stop committed at {stamp(in_force[0].event.at)}, BEFORE this "
                                                 f"job was authorized at {stamp(job.authorized_at)}, and was still in "
                                                 "force. This must not happen: report it with this page."}
        # What committed before the authorization and was no stop in force (an auto-reply's hold, a lifted
        # pause) did not stop this job: the first stop is the first one after it.
        stop_times = [t for t in stop_times if t >= job.authorized_at]
    first_stop = min(stop_times, default=None)
    if first_stop is None:
        received = [m.internaldate for m in inbound if m.internaldate]
        return {"tone": "neutral", "text": "No reply, unsubscribe, complaint, bounce or pause is recorded for this "
                                           "enrollment." + (" (A reply was received but not committed.)"
                                                            if received else "")}
    if job.state == S.CANCELED:
        return {"tone": "never-sent", "text": f"The stop committed at {stamp(first_stop)}; this job was canceled at "
                                              f"{stamp(job.canceled_at)} ({job.cancel_reason}) — never sent."}
    if passed and job.authorized_at is not None:
        delta = _gap((first_stop - job.authorized_at).total_seconds())
        text = (f"Authorized at {stamp(job.authorized_at)}, and the first stop committed {delta} later at "
                f"{stamp(first_stop)}: the message had passed the final check — already submitted, cannot recall.")
        early = [m for m in inbound if m.internaldate and m.internaldate < job.authorized_at]
        if early:
            text += (f" The reply had reached the mailbox at {stamp(early[0].internaldate)} (INTERNALDATE) "
                     "but was not yet committed when the final check ran.")
        return {"tone": "cannot-recall", "text": text}
    return {"tone": "neutral", "text": f"The stop committed at {stamp(first_stop)}; this job is "
                                       f"{job.get_state_display()} and has not passed the hand-off."}
