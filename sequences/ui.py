"""UI-only helpers: access checks, honest rows, timelines, dashboard counts, SVG geometry, the CSV import runner.

Reads only, plus `suppression_import_apply`, which composes the real
`services.suppression_add` row by row. Nothing here writes a state field.
Times shown to people go through `labels.stamp` (database clock, ms, UTC).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.http import HttpResponseNotAllowed
from django.utils import timezone

from mailboxes.models import InboundMessage, Mailbox

from . import services
from .jobstates import CANCELABLE, PASSED_HANDOFF
from .labels import job_label, stamp
from .models import Enrollment, OperatorAction, SendJob, Sequence, Suppression, TimelineEvent
from .selectors import normalize_email, suppression_active_for, suppression_key

S = SendJob.State

# --- roles and access ----------------------------------------------------------------

# Permissions the UI checks (the groups that hold them: sequences/migrations/0002_roles.py).
VIEW = "sequences.view_sequence"
VIEW_ENROLLMENT = "sequences.view_enrollment"
VIEW_INCIDENT = "sequences.view_timelineevent"
VIEW_INBOUND = "mailboxes.view_inboundmessage"
VIEW_MAILBOX = "mailboxes.view_mailbox"
VIEW_LEDGER = "sequences.view_suppression"
VIEW_LOG = "sequences.view_operatoraction"
OPERATE = "sequences.operate"
MANAGE_SUPPRESSIONS = "sequences.manage_suppressions"

PERM_TEXT = {
    OPERATE: "Pausing, resuming and stopping need the operators or admins role.",
    MANAGE_SUPPRESSIONS: "Adding, lifting, importing and exporting suppressions needs the admins role.",
}

# Inbound mail and contact fields are hostile input: besides autoescaping, the
# browser is told to load nothing that is not ours and to run no inline script.
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def ui_view(perm: str, *, methods: tuple[str, ...] = ("GET",)) -> Callable:
    """Anonymous -> login; permission missing -> 403 page; method not offered -> 405. Sets the CSP header."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            # Permission before method: a role without access gets the 403 page whatever it sends.
            if not request.user.has_perm(perm):
                raise PermissionDenied(PERM_TEXT.get(perm, "Your role does not include this page."))
            allowed = set(methods) | ({"HEAD"} if "GET" in methods else set())
            if request.method not in allowed:
                return HttpResponseNotAllowed(sorted(allowed))
            response = view(request, *args, **kwargs)
            if "Content-Security-Policy" not in response:
                response["Content-Security-Policy"] = CSP
            return response

        wrapped.required_perm = perm  # type: ignore[attr-defined]
        return wrapped

    return decorator


def page_of(request, items, per_page: int = 50):
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def query_without_page(request) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


# --- honest rows ---------------------------------------------------------------------------


def tone_of(job: SendJob, label: str) -> str:
    """A CSS class for a label: the colour says what happened, the words say it precisely."""
    if job.state in (S.CANCELED, S.FAILED):
        return "never-sent"
    if job.state == S.UNKNOWN:
        return "unknown"
    if job.provider_schedule_id and job.provider_cancel_status:
        # Held at a provider for later delivery: the provider's answer to our cancel decides.
        return {"confirmed": "never-sent", "requested": "pending"}.get(job.provider_cancel_status, "cannot-recall")
    if "cannot recall" in label:
        return "cannot-recall"
    if job.state in (S.SUBMITTED, S.ACCEPTED):
        return "sent"
    return "pending"


@dataclass
class JobRow:
    job: SendJob
    label: str
    tone: str
    position: int


def job_rows(jobs: Iterable[SendJob]) -> list[JobRow]:
    """Jobs with their honest labels; the queryset must select_related enrollment__sequence__mailbox and step."""
    rows = []
    for job in jobs:
        label = job_label(job)
        rows.append(JobRow(job=job, label=label, tone=tone_of(job, label), position=job.step.position))
    return rows


def jobs_with_labels_qs():
    return SendJob.objects.select_related(
        "enrollment__sequence__mailbox", "enrollment__contact", "step"
    )


def latest_job_rows(enrollment_ids: list[int]) -> dict[int, JobRow]:
    """The most recent job of each enrollment (by step, then id), labelled."""
    latest: dict[int, SendJob] = {}
    for job in jobs_with_labels_qs().filter(enrollment_id__in=enrollment_ids).order_by("step__position", "id"):
        latest[job.enrollment_id] = job
    return {eid: job_rows([job])[0] for eid, job in latest.items()}


