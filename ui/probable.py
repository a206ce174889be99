"""Probable replies: mail from someone at a person's company that may answer our message to them (inbound rule
`quoted_text`), for an operator to stop the person with one click, or dismiss."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from inbound.models import ReplyMatch
from inbound.reply_matches import reply_match_dismiss, reply_match_stop
from sequences.labels import stop_summary_text
from sequences.permissions import OPERATE, VIEW_INBOUND
from sequences.services.common import ServiceError

from .access import page_of, query_without_page, ui_view

M = ReplyMatch.Status


@ui_view(VIEW_INBOUND)
def probable_replies(request):
    """Open ones first (oldest first: the longest waiting), then the decided and the stopped-on-receipt ones."""
    decided = request.GET.get("view") == "decided"
    rows = ReplyMatch.objects.select_related("inbound", "job__step", "enrollment__contact", "enrollment__sequence")
    rows = (rows.exclude(status=M.PROBABLE).order_by("-id") if decided
            else rows.filter(status=M.PROBABLE).order_by("created_at", "id"))
    return render(request, "ui/probable_replies.html", {
        "page": page_of(request, rows), "query": query_without_page(request), "decided": decided,
        "can_operate": request.user.has_perm(OPERATE),
        "waiting": ReplyMatch.objects.filter(status=M.PROBABLE).count(),
    })


@ui_view(OPERATE, methods=("POST",))
def probable_reply_stop(request, pk: int):
    try:
        summary = reply_match_stop(match_id=pk, actor=request.user.get_username())
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
    else:
        messages.success(request, stop_summary_text(summary, what="Stopped") if summary.changed
                         else "Nothing changed: the person was stopped already.")
    return redirect("inbound_probable")


@ui_view(OPERATE, methods=("POST",))
def probable_reply_dismiss(request, pk: int):
    try:
        reply_match_dismiss(match_id=pk, actor=request.user.get_username())
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
    else:
        messages.success(request, "Dismissed: nobody was stopped.")
    return redirect("inbound_probable")
