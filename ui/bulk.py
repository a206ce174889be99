"""Bulk actions on a sequence's enrollments: select, then pause, resume or stop them.

Each enrollment goes through the same service as its own pause, stop or resume
(`enrollment_pause` / `enrollment_stop` / `enrollment_resume`, each its
own short transaction with the enrollment locked), and the summaries are added up:
the confirmation and the result say what a sequence pause says, for the selection.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from sequences.models import Enrollment, SendJob, Sequence
from sequences.permissions import OPERATE
from sequences.services.common import ServiceError
from sequences.services.stops import enrollment_pause, enrollment_resume, enrollment_stop
from sequences.stop_summary import StopSummary
from sequences.storable import row_id

from . import rows
from .access import ui_view
from .summary import stop_result
from .views import _back_with

ACTIONS = {"pause": "Pause", "stop": "Stop", "resume": "Resume"}
MAX_SELECTED = 500


def _selected(request, sequence: Sequence) -> list[Enrollment]:
    data = request.POST if request.method == "POST" else request.GET
    ids = [i for i in map(row_id, data.getlist("ids")) if i is not None][:MAX_SELECTED]
    return list(Enrollment.objects.filter(sequence=sequence, pk__in=ids).select_related("contact").order_by("pk"))


def _apply(action: str, enrollments: list[Enrollment], actor: str) -> dict:
    """Call the one service per enrollment; what a pause or stop did, added up (a resume: what was refused)."""
    if action == "resume":
        refused = []
        for e in enrollments:
            try:
                enrollment_resume(enrollment_id=e.pk, actor=actor)
            except ServiceError as exc:
                refused.append(str(exc))
        return {
            "action": "resume",
            "target": f"{len(enrollments) - len(refused)} selected enrollments",
            "refused": refused,
        }
    summary = StopSummary()
    for e in enrollments:
        if action == "pause":
            summary.add(enrollment_pause(enrollment_id=e.pk, actor=actor))
        else:
            summary.add(
                enrollment_stop(
                    enrollment_id=e.pk, reason=Enrollment.StopReason.OPERATOR, actor=actor, source="operator UI, bulk"
                )
            )
    target = f"{summary.enrollments} of {len(enrollments)} selected enrollments"
    return stop_result(summary, action=action if summary.changed else f"{action}-noop", target=target)


@ui_view(OPERATE, methods=("GET", "POST"))
def enrollment_bulk(request, pk: int):
    """GET: confirm what the action will do to the selected enrollments. POST: do it, show the summary once."""
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    data = request.POST if request.method == "POST" else request.GET
    action = data.get("action", "")
    selected = _selected(request, sequence)
    back = reverse("sequence_detail", args=[pk])
    if action not in ACTIONS or not selected:
        return redirect(back)
    if request.method == "POST":
        return _back_with(request, "sequence", pk, _apply(action, selected, request.user.get_username()))
    n = len(selected)
    return render(
        request,
        "ui/confirm.html",
        {
            "kind": f"bulk_{action}",
            "object": sequence,
            "selected": selected,
            "action": action,
            "title": f"{ACTIONS[action]} {n} enrollment{'' if n == 1 else 's'} in “{sequence.name}”?",
            "forecast": rows.jobs_forecast(SendJob.objects.filter(enrollment__in=selected)),
            "already": all(_already(action, e) for e in selected),
            "back": back,
            "button": f"{ACTIONS[action]} {n} enrollment{'' if n == 1 else 's'}",
        },
    )


def _already(action: str, enrollment: Enrollment) -> bool:
    E = Enrollment.Status
    if action == "pause":
        return enrollment.status != E.ACTIVE
    if action == "stop":
        return enrollment.status == E.STOPPED
    return enrollment.status == E.ACTIVE
