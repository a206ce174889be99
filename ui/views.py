"""Operator UI views: parse input, call one service, render. None of them writes a state field.

Every view is wrapped by `access.ui_view`: anonymous -> login, missing permission
-> the 403 page. Pause/stop/resume are two steps: a GET confirmation that says
what will happen, then a POST that calls the service and redirects to a page
showing what did happen (kept once in the session).
"""

from __future__ import annotations

import csv
import secrets
from collections import Counter, defaultdict
from dataclasses import asdict
from urllib.parse import urlencode

import django_rq
from django.contrib import messages
from django.db.models import Count, Q
from django.http import Http404, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from inbound.replies import receipts
from inbound.replies.crossed import enrollment_crossings
from sequences import job_rows as labelled
from sequences import tasks
from sequences.labels import send_time_words, stop_summary_text
from sequences.models import Enrollment, OperatorAction, SendJob, Sequence, Step, StepVariant, Suppression
from sequences.permissions import (
    MANAGE_SUPPRESSIONS,
    OPERATE,
    VIEW,
    VIEW_ENROLLMENT,
    VIEW_INCIDENT,
    VIEW_LEDGER,
    VIEW_LOG,
)
from sequences.selectors import (
    jobs_with_labels,
    ledger_search,
    operator_actions,
    provider_cancels_pending,
    suppression_active_for,
    suppression_status,
    suppressions_current,
)
from sequences.sending_mailbox import enrollment_mailbox
from sequences.services import stops, suppressions
from sequences.services.common import ServiceError
from sequences.services.rotation import sequence_pool
from sequences.services.stops import send_job_retry
from sequences.states import CANCELABLE

from . import charts, dashboard_counts, editor, hold_words, incidents, reply_rules, results, rows, sendwhen, summary
from .access import page_of, query_without_page, ui_view
from .forms import (
    SearchForm,
    SuppressionAddForm,
    SuppressionImportForm,
    SuppressionLiftForm,
    guard_formula,
)
from .variant_results import variant_results

E = Enrollment.Status
# Imports up to this many rows run inside the request; larger ones in an RQ job with a progress page.
INLINE_IMPORT_ROWS = 200
INLINE_IMPORT_PREFIX = "inline-"  # an import done inside the request; its result lives in the session
# Entries a page of the operator log: on a phone each is a card of six lines or more, and 20 keep a page a
# few screens long.
LIST_PAGE = 20


def _actor(request) -> str:
    return request.user.get_username()


def _search(request) -> str:
    form = SearchForm(request.GET)
    return form.cleaned_data["q"].strip() if form.is_valid() else ""


def _result_key(kind: str, pk: int | str) -> str:
    return f"ui-result:{kind}:{pk}"


_PAGES = {"sequence": "sequence_detail", "enrollment": "enrollment_detail"}


def _back_with(request, kind: str, pk: int, result: dict) -> HttpResponse:
    """Redirect to the object's page, which shows what the action did (kept in the session, named in the URL)."""
    return redirect(reverse(_PAGES[kind], args=[pk]) + summary.result_keep(request, _result_key(kind, pk), result))


# --- dashboard -----------------------------------------------------------------------------------


@ui_view(VIEW)
def dashboard(request):
    counted = dashboard_counts.latest()
    return render(request, "ui/dashboard.html", {
        **charts.dashboard(counted.numbers), "counted_at": counted.counted_at,
        "sequence_results": dashboard_counts.sequence_results(counted),
        "unhandled_replies": results.unhandled_replies(), **results.reply_tasks(),
        "reply_to_stop": dashboard_counts.reply_to_stop(counted), "reply_to_stop_days": receipts.DAYS,
    })


# --- sequences ------------------------------------------------------------------------------------


@ui_view(VIEW)
def sequence_list(request):
    q = _search(request)
    status = request.GET.get("status", "")
    qs = Sequence.objects.select_related("mailbox")
    if q:
        qs = qs.filter(Q(name__icontains=q) | Q(mailbox__name__icontains=q) | Q(mailbox__address__icontains=q))
    if status in Sequence.Status.values:
        qs = qs.filter(status=status)
    page = page_of(request, qs.order_by("name"))
    _enrollment_counts(page)
    return render(request, "ui/sequence_list.html", {
        "page": page, "q": q, "status": status,
        "statuses": Sequence.Status.choices, "query": query_without_page(request),
    })