# --- timelines ------------------------------------------------------------------------------

STOP_KINDS = ("enrollment_stopped", "enrollment_paused", "sequence_paused", "mailbox_paused", "suppression_added")
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
    return (
        TimelineEvent.objects.filter(
            Q(enrollment=enrollment)
            | Q(job__enrollment=enrollment)
            | Q(kind__startswith="suppression_", email__in=[email, "@" + enrollment.contact.domain])
            | Q(kind__in=("sequence_paused", "sequence_resumed"), data__sequence=sequence.name)
            | Q(kind__in=("mailbox_paused", "mailbox_resumed"), data__mailbox=sequence.mailbox.name)
        )
        .filter(at__gte=enrollment.created_at - timedelta(seconds=1))
        .order_by("at", "id")
    )


def stop_summary_of(enrollment: Enrollment) -> dict[str, Any] | None:
    """For a stopped or paused enrollment: what its stop canceled and what had already passed the hand-off."""
    if enrollment.status not in (Enrollment.Status.STOPPED, Enrollment.Status.PAUSED):
        return None
    kind = "enrollment_stopped" if enrollment.status == Enrollment.Status.STOPPED else "enrollment_paused"
    event = TimelineEvent.objects.filter(enrollment=enrollment, kind=kind).order_by("-at", "-id").first()
    if event is None:
        return None
    data = event.data or {}
    return {
        "kind": kind,
        "at": stamp(event.at),
        "reason": data.get("reason", "") or enrollment.stop_reason,
        "canceled": data.get("canceled", 0),
        "in_flight": data.get("in_flight", 0),
        "submitted": data.get("submitted", 0),
        "actor": data.get("actor", ""),
        "source": data.get("source", ""),
    }


# --- what a pause or stop will do (confirmation pages) -------------------------------------

SHOWN_JOBS = 50  # job rows listed after an action; the counts are always complete


def jobs_forecast(jobs_qs) -> dict[str, int]:
    """Counts a stop of these jobs' enrollments would report: canceled, in flight, already submitted."""
    counts = Counter(dict(jobs_qs.order_by().values_list("state").annotate(n=Count("id"))))
    return {
        "cancel": sum(counts[s] for s in CANCELABLE),
        "claimed": counts[S.CLAIMED],
        "in_flight": counts[S.AUTHORIZED],
        "submitted": counts[S.SUBMITTED] + counts[S.ACCEPTED] + counts[S.UNKNOWN],
    }


def passed_handoff_rows(jobs_qs, limit: int = SHOWN_JOBS) -> tuple[list[JobRow], int]:
    qs = jobs_qs.filter(state__in=PASSED_HANDOFF).order_by("-authorized_at", "-id")
    return job_rows(qs[:limit]), qs.count()


def stop_result(summary: services.StopSummary, *, action: str, target: str) -> dict[str, Any]:
    """What a view keeps in the session to show once after the redirect (the counts, and the first jobs)."""
    return {"action": action, "target": target, **summary.as_dict(),
            "job_ids_canceled": summary.job_ids_canceled[:SHOWN_JOBS]}


def stop_result_rows(result: dict[str, Any], jobs_qs) -> dict[str, Any]:
    canceled = job_rows(jobs_with_labels_qs().filter(pk__in=result.get("job_ids_canceled", [])).order_by("id"))
    handed_off, handed_off_total = passed_handoff_rows(jobs_qs)
    return {**result, "canceled_rows": canceled, "handed_off_rows": handed_off, "handed_off_total": handed_off_total}


# --- dashboard ----------------------------------------------------------------------------------


