"""The incident view: find a job or an inbound message, and lay out the evidence of a send against a reply.

Every time here is the database clock, so the order of a final check and a
reply's commit is a fact, not a guess from Date headers.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from mailboxes.models import InboundMessage

from ..labels import stamp
from ..models import SendJob, TimelineEvent
from ..selectors import jobs_with_labels, normalize_email
from ..states import PASSED_HANDOFF
from ..timeline import STOP_EVENTS, Event
from .rows import enrollment_events, event_rows, job_rows

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
        job_filter |= Q(enrollment__contact__email__endswith=address)
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


def incident_evidence(job: SendJob) -> dict[str, Any]:
    """The evidence for 'a follow-up was sent after my reply', and the two-lane picture of it."""
    enrollment = job.enrollment
    job_events = list(TimelineEvent.objects.filter(job=job).order_by("at", "id"))
    inbound = list(
        InboundMessage.objects.filter(Q(job=job) | Q(enrollment=enrollment)).filter(duplicate_of=None)
        .order_by("committed_at", "id")
    )
    stops = [
        e for e in enrollment_events(enrollment).filter(kind__in=STOP_EVENTS) if e.kind != Event.SUPPRESSION_ADDED
        or e.email in (enrollment.contact.email, "@" + enrollment.contact.domain)
    ]
    final_checks = [e for e in job_events if e.kind in (Event.JOB_AUTHORIZED, Event.AUTHORIZE_NOOP, Event.JOB_DEFERRED)
                    or (e.kind == Event.JOB_CANCELED and (e.data or {}).get("final_check"))]
    claims = [e for e in job_events if e.kind == Event.JOB_CLAIMED]

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
    for event in stops:
        points.append(LanePoint("reply", event.at, event.kind.replace("_", " ") + " committed", "stop"))

    first_stop = min([p.at for p in points if p.lane == "reply" and p.kind in ("committed", "stop")], default=None)
    return {
        "claims": [(stamp(e.at), e.version_seen, e.worker_id) for e in claims],
        "final_checks": event_rows(final_checks),
        "inbound": [
            {"message": m, "received": stamp(m.internaldate) if m.internaldate else "not reported",
             "committed": stamp(m.committed_at)} for m in inbound
        ],
        "stops": event_rows(stops),
        "events": event_rows(job_events),
        "verdict": verdict(job, first_stop, inbound),
        "lanes": lanes(points, window=_window(claims, final_checks)),
    }


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


def lanes(points: list[LanePoint], *, window: tuple[datetime, datetime] | None) -> dict[str, Any]:
    """SVG geometry. The x axis is event order (database clock), evenly spaced; gaps are labelled with durations.

    A linear time scale would squash a 20 ms claim-to-authorize window next to
    a reply that came hours later; what an investigator needs first is the
    order, then the distances, which the gap labels give.
    """
    width, left, right = 760, 110, 30
    lane_y = {"job": 80, "reply": 200}
    height = 275
    times = sorted({p.at for p in points})
    rank = {t: i for i, t in enumerate(times)}
    step = (width - left - right) / max(len(times) - 1, 1)

    def x_of(t: datetime) -> float:
        if len(times) == 1:
            return left + (width - left - right) / 2
        return round(left + rank[t] * step, 1)

    # Cycle each lane's labels through four rows (above/below, near/far) so neighbours do not overlap.
    per_lane_count: dict[str, int] = defaultdict(int)
    span = width - left - right
    for point in sorted(points, key=lambda p: (p.at, p.lane)):
        point.x = x_of(point.at)
        point.y = lane_y[point.lane]
        n = per_lane_count[point.lane]
        per_lane_count[point.lane] += 1
        point.text_y = point.y + (-14, 24, -30, 40)[n % 4]
        point.anchor = "start" if point.x < left + span / 3 else "end" if point.x > left + 2 * span / 3 else "middle"
        point.stamp = stamp(point.at)
    gaps = []
    for a, b in zip(times, times[1:], strict=False):
        gaps.append({"x": round((x_of(a) + x_of(b)) / 2, 1), "text": _gap((b - a).total_seconds())})
    band = None
    if window and window[0] in rank and window[1] in rank:
        band = {"x": x_of(window[0]), "w": max(x_of(window[1]) - x_of(window[0]), 2), "y": lane_y["job"] - 10,
                "h": 20}
    return {
        "width": width, "height": height, "left": left, "right": width - right, "lane_y": lane_y,
        "points": sorted(points, key=lambda p: (p.at, p.lane)), "gaps": gaps, "band": band,
        "gap_y": height - 12, "empty": not points,
    }


def verdict(job: SendJob, first_stop: datetime | None, inbound: list[InboundMessage]) -> dict[str, str]:
    """One sentence an investigator can repeat, derived only from database-clock times."""
    passed = job.state in PASSED_HANDOFF or (job.state == S.FAILED and job.authorized_at is not None)
    if first_stop is None:
        received = [m.internaldate for m in inbound if m.internaldate]
        return {"tone": "neutral", "text": "No reply, unsubscribe, complaint, bounce or pause is recorded for this "
                                           "enrollment." + (" (A reply was received but not committed.)"
                                                            if received else "")}
    if job.state == S.CANCELED:
        return {"tone": "never-sent", "text": f"The stop committed at {stamp(first_stop)}; this job was canceled at "
                                              f"{stamp(job.canceled_at)} ({job.cancel_reason}) — never sent."}
    if passed and job.authorized_at is not None:
        if job.authorized_at < first_stop:
            delta = _gap((first_stop - job.authorized_at).total_seconds())
            text = (f"Authorized at {stamp(job.authorized_at)}, and the first stop committed {delta} later at "
                    f"{stamp(first_stop)}: the message had passed the final check — already submitted, cannot recall.")
            early = [m for m in inbound if m.internaldate and m.internaldate < job.authorized_at]
            if early:
                text += (f" The reply had reached the mailbox at {stamp(early[0].internaldate)} (INTERNALDATE) "
                         "but was not yet committed when the final check ran.")
            return {"tone": "cannot-recall", "text": text}
        return {"tone": "violation", "text": f"A stop committed at {stamp(first_stop)}, BEFORE this job was "
                                             f"authorized at {stamp(job.authorized_at)}. This must not happen: "
                                             "report it with this page."}
    return {"tone": "neutral", "text": f"The stop committed at {stamp(first_stop)}; this job is "
                                       f"{job.get_state_display()} and has not passed the hand-off."}
