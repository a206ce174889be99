"""anymail's webhook URLs, behind HTTP basic auth that answers 401 with a challenge, each event standing alone.

anymail checks the same ANYMAIL["WEBHOOK_SECRET"] itself, but answers a
missing or wrong password with 400. A 401 with WWW-Authenticate is what basic
auth means (some ESPs send credentials only when challenged), so each view is
wrapped here; anymail's own check still runs behind this one. With no secret
configured every POST is refused: the webhooks are never open to anyone.
Wrong passwords are counted per client address (the address django-axes
reads for the login form); past OUTREACH_WEBHOOK_AUTH_FAILURE_LIMIT in a
window, that address gets 429 with Retry-After until the window ends, the
right password included, so guessing costs time and the ESP elsewhere is not
locked out.

Each view converts event by event (`inbound.webhook_events.EventsConverted`):
one that cannot be read is recorded as malformed
(`inbound.webhooks.tracking_unreadable`) and the rest are applied. A body
that is no batch at all (not JSON, not UTF-8, another content type, the
wrong shape) is a 400 in words, never a 5xx that the ESP would retry forever.

A JSON array of more than `inbound.webhooks.INLINE_EVENTS` events is not
applied here: once its body is checked it is kept for the background
(`inbound.webhooks.webhook_batch_store`) and answered with the same empty 200
at once; `inbound.webhook_events.event_converter` converts its events there,
one by one, as this view would have.

Only the tracking webhooks of the ESPs in OUTREACH_WEBHOOK_ESPS are mounted
(inbound-mail webhooks never are); `inbound.checks` refuses to start when one
of them lacks a setting anymail needs (Mailgun's signing key, Mandrill's key).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from anymail.utils import get_anymail_setting, get_request_basic_auth
from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.urls import URLPattern
from django.utils.crypto import constant_time_compare
from django.views.decorators.csrf import csrf_exempt

from inbound.webhook_events import EventsConverted, tracking_patterns
from inbound.webhooks import INLINE_EVENTS, Unreadable, tracking_unreadable, webhook_batch_store
from sequences.ratelimit import window_count

app_name = "anymail"

# Seconds of the window in which an address's failed logins are counted.
AUTH_FAILURE_WINDOW = 600
# The JSON value each ESP's tracking webhook posts; ESPs not named here are checked by anymail's parser alone.
BODY_SHAPES: dict[str, type] = {"sendgrid": list, "brevo": dict}
SHAPE_WORDS = {list: "a JSON array of events", dict: "a JSON object (one event)"}


def basic_auth_ok(request) -> bool:
    allowed = get_anymail_setting("webhook_secret", default=[])
    if isinstance(allowed, str):
        allowed = [allowed] if allowed else []
    given = get_request_basic_auth(request)
    return given is not None and any(constant_time_compare(given, secret) for secret in allowed)


def _plain(status: int, text: str) -> HttpResponse:
    return HttpResponse(text + "\n", status=status, content_type="text/plain; charset=utf-8")


def challenge_unauthenticated(view):
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        # HEAD stays open: ESPs probe the URL that way when it is configured; it does nothing.
        if request.method == "HEAD":
            return view(request, *args, **kwargs)
        name = f"webhook-auth-failures:{get_client_ip_address(request) or 'unknown'}"
        limit = settings.OUTREACH_WEBHOOK_AUTH_FAILURE_LIMIT
        failures, retry_after = window_count(name=name, seconds=AUTH_FAILURE_WINDOW, add=0)
        if failures >= limit:
            response = _plain(429, "too many failed logins from this address; try again later")
            response["Retry-After"] = str(retry_after)
            return response
        if not basic_auth_ok(request):
            window_count(name=name, seconds=AUTH_FAILURE_WINDOW)
            response = _plain(401, "authentication required")
            response["WWW-Authenticate"] = 'Basic realm="outreach webhooks", charset="UTF-8"'
            return response
        return view(request, *args, **kwargs)

    return login_not_required(csrf_exempt(wrapped))


def body_read(request, esp: str) -> tuple[Any, str]:
    """The request's body as this ESP's webhook posts it, and why it is no such batch ('' when it may be one).

    The value is None for an ESP whose body anymail's parser alone checks.
    """
    shape = BODY_SHAPES.get(esp)
    if shape is None:
        return None, ""
    if request.content_type != "application/json":
        return None, f"the body must be application/json, not {request.content_type[:100] or 'untyped'}"
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError:
        return None, "the body is not UTF-8"
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError as exc:
        return None, f"the body is not JSON: {exc}"
    except RecursionError:
        return None, "the body is nested too deeply"
    if not isinstance(value, shape):
        return None, f"the body must be {SHAPE_WORDS[shape]}"
    return value, ""


def _no_constant(name: str):
    raise ValueError(f"{name} is no JSON number")


def _finite(text: str) -> float:
    """A JSON number that fits a float: 1e400 would be infinity, which no JSON column stores."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is too large")
    return number


class EventsStandAlone(EventsConverted):
    """Mixed in before an anymail tracking view: the body checked first, then each event converted on its own."""

    def post(self, request, *args, **kwargs):
        self.run_validators(request)  # anymail's own checks (its basic auth, signatures): a 400 when they fail
        esp = self.esp_name.lower()
        value, problem = body_read(request, esp)
        if problem:
            return _plain(400, problem)
        if isinstance(value, list) and len(value) > INLINE_EVENTS:
            # Too many to apply before a web worker's time-out: kept, answered, applied in the background.
            webhook_batch_store(provider=esp, body=request.body.decode("utf-8"), events=len(value))
            return HttpResponse()
        try:
            events = self.parse_events(request)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            return _plain(400, f"the body is not a {self.esp_name} batch ({type(exc).__name__})")
        for event in events:
            if isinstance(event, Unreadable):
                tracking_unreadable(esp_name=self.esp_name, event=event)
            else:
                self.signal.send(sender=self.__class__, event=event, esp_name=self.esp_name)
        return HttpResponse()


def events_stand_alone(callback):
    """anymail's view *callback*, built from its class with EventsStandAlone mixed in."""
    view_class = callback.view_class
    guarded = type(view_class.__name__, (EventsStandAlone, view_class), {"__module__": __name__})
    return guarded.as_view(**callback.view_initkwargs)


urlpatterns = [
    URLPattern(p.pattern, challenge_unauthenticated(events_stand_alone(p.callback)), p.default_args, p.name)
    for p in tracking_patterns(settings.OUTREACH_WEBHOOK_ESPS)
]