def dashboard() -> dict[str, Any]:
    enrollments = Counter()
    stopped_by_reason = Counter()
    for status, reason, n in Enrollment.objects.values_list("status", "stop_reason").annotate(n=Count("id")):
        enrollments[status] += n
        if status == Enrollment.Status.STOPPED:
            stopped_by_reason[Enrollment.StopReason(reason).label if reason in Enrollment.StopReason.values
                              else reason] += n
    in_flight_states = (S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)
    jobs = dict(
        SendJob.objects.filter(state__in=in_flight_states).values_list("state").annotate(n=Count("id"))
    )
    unknown_qs = jobs_with_labels_qs().filter(state=S.UNKNOWN).order_by("-finished_at", "-id")
    return {
        "enrollments": [(label, enrollments[value]) for value, label in Enrollment.Status.choices],
        "stopped_by_reason": sorted(stopped_by_reason.items()),
        "sequences": dict(Sequence.objects.values_list("status").annotate(n=Count("id"))),
        "in_flight": [(S(state).label, jobs.get(state, 0)) for state in in_flight_states],
        "unknown_rows": job_rows(unknown_qs[:20]),
        "unknown_total": unknown_qs.count(),
        "mailboxes": list(Mailbox.objects.order_by("name")),
        "chart": activity_chart(),
    }


@dataclass
class Bar:
    x: float
    y: float
    w: float
    h: float
    series: str
    title: str


def activity_chart(days: int = 14) -> dict[str, Any]:
    """Sends, replies and bounces per day (UTC), as bar geometry for a server-rendered SVG."""
    today = timezone.now().date()
    start = today - timedelta(days=days - 1)
    start_dt = datetime.combine(start, datetime.min.time(), tzinfo=timezone.get_current_timezone())

    def per_day(qs, field_name: str) -> dict:
        return dict(
            qs.filter(**{f"{field_name}__gte": start_dt})
            .annotate(day=TruncDate(field_name))
            .values_list("day")
            .annotate(n=Count("id"))
        )

    series = {
        "sends": per_day(SendJob.objects.exclude(submitted_at=None), "submitted_at"),
        "replies": per_day(InboundMessage.objects.filter(kind=InboundMessage.Kind.HUMAN_REPLY,
                                                         duplicate_of=None), "committed_at"),
        "bounces": per_day(InboundMessage.objects.filter(kind=InboundMessage.Kind.BOUNCE, duplicate_of=None),
                           "committed_at"),
    }
    width, height, left, bottom, top = 640, 180, 32, 24, 10
    plot_h = height - bottom - top
    group_w = (width - left) / days
    bar_w = (group_w - 6) / 3
    peak = max([1] + [n for data in series.values() for n in data.values()])
    bars, labels = [], []
    totals = {name: sum(data.values()) for name, data in series.items()}
    for i in range(days):
        day = start + timedelta(days=i)
        x0 = left + i * group_w + 3
        for j, name in enumerate(series):
            n = series[name].get(day, 0)
            h = plot_h * n / peak
            bars.append(Bar(x=round(x0 + j * bar_w, 1), y=round(top + plot_h - h, 1), w=round(bar_w - 1, 1),
                            h=round(h, 1), series=name, title=f"{day:%Y-%m-%d}: {n} {name}"))
        if i % 2 == 0 or days <= 7:
            labels.append({"x": round(x0 + group_w / 2 - 3, 1), "text": f"{day:%m-%d}"})
    return {
        "width": width, "height": height, "bars": bars, "labels": labels, "peak": peak,
        "axis_y": top + plot_h, "top": top, "left": left, "label_y": height - 8, "totals": totals,
        "days": days, "start": start, "end": today,
    }


# --- incident view ----------------------------------------------------------------------------


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
    jobs = jobs_with_labels_qs().filter(job_filter).order_by("-id")
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
    if kind == "job_claimed":
        return "claim", "claimed"
    if kind == "job_authorized":
        return "authorized", "final check: authorized" if data.get("final_check", True) else "authorized (unchecked)"
    if kind == "job_canceled" and data.get("final_check"):
        return "canceled", f"final check: canceled ({data.get('reason', '')})"
    if kind == "job_canceled":
        return "canceled", f"canceled ({data.get('reason', '')})"
    if kind == "authorize_noop":
        return "check", f"final check: refused (job {data.get('state', '?')})"
    if kind == "job_submitted":
        return "submitted", "submitted"
    if kind in ("job_unknown", "worker_lost"):
        return "unknown", "outcome unknown"
    if kind == "job_failed":
        return "canceled", "failed"
    if kind == "job_deferred":
        return "check", f"final check: deferred ({data.get('reason', '')})"
    if kind == "job_queued":
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
        e for e in enrollment_events(enrollment).filter(kind__in=STOP_KINDS) if e.kind != "suppression_added"
        or e.email in (enrollment.contact.email, "@" + enrollment.contact.domain)
    ]
    final_checks = [e for e in job_events if e.kind in ("job_authorized", "authorize_noop", "job_deferred")
                    or (e.kind == "job_canceled" and (e.data or {}).get("final_check"))]
    claims = [e for e in job_events if e.kind == "job_claimed"]

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


