"""anymail's webhook URLs, behind HTTP basic auth that answers 401 with a challenge.

anymail checks the same ANYMAIL["WEBHOOK_SECRET"] itself, but answers a
missing or wrong password with 400. A 401 with WWW-Authenticate is what basic
auth means (some ESPs send credentials only when challenged), so each view is
wrapped here; anymail's own check still runs behind this one. With no secret
configured every POST is refused: the webhooks are never open to anyone.

Only the tracking webhooks of the ESPs in OUTREACH_WEBHOOK_ESPS are mounted
(inbound-mail webhooks never are); `inbound.checks` refuses to start when one
of them lacks a setting anymail needs (Mailgun's signing key, Mandrill's key).
"""

from __future__ import annotations

import functools

from anymail.urls import urlpatterns as anymail_urlpatterns
from anymail.utils import get_anymail_setting, get_request_basic_auth
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.urls import URLPattern
from django.utils.crypto import constant_time_compare
from django.views.decorators.csrf import csrf_exempt

app_name = "anymail"


def basic_auth_ok(request) -> bool:
    allowed = get_anymail_setting("webhook_secret", default=[])
    if isinstance(allowed, str):
        allowed = [allowed] if allowed else []
    given = get_request_basic_auth(request)
    return given is not None and any(constant_time_compare(given, secret) for secret in allowed)


def challenge_unauthenticated(view):
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        # HEAD stays open: ESPs probe the URL that way when it is configured; it does nothing.
        if request.method != "HEAD" and not basic_auth_ok(request):
            response = HttpResponse("authentication required\n", status=401, content_type="text/plain")
            response["WWW-Authenticate"] = 'Basic realm="outreach webhooks", charset="UTF-8"'
            return response
        return view(request, *args, **kwargs)

    return login_not_required(csrf_exempt(wrapped))


def tracking_patterns(esps) -> list[URLPattern]:
    """anymail's tracking URL patterns of these ESPs (Mandrill's combined URL included); no inbound ones."""
    wanted = {esp.lower() for esp in esps}
    return [p for p in anymail_urlpatterns
            if str(p.pattern).split("/", 1)[0] in wanted and "inbound" not in str(p.pattern)]


urlpatterns = [
    URLPattern(p.pattern, challenge_unauthenticated(p.callback), p.default_args, p.name)
    for p in tracking_patterns(settings.OUTREACH_WEBHOOK_ESPS)
]