def _enrollment_counts(sequences) -> None:
    """Each shown sequence's enrollments by status, in one grouped read that the (sequence, status) index answers.

    (Counting through a join of every sequence with every enrollment took a third of a second at 200,000.)
    """
    counts: Counter = Counter()
    grouped = (Enrollment.objects.filter(sequence_id__in=[s.pk for s in sequences]).order_by()
               .values_list("sequence_id", "status").annotate(n=Count("*")))
    for sequence_id, value, n in grouped:
        counts[sequence_id, value] = n
    for s in sequences:
        s.n_active, s.n_paused = counts[s.pk, E.ACTIVE], counts[s.pk, E.PAUSED]
        s.n_stopped, s.n_completed = counts[s.pk, E.STOPPED], counts[s.pk, E.COMPLETED]
        s.n_total = sum(n for (sequence_id, _), n in counts.items() if sequence_id == s.pk)


@ui_view(VIEW)
def sequence_detail(request, pk: int):
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    q = _search(request)
    status = request.GET.get("status", "")
    enrollments = sequence.enrollments.select_related("contact").order_by("-id")
    if q:
        enrollments = enrollments.filter(
            Q(contact__email__icontains=q) | Q(contact__first_name__icontains=q)
            | Q(contact__last_name__icontains=q) | Q(contact__company__icontains=q)
        )
    if status in E.values:
        enrollments = enrollments.filter(status=status)
    # 10 people a page: the list sits under the steps, the results and what will send when, and on a phone
    # a person is a card a third of a screen high.
    page = page_of(request, enrollments, per_page=10)
    latest = labelled.latest_job_rows([e.pk for e in page], brief=True)
    result = summary.result_kept(request, _result_key("sequence", pk))
    return render(request, "ui/sequence_detail.html", {
        "sequence": sequence, "steps": sequence.steps.order_by("position"),
        "page": page, "rows": [(e, latest.get(e.pk)) for e in page], "q": q, "status": status,
        "statuses": E.choices, "query": query_without_page(request), "result": result,
        "can_operate": request.user.has_perm(OPERATE),
        "counts": dict(sequence.enrollments.values_list("status").annotate(n=Count("id"))),
        "step_rows": _with_variants(editor.step_rows(sequence)), "results": results.step_results(sequence),
        "variant_results": variant_results(sequence),
        # By step (an index of step and state), not through the enrollments; the sequence was found in the
        # request's workspace, so its jobs need no filter of theirs (with one, the planner leaves the index).
        **_send_when(SendJob._base_manager.filter(step__in=Step._base_manager.filter(sequence=sequence).values("pk"))),
        "empty_why": sendwhen.idle_reason(sequence=sequence), "reply_rules": reply_rules.rule_rows(sequence),
    })


def _with_variants(step_rows: list[dict]) -> list[dict]:
    """Each step row with its variants in words ("2 variants: A, B"), '' for a step that sends its own text."""
    running, stopped = defaultdict(list), defaultdict(list)
    for variant in StepVariant.objects.filter(step__in=[r["step"] for r in step_rows]).order_by("id"):
        (stopped if variant.stopped_at else running)[variant.step_id].append(variant.name)
    for row in step_rows:
        names, halted = running[row["step"].pk], stopped[row["step"].pk]
        words = f"{len(names)} variant{pluralize(len(names))}: {', '.join(names)}" if names else ""
        if halted:
            words += f"{'; ' if words else ''}{', '.join(halted)} stopped"
        row["variants"] = words
    return step_rows


def _blind_mailboxes(sequence: Sequence) -> tuple[list, str]:
    """The sequence's mailboxes whose follow-ups would all be held (they read no replies: no IMAP, and no
    `follow_ups_without_reply_view`, the reply view's NOT_READ), and its follow-up steps in words."""
    positions = list(sequence.steps.filter(position__gt=1).order_by("position").values_list("position", flat=True))
    if not positions:
        return [], ""
    blind = [m for m in sequence_pool(sequence) if not m.has_imap and not m.follow_ups_without_reply_view]
    if len(positions) == 1:
        steps = f"step {positions[0]}"
    elif len(positions) == 2:
        steps = f"steps {positions[0]} and {positions[1]}"
    else:
        steps = f"steps {positions[0]} to {positions[-1]}"
    return blind, steps