# --- suppression ledger ----------------------------------------------------------------------


def ledger_search(q: str, *, history: bool):
    """Current entries (latest per value) or the whole history, filtered by address or domain."""
    from .selectors import suppressions_current

    qs = Suppression.objects.all() if history else suppressions_current()
    q = q.strip()
    if q:
        value, _ = suppression_key(q)
        if "@" in value:
            domain = "@" + value.rsplit("@", 1)[-1]
            qs = qs.filter(Q(value=value) | Q(value=domain) | Q(value__icontains=value))
        else:
            qs = qs.filter(value__icontains=value)
    return qs.order_by("-id")


def source_link(source: str) -> int | None:
    match = _INBOUND_REF.match(source or "")
    return int(match.group(1)) if match else None


def value_status(value: str) -> dict[str, Any]:
    value, is_domain = suppression_key(value)
    latest = Suppression.objects.filter(value=value).order_by("-id").first()
    blocking = None if is_domain else suppression_active_for(value)
    return {"value": value, "is_domain": is_domain, "latest": latest, "blocking": blocking}


@dataclass
class ImportRow:
    line: int
    value: str
    reason: str
    note: str


def suppression_import_apply(
    rows: list[ImportRow], *, actor: str, source: str, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Suppress each row through `services.suppression_add` (one durable transaction per row).

    A row that fails does not stop the others; its error is reported with its line.
    """
    added = already = 0
    stopped = canceled = submitted = 0
    errors: list[dict[str, Any]] = []
    for i, row in enumerate(rows, 1):
        value, _ = suppression_key(row.value)
        before = Suppression.objects.filter(value=value).order_by("-id").values_list("id", "action").first()
        try:
            entry, summary = services.suppression_add(
                value=row.value, reason=row.reason, note=row.note, source=f"{source} line {row.line}", actor=actor
            )
        except services.ServiceError as exc:
            errors.append({"line": row.line, "value": row.value, "error": str(exc)})
        else:
            if before and before[0] == entry.pk:
                already += 1
            else:
                added += 1
            stopped += summary.enrollments
            canceled += summary.canceled
            submitted += summary.submitted + summary.in_flight
        if progress and (i % 25 == 0 or i == len(rows)):
            progress(i, len(rows))
    return {"total": len(rows), "added": added, "already": already, "errors": errors,
            "enrollments_stopped": stopped, "jobs_canceled": canceled, "jobs_cannot_recall": submitted}


def suppression_import_task(rows: list[dict[str, Any]], actor: str, source: str, invalid: list[dict[str, Any]]):
    """RQ job for large CSV imports; reports progress in the job's meta for the status page."""
    from rq import get_current_job

    job = get_current_job()

    def progress(done: int, total: int) -> None:
        if job is not None:
            job.meta.update({"done": done, "total": total})
            job.save_meta()

    result = suppression_import_apply([ImportRow(**r) for r in rows], actor=actor, source=source, progress=progress)
    result["errors"] = sorted(invalid + result["errors"], key=lambda e: e["line"])
    return result


_ENROLLMENT_TARGET = re.compile(r"^enrollment (\d+)$")
# What an action leaves behind when its result does not say (it always leaves this, or changes nothing).
_STATE_AFTER = {"enrollment_stop": "stopped", "suppression_add": "suppressed", "suppression_lift": "lifted",
                "sequence_pause": "paused", "sequence_resume": "active", "enrollment_resume": "active"}


@dataclass
class LogRow:
    action: OperatorAction
    at: str
    result: list[tuple[str, str]]
    state_after: str
    enrollment_id: int | None


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
        match = _ENROLLMENT_TARGET.match(a.target)
        rows.append(LogRow(action=a, at=stamp(a.at), state_after=after,
                           result=[(k, _json_text(v)) for k, v in result.items() if k not in ("status", "paused")],
                           enrollment_id=int(match.group(1)) if match else None))
    return rows


def operator_log(q: str = "", action: str = ""):
    qs = OperatorAction.objects.all()
    if q:
        qs = qs.filter(Q(actor__icontains=q) | Q(target__icontains=q))
    if action:
        qs = qs.filter(action=action)
    return qs.order_by("-at", "-id")
