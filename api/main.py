"""The API: one NinjaAPI at /api/ (schema /api/openapi.json, docs /api/docs), resources under /api/v1/.

Every error is JSON `{"detail": ...}`: 401 without a live token, 403 when the
token's role lacks the UI permission, 404, 409 when the domain refuses
(already enrolled, suppressed, nothing to resume), 422 for invalid input or a
reused Idempotency-Key, 429 with Retry-After over the token's rate.
"""

from __future__ import annotations

import logging
from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import IntegrityError
from django.http import Http404, JsonResponse
from django.urls import URLPattern, re_path
from ninja import Router
from ninja.errors import AuthenticationError, ValidationError

from sequences.services.common import ServiceError

from .auth import Forbidden, RateLimited, TokenAuth
from .contacts import BadRow
from .errors import DocumentedErrorsAPI, validation_detail
from .idempotency import idempotent
from .routes import contacts, enrollments, sequences, suppressions, timeline

api = DocumentedErrorsAPI(
    title="outreach API",
    version="1",
    auth=TokenAuth(),
    urls_namespace="api",
    description=(
        "Enroll, stop and read what happened. Authenticate with `Authorization: Bearer <token>` "
        "(`manage.py api_token NAME --role staff|operator|admin`). Every POST takes an "
        "`Idempotency-Key` header: a retry with the same key and body returns the first response and "
        'acts once. Job labels are the operator UI\'s words: "never sent", "in flight", '
        '"already submitted — cannot recall", "outcome unknown".'
    ),
)
api.add_router("/v1/contacts", contacts.router)
api.add_router("/v1/enrollments", enrollments.router)
api.add_router("/v1/sequences", sequences.router)
api.add_router("/v1/suppressions", suppressions.router)
api.add_router("/v1/timeline", timeline.router)


@api.exception_handler(Forbidden)
def _forbidden(request, exc):
    return api.create_response(request, {"detail": str(exc)}, status=403)


@api.exception_handler(RateLimited)
def _rate_limited(request, exc):
    response = api.create_response(request, {"detail": str(exc)}, status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(BadRow)
def _bad_row(request, exc):
    return api.create_response(request, {"detail": str(exc)}, status=422)


@api.exception_handler(ServiceError)
def _refused(request, exc):
    return api.create_response(request, {"detail": str(exc)}, status=409)


@api.exception_handler(IntegrityError)
def _conflict(request, exc):
    # Two requests wrote the same row at once (e.g. the same new contact); the other one won. Nothing secret is shown.
    return api.create_response(request, {"detail": "a concurrent request changed the same record; retry (with the "
                                                   "same Idempotency-Key to act at most once)"}, status=409)


@api.exception_handler(ValidationError)
def _invalid(request, exc):
    # The documented Error body (detail in words), the fields' own errors beside it.
    return api.create_response(request, {"detail": validation_detail(exc.errors), "errors": exc.errors}, status=422)


@api.exception_handler(Http404)
def _not_found(request, exc):
    return api.create_response(request, {"detail": "not found"}, status=404)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request, exc):
    # RFC 6750: a 401 names the scheme it wants.
    response = api.create_response(request, {"detail": str(exc)}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="outreach API"'
    return response


def refuse_unreadable(view):
    """What Django will not read for a view (a body over DATA_UPLOAD_MAX_MEMORY_SIZE, more query fields than
    DATA_UPLOAD_MAX_NUMBER_FIELDS): the API's documented 400 in words, not Django's HTML page. Logged as Django logs
    it; the idempotency key was released by the wrapper inside, so a smaller retry runs."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except SuspiciousOperation as exc:
            logging.getLogger(f"django.security.{type(exc).__name__}").error(str(exc))
            if isinstance(exc, RequestDataTooBig):
                detail = f"the body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes"
            else:
                detail = str(exc)
            return JsonResponse({"detail": f"Bad request: {detail}"}, status=400)

    return wrapped


@login_not_required
def _no_such_path(request, rest: str = ""):
    """Any other path under /api/: the API's JSON 404, not the operator UI's HTML page."""
    return JsonResponse({"detail": "not found: no such API path"}, status=404)


def api_urls(routers: dict[str, Router] | None = None):
    """The API's URL patterns, each POST made idempotent under its Idempotency-Key and every request Django will not
    read refused in words; then a JSON 404 for the rest.

    `routers`: resources of the layers above this app (prefix -> router), mounted by the project's URLs, since
    this app may not import them."""
    for prefix, router in (routers or {}).items():
        if (prefix, router) not in api._routers:  # once, however often the URLs are built
            api.add_router(prefix, router)
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = refuse_unreadable(idempotent(pattern.callback))
    return [*patterns, re_path(r"^(?P<rest>.*)$", _no_such_path)], app_name, namespace
