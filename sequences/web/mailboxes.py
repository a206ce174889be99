"""Operator UI for mailboxes and the inbound ledger (routes in sequences/web/urls.py).

Inbound mail is hostile input: subject, From name, headers and body are shown
as escaped text only; no HTML part is ever rendered and nothing remote loads
(SECURE_CSP in outreach/settings.py). Mailbox secrets never appear: only the names of their env vars.
"""

from __future__ import annotations

from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from mailboxes.models import InboundMessage, Mailbox
from sequences.models import SendJob
from sequences.permissions import OPERATE, VIEW_INBOUND, VIEW_MAILBOX
from sequences.selectors import jobs_with_labels
from sequences.sending_mailbox import sends_from
from sequences.services import stops
from sequences.services.mailbox_health import mailbox_probe
from sequences.web import rows
from sequences.web.access import page_of, query_without_page, ui_view
from sequences.web.charts import mailbox_rows

RAW_SHOWN_BYTES = 256 * 1024


@ui_view(VIEW_MAILBOX)
def mailbox_list(request):
    check = request.session.pop("ui-check:mailbox", None)
    result = request.session.pop("ui-result:mailbox", None)
    if result and "job_ids_canceled" in result:
        result = rows.stop_result_rows(
            result, jobs_with_labels().filter(
                sends_from(Mailbox.objects.filter(name=result.get("name", "")).values("pk")[:1], via="enrollment__"))
        )
    return render(request, "ui/mailbox_list.html", {
        "mailbox_rows": mailbox_rows(list(Mailbox.objects.prefetch_related("cursors", "sequences").order_by("name"))),
        "can_operate": request.user.has_perm(OPERATE), "result": result, "check": check,
    })


@ui_view(OPERATE, methods=("POST",))
def mailbox_check(request, pk: int):
    """Try every step of sending (no message is sent); a blocked mailbox whose check passes is unblocked."""
    mailbox = get_object_or_404(Mailbox, pk=pk)
    result = mailbox_probe(mailbox_id=pk, actor=request.user.get_username(), forced=True)
    request.session["ui-check:mailbox"] = {
        "mailbox": mailbox.name, "text": result.text,
        "steps": [{"step": s.step, "ok": s.ok, "detail": s.detail} for s in result.steps],
    }
    return redirect("mailbox_list")


@ui_view(OPERATE, methods=("GET", "POST"))
def mailbox_pause(request, pk: int):
    mailbox = get_object_or_404(Mailbox, pk=pk)
    if request.method == "POST":
        summary = stops.mailbox_pause(mailbox_id=pk, actor=request.user.get_username())
        request.session["ui-result:mailbox"] = {
            **rows.stop_result(summary, action="pause" if summary.changed else "pause-noop", target=mailbox.name),
            "name": mailbox.name,
        }
        return redirect("mailbox_list")
    return render(request, "ui/confirm.html", {
        "kind": "mailbox_pause", "object": mailbox, "title": f"Pause mailbox “{mailbox.name}”?",
        "forecast": rows.jobs_forecast(SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__"))),
        "already": mailbox.paused, "back": reverse("mailbox_list"), "button": "Pause mailbox",
    })


@ui_view(OPERATE, methods=("GET", "POST"))
def mailbox_resume(request, pk: int):
    mailbox = get_object_or_404(Mailbox, pk=pk)
    if request.method == "POST":
        scheduled = stops.mailbox_resume(mailbox_id=pk, actor=request.user.get_username())
        request.session["ui-result:mailbox"] = {"action": "resume", "target": mailbox.name, "scheduled": scheduled}
        return redirect("mailbox_list")
    return render(request, "ui/confirm.html", {
        "kind": "mailbox_resume", "object": mailbox, "title": f"Resume mailbox “{mailbox.name}”?",
        "already": not mailbox.paused, "back": reverse("mailbox_list"), "button": "Resume mailbox",
    })


@ui_view(VIEW_INBOUND)
def inbound_list(request):
    q = request.GET.get("q", "").strip()[:400]
    kind = request.GET.get("kind", "")
    qs = InboundMessage.objects.select_related("mailbox", "enrollment__contact").defer("raw").order_by("-id")
    if q:
        bare = q.strip("<>")
        qs = qs.filter(
            Q(from_address__icontains=q) | Q(from_name__icontains=q) | Q(subject__icontains=q)
            | Q(message_id__in=[bare, f"<{bare}>"])
        )
    if kind in InboundMessage.Kind.values:
        qs = qs.filter(kind=kind)
    return render(request, "ui/inbound_list.html", {
        "page": page_of(request, qs), "q": q, "kind": kind, "kinds": InboundMessage.Kind.choices,
        "query": query_without_page(request),
    })


@ui_view(VIEW_INBOUND)
def inbound_detail(request, pk: int):
    message = get_object_or_404(
        InboundMessage.objects.select_related("mailbox", "job", "enrollment__contact", "enrollment__sequence",
                                              "duplicate_of"),
        pk=pk,
    )
    raw = bytes(message.raw or b"")
    return render(request, "ui/inbound_detail.html", {
        "message": message,
        "headers": sorted((message.headers or {}).items()),
        "raw_text": raw[:RAW_SHOWN_BYTES].decode("utf-8", "replace"),
        "raw_cut": len(raw) > RAW_SHOWN_BYTES,
        "raw_size": len(raw),
        "copies": message.copies.order_by("id"),
    })
