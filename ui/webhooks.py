"""Admin pages: webhook endpoints (register, edit, switch off) and the delivery log with response codes."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render

from sequences.storable import row_id
from sequences.webhooks_out.models import WebhookDelivery, WebhookEndpoint

from .access import page_of, query_without_page, ui_view
from .webhook_forms import WebhookEndpointForm

MANAGE_WEBHOOKS = "sequences.manage_webhooks"
FIELDS = ("url", "secret_env", "event_types", "description", "active")


@ui_view(MANAGE_WEBHOOKS, methods=("GET", "POST"))
def webhook_list(request):
    form = WebhookEndpointForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        endpoint = WebhookEndpoint.objects.create(**{f: form.cleaned_data[f] for f in FIELDS})
        messages.success(request, f"Webhook endpoint {endpoint.url} registered.")
        return redirect("webhook_list")
    endpoints = WebhookEndpoint.objects.order_by("id")
    status = 200 if request.method == "GET" else 400
    return render(request, "ui/webhook_list.html", {"form": form, "endpoints": endpoints}, status=status)


@ui_view(MANAGE_WEBHOOKS, methods=("GET", "POST"))
def webhook_edit(request, pk: int):
    endpoint = get_object_or_404(WebhookEndpoint, pk=pk)
    initial = {f: getattr(endpoint, f) for f in FIELDS}
    form = WebhookEndpointForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        WebhookEndpoint.objects.filter(pk=pk).update(**{f: form.cleaned_data[f] for f in FIELDS})
        messages.success(request, f"Webhook endpoint {form.cleaned_data['url']} saved.")
        return redirect("webhook_list")
    status = 200 if request.method == "GET" else 400
    return render(request, "ui/webhook_edit.html", {"form": form, "endpoint": endpoint}, status=status)


@ui_view(MANAGE_WEBHOOKS)
def webhook_deliveries(request):
    qs = WebhookDelivery.objects.select_related("endpoint").prefetch_related("tries").order_by("-id")
    if (endpoint_id := row_id(request.GET.get("endpoint"))) is not None:
        qs = qs.filter(endpoint_id=endpoint_id)
    if request.GET.get("state") in WebhookDelivery.State.values:
        qs = qs.filter(state=request.GET["state"])
    return render(
        request,
        "ui/webhook_deliveries.html",
        {
            "page": page_of(request, qs),
            "query": query_without_page(request),
            "states": WebhookDelivery.State.choices,
            "state": request.GET.get("state", ""),
        },
    )
