"""Public endpoints (no login): the one-click unsubscribe of RFC 2369 / RFC 8058, the ESPs' tracking webhooks and
the scheduling pages' booking webhooks.

GET never acts (link scanners and previewers prefetch URLs): it shows a page
with a button. POST acts: mail clients send "List-Unsubscribe=One-Click" to
the URL from the List-Unsubscribe header with no cookies and no CSRF token.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from sequences.models import Suppression
from sequences.selectors import job_workspace_id
from sequences.services.common import ServiceError
from sequences.services.suppressions import suppression_add
from sequences.tokens import TokenRefused, unsubscribe_target, unsubscribe_token_read

from .booking_webhooks import booking_webhook


@csrf_exempt
@login_not_required
@require_http_methods(["GET", "POST"])
def unsubscribe(request: HttpRequest, token: str) -> HttpResponse:
    try:
        email, job_id = unsubscribe_target(unsubscribe_token_read(token))
    except (signing.BadSignature, TokenRefused, KeyError, TypeError, ValueError, OverflowError):
        return render(request, "public/unsubscribe_invalid.html", status=400)
    if request.method == "GET":
        return render(request, "public/unsubscribe_confirm.html", {"email": email})
    one_click = request.POST.get("List-Unsubscribe") == "One-Click"
    try:
        suppression_add(
            value=email, reason=Suppression.Reason.UNSUBSCRIBE, source=f"unsubscribe-link:job {job_id}",
            workspace_id=job_workspace_id(job_id),  # the workspace that sent it (none known: everywhere)
            note="one-click unsubscribe from the mail client (RFC 8058)" if one_click
            else "unsubscribe confirmed on the unsubscribe page",
        )
    except ServiceError:
        return render(request, "public/unsubscribe_invalid.html", status=400)
    return render(request, "public/unsubscribe_done.html", {"email": email})


urlpatterns = [
    path("u/<str:token>/", unsubscribe, name="unsubscribe"),
    # anymail's tracking webhooks (…/webhooks/anymail/sendgrid/tracking/ etc.), behind HTTP basic auth.
    path("webhooks/anymail/", include("ui.tracking_webhooks")),
    # Calendly's and Cal.com's booking webhooks, one URL per booking source (signed; meetings).
    path("webhooks/bookings/<slug:slug>/", booking_webhook, name="booking_webhook"),
]