def _send_when(jobs) -> dict:
    """"What will send when" for a page: the rows, how many in all, and the rows as shown (the rest folded)."""
    send_when = sendwhen.send_when_rows(jobs)
    return {"send_when": send_when, "send_when_parts": sendwhen.send_when_parts(send_when[0])}


@ui_view(OPERATE, methods=("GET", "POST"))
def sequence_pause(request, pk: int):
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    if request.method == "POST":
        paused = stops.sequence_pause(sequence_id=sequence.pk, actor=_actor(request))
        done = summary.stop_result(
            paused, action="pause" if paused.changed else "pause-noop", target=sequence.name
        )
        return _back_with(request, "sequence", pk, done)
    return render(request, "ui/confirm.html", {
        "kind": "sequence_pause", "object": sequence, "title": f"Pause sequence “{sequence.name}”?",
        "forecast": rows.jobs_forecast(SendJob.objects.filter(enrollment__sequence=sequence)),
        "already": sequence.status == Sequence.Status.PAUSED,
        "back": reverse("sequence_detail", args=[pk]), "button": "Pause sequence",
    })


@ui_view(OPERATE, methods=("GET", "POST"))
def sequence_launch(request, pk: int):
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    error = ""
    if request.method == "POST":
        try:
            waiting = stops.sequence_launch(sequence_id=sequence.pk, actor=_actor(request))
        except ServiceError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Launched “{sequence.name}”: {waiting} email{'' if waiting == 1 else 's'} "
                                      "waiting to be sent, each through the final check.")
            return redirect("sequence_detail", pk=pk)
    blind, follow_up_steps = _blind_mailboxes(sequence)
    return render(request, "ui/confirm.html", {
        "kind": "sequence_launch", "object": sequence, "title": f"Launch sequence “{sequence.name}”?",
        "active_enrollments": sequence.enrollments.filter(status=E.ACTIVE).count(), "error": error,
        "mailbox_paused": any(m.paused for m in sequence_pool(sequence)),
        "blind": blind, "follow_up_steps": follow_up_steps, "pooled": sequence.pool.count() > 1,
        "already": sequence.status != Sequence.Status.DRAFT,
        "back": reverse("sequence_detail", args=[pk]), "button": "Launch sequence",
    }, status=400 if error else 200)


@ui_view(OPERATE, methods=("GET", "POST"))
def sequence_resume(request, pk: int):
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    if request.method == "POST":
        scheduled = stops.sequence_resume(sequence_id=sequence.pk, actor=_actor(request))
        return _back_with(request, "sequence", pk, {"action": "resume", "target": sequence.name,
                                                    "scheduled": scheduled})
    return render(request, "ui/confirm.html", {
        "kind": "sequence_resume", "object": sequence, "title": f"Resume sequence “{sequence.name}”?",
        "active_enrollments": sequence.enrollments.filter(status=E.ACTIVE).count(),
        "mailbox_paused": any(m.paused for m in sequence_pool(sequence)),
        "already": sequence.status == Sequence.Status.ACTIVE,
        "back": reverse("sequence_detail", args=[pk]), "button": "Resume sequence",
    })


# --- enrollments -------------------------------------------------------------------------------


def _enrollment(pk: int) -> Enrollment:
    return get_object_or_404(Enrollment.objects.select_related("contact", "mailbox", "sequence__mailbox"), pk=pk)


