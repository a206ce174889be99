"""The booking webhooks of Calendly and Cal.com: one URL per booking source (/webhooks/bookings/<slug>/), no login,
no CSRF token (the provider posts blind), each request checked by its signature (meetings.services).

The answer is plain text in words: what the event did, or why it was refused (403 a bad or stale signature, 400 a
body that is no event, 404 an address no source has). A replay and an unknown invitee are answered 200 with what
was (not) done, so the provider does not send them again and again.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from meetings.services import booking_receive


@csrf_exempt
@login_not_required
@require_POST
def booking_webhook(request: HttpRequest, slug: str) -> HttpResponse:
    answer = booking_receive(slug=slug, headers=request.headers, body=request.body)
    return HttpResponse(answer.words + "\n", status=answer.status, content_type="text/plain; charset=utf-8")