@ui_view(VIEW_ENROLLMENT)
def enrollment_detail(request, pk: int):
    enrollment = _enrollment(pk)
    jobs = jobs_with_labels().filter(enrollment=enrollment).order_by("step__position", "id")
    result = summary.result_kept(request, _result_key("enrollment", pk))
    upcoming = next((job for job in jobs if job.state in CANCELABLE), None)
    send_when = sendwhen.send_when_rows(SendJob.objects.filter(enrollment=enrollment))
    evidence = labelled.with_reply_view_at_hand_off(labelled.job_rows(jobs))
    job_rows = sendwhen.scheduled_labels_agree(evidence, send_when[0])
    next_send = sendwhen.next_send_words(upcoming, send_when[0]) if upcoming is not None else ""
    return render(request, "ui/enrollment_detail.html", {
        "enrollment": enrollment, "contact": enrollment.contact,
        "job_rows": job_rows, "mailbox": enrollment_mailbox(enrollment),
        "next_send": next_send or (send_time_words(upcoming).text if upcoming is not None else ""),
        "hold": hold_words.enrollment_hold(enrollment, upcoming),
        "events": rows.event_rows(rows.enrollment_events(enrollment)),
        "inbound": enrollment.inbound.select_related("mailbox").order_by("committed_at", "id"),
        "stop": rows.stop_summary_of(enrollment), "result": result,
        "can_operate": request.user.has_perm(OPERATE),
        "blocked": suppression_active_for(enrollment.contact.email),
        "send_when": send_when, "send_when_parts": sendwhen.send_when_parts(send_when[0]),
        "empty_why": sendwhen.idle_reason(sequence=enrollment.sequence, enrollment=enrollment),
        "crossings": enrollment_crossings(enrollment.pk),
    })


def _enrollment_confirm(request, enrollment: Enrollment, kind: str, *, error: str = "", status: int = 200):
    titles = {
        "enrollment_pause": ("Pause", "Pause enrollment"),
        "enrollment_stop": ("Stop", "Stop enrollment for good"),
        "enrollment_resume": ("Resume", "Resume enrollment"),
    }
    verb, button = titles[kind]
    return render(request, "ui/confirm.html", {
        "kind": kind, "object": enrollment,
        "title": f"{verb} {enrollment.contact.email} in “{enrollment.sequence.name}”?",
        "forecast": rows.jobs_forecast(SendJob.objects.filter(enrollment=enrollment)),
        "already": (kind == "enrollment_pause" and enrollment.status != E.ACTIVE)
        or (kind == "enrollment_stop" and enrollment.status == E.STOPPED)
        or (kind == "enrollment_resume" and enrollment.status == E.ACTIVE),
        "blocked": suppression_active_for(enrollment.contact.email),
        "back": reverse("enrollment_detail", args=[enrollment.pk]), "button": button, "error": error,
    }, status=status)


def _enrollment_halt(request, pk: int, action: str, halt) -> HttpResponse:
    """GET: confirm what a pause or stop will do. POST: do it, and show once what it did."""
    enrollment = _enrollment(pk)
    if request.method != "POST":
        return _enrollment_confirm(request, enrollment, f"enrollment_{action}")
    did = halt(_actor(request))
    return _back_with(request, "enrollment", pk, summary.stop_result(
        did, action=action if did.changed else f"{action}-noop", target=str(enrollment)))


@ui_view(OPERATE, methods=("GET", "POST"))
def enrollment_pause(request, pk: int):
    return _enrollment_halt(request, pk, "pause",
                            lambda actor: stops.enrollment_pause(enrollment_id=pk, actor=actor))


@ui_view(OPERATE, methods=("GET", "POST"))
def enrollment_stop(request, pk: int):
    return _enrollment_halt(request, pk, "stop", lambda actor: stops.enrollment_stop(
        enrollment_id=pk, reason=Enrollment.StopReason.OPERATOR, actor=actor, source="operator UI"))


@ui_view(OPERATE, methods=("GET", "POST"))
def enrollment_resume(request, pk: int):
    enrollment = _enrollment(pk)
    if request.method == "POST":
        try:
            stops.enrollment_resume(enrollment_id=pk, actor=_actor(request))
        except ServiceError as exc:
            # Refused by the domain (suppressed, completed): say why, never a silent no-op.
            return _enrollment_confirm(request, enrollment, "enrollment_resume", error=str(exc), status=409)
        return _back_with(request, "enrollment", pk, {
            "action": "resume", "target": str(enrollment),
            "waiting_jobs": provider_cancels_pending(enrollment_id=pk),
        })
    return _enrollment_confirm(request, enrollment, "enrollment_resume")


@ui_view(OPERATE, methods=("POST",))
def job_retry(request, pk: int):
    """Send a failed step again: a new job, due now, through the final check like any other."""
    job = get_object_or_404(SendJob.objects.select_related("step", "enrollment__contact"), pk=pk)
    try:
        send_job_retry(job_id=pk, actor=_actor(request))
    except ServiceError as exc:
        messages.error(request, f"Step {job.step.position} to {job.enrollment.contact.email} was not sent again: {exc}")
    else:
        messages.success(request, f"Step {job.step.position} to {job.enrollment.contact.email} is sent again, due "
                                  "now; it is checked before it leaves.")
    back = request.POST.get("next", "")
    # A path of this site only (a name that is no path is no view either), printable so that it fits a header.
    if back.startswith("/") and back.isprintable() and url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return HttpResponseRedirect(back)  # the list the operator retried from
    return redirect("enrollment_detail", pk=job.enrollment_id)


# --- incidents ------------------------------------------------------------------------------------


@ui_view(VIEW_INCIDENT)
def incident_search(request):
    q = _search(request)
    return render(request, "ui/incident_search.html", {"q": q, **incidents.incident_search(q)})


@ui_view(VIEW_INCIDENT)
def incident_job(request, pk: int):
    job = get_object_or_404(jobs_with_labels(), pk=pk)
    row = labelled.job_rows([job])[0]
    return render(request, "ui/incident_job.html", {"job": job, "row": row, **incidents.incident_evidence(job)})


# --- suppression ledger --------------------------------------------------------------------------


@ui_view(VIEW_LEDGER)
def suppression_list(request):
    q = _search(request)
    history = request.GET.get("view") == "history"
    page = page_of(request, ledger_search(q, history=history))
    can_manage = request.user.has_perm(MANAGE_SUPPRESSIONS)
    return render(request, "ui/suppression_list.html", {
        "page": page, "q": q, "history": history, "query": query_without_page(request),
        "can_manage": can_manage, "form": SuppressionAddForm() if can_manage else None,
    })


@ui_view(VIEW_LEDGER)
def suppression_history(request):
    value = request.GET.get("value", "").strip()
    if not value:
        raise Http404("no value")
    status = suppression_status(value)
    entries = Suppression.objects.filter(value=status["value"]).order_by("-id")
    return render(request, "ui/suppression_history.html", {
        **status, "entries": entries, "can_manage": request.user.has_perm(MANAGE_SUPPRESSIONS),
    })


def _history_url(value: str) -> str:
    return f"{reverse('suppression_history')}?{urlencode({'value': value})}"


@ui_view(MANAGE_SUPPRESSIONS, methods=("GET", "POST"))
def suppression_add(request):
    form = SuppressionAddForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            entry, summary = suppressions.suppression_add(
                value=form.cleaned_data["value"], reason=form.cleaned_data["reason"], note=form.cleaned_data["note"],
                source="operator", actor=_actor(request),
            )
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, stop_summary_text(summary, what=f"{entry.value} is suppressed ({entry.get_reason_display()})")
            )
            return redirect(_history_url(entry.value))
    status = 200 if request.method == "GET" else 400
    return render(request, "ui/suppression_add.html", {"form": form}, status=status)


@ui_view(MANAGE_SUPPRESSIONS, methods=("GET", "POST"))
def suppression_lift(request):
    initial = {"value": request.GET.get("value", "")}
    form = SuppressionLiftForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            entry = suppressions.suppression_lift(value=form.cleaned_data["value"], note=form.cleaned_data["note"],
                                              actor=_actor(request), source="operator")
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Lifted {entry.value}. The earlier entry stays in the history.")
            return redirect(_history_url(entry.value))
    # The value as the form read it: a NUL the form refuses is no value to look up.
    value = (form.cleaned_data.get("value") if form.is_bound else initial["value"]) or ""
    status = 200 if request.method == "GET" else 400
    return render(request, "ui/suppression_lift.html", {
        "form": form, "current": suppression_status(value) if value.strip() else None,
    }, status=status)


@ui_view(MANAGE_SUPPRESSIONS, methods=("GET", "POST"))
def suppression_import(request):
    bound = request.method == "POST"
    form = SuppressionImportForm(request.POST if bound else None, request.FILES if bound else None)
    if request.method == "POST" and form.is_valid():
        import_rows, invalid = form.rows, form.invalid
        source = f"csv:{form.cleaned_data['file'].name[:100]}"
        if len(import_rows) <= INLINE_IMPORT_ROWS:
            result = suppressions.suppression_import(rows=import_rows, actor=_actor(request), source=source)
            result["errors"] = sorted(invalid + result["errors"], key=lambda e: e["line"])
            # POST/redirect/GET: the result is kept in the session, so reloading it shows it again
            # instead of importing the file a second time.
            key = f"{INLINE_IMPORT_PREFIX}{secrets.token_hex(8)}"
            request.session[_result_key("suppression_import", key)] = {"result": result, "file": source}
            return redirect("suppression_import_status", job_id=key)
        try:
            job = _import_queue().enqueue(
                tasks.suppression_import, [asdict(r) for r in import_rows], _actor(request), source, invalid,
                job_timeout=3600, result_ttl=7 * 86400, failure_ttl=7 * 86400,
                meta={"kind": "suppression_import", "done": 0, "total": len(import_rows), "file": source,
                      "actor": _actor(request), "invalid": len(invalid)},
            )
        except Exception as exc:  # noqa: BLE001 - Redis down: say so instead of a 500
            form.add_error(None, f"The background queue is unavailable ({exc.__class__.__name__}); files of up "
                                 f"to {INLINE_IMPORT_ROWS} rows import without it.")
        else:
            return redirect("suppression_import_status", job_id=job.id)
    status = 200 if request.method == "GET" else 400
    return render(request, "ui/suppression_import.html", {"form": form, "inline_rows": INLINE_IMPORT_ROWS},
                  status=status)


def _import_queue():
    # The job carries its rows: nothing waits for a database commit.
    return django_rq.get_queue("default", commit_mode="auto")


@ui_view(MANAGE_SUPPRESSIONS)
def suppression_import_status(request, job_id: str):
    if job_id.startswith(INLINE_IMPORT_PREFIX):
        kept = request.session.get(_result_key("suppression_import", job_id))
        if kept is None:
            raise Http404("no such import")
        return render(request, "ui/suppression_import_status.html", {**kept, "done": True})
    try:
        job = Job.fetch(job_id, connection=_import_queue().connection)
    except NoSuchJobError:
        raise Http404("no such import") from None
    if job.meta.get("kind") != "suppression_import":
        raise Http404("no such import")
    status = job.get_status()
    done = status == JobStatus.FINISHED
    return render(request, "ui/suppression_import_status.html", {
        "job": job, "status": status, "meta": job.meta, "done": done, "file": job.meta.get("file", ""),
        "failed": status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED),
        "result": job.return_value() if done else None,
    })


class _Echo:
    def write(self, value: str) -> str:
        return value


EXPORT_COLUMNS = ["value", "reason", "note", "source", "actor", "created_at"]


@ui_view(MANAGE_SUPPRESSIONS)
def suppression_export(request):
    """Current suppressions as CSV, in the columns the import reads (value, reason, note)."""
    entries = suppressions_current().filter(action=Suppression.Action.ADD).order_by("value")
    writer = csv.writer(_Echo())

    def lines():
        yield "\ufeff"  # spreadsheets read the file as UTF-8
        yield writer.writerow(EXPORT_COLUMNS)
        for e in entries.iterator(chunk_size=2000):
            yield writer.writerow([guard_formula(e.value), e.reason, guard_formula(e.note), guard_formula(e.source),
                                   guard_formula(e.actor), e.created_at.isoformat()])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="suppressions-{timezone.now():%Y%m%d-%H%M%S}.csv"'
    return response


# --- operator log ----------------------------------------------------------------------------------


@ui_view(VIEW_LOG)
def operator_log(request):
    q = _search(request)
    action = request.GET.get("action", "")
    page = page_of(request, operator_actions(q, action), per_page=LIST_PAGE)
    return render(request, "ui/operator_log.html", {
        "page": page, "rows": rows.log_rows(page), "q": q, "action": action, "query": query_without_page(request),
        "actions": OperatorAction.objects.order_by("action").values_list("action", flat=True).distinct(),
    })
