"""Refuse paths and query strings no page can use (a clear 400 instead of a database error deep in a view), end a
login that is too old or idle, and keep every answer of a view out of caches."""

from __future__ import annotations

import re
import time

from django.conf import settings
from django.contrib.auth import logout
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseForbidden, JsonResponse

from api.tokens import api_token_lookup
from workspaces.membership import SESSION_KEY, workspace_choice
from workspaces.models import Workspace
from workspaces.scoping import request_scope_begin, request_scope_choose, request_scope_end, workspace_scope

# NUL (PostgreSQL refuses it in text) and the other C0 control characters but tab, newline, return;
# U+FFFD is what Django decodes bytes that are not UTF-8 to.
INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
# The longest query value a page reads: a search beyond it finds nothing anyway, and SQLite refuses a LIKE pattern
# over 50,000 bytes (10,000 characters of four bytes, or of one escaped to two, stay under it).
MAX_QUERY_VALUE = 10_000


class NoStoreMiddleware:
    """`Cache-Control: no-store` on every answer of a view that does not say otherwise: pages, API answers and
    exports carry people's names, addresses and replies, which neither the browser's cache (read after a logout, on
    a shared computer) nor a proxy's may keep. Static files are answered before this (WhiteNoise, above it in
    MIDDLEWARE) and stay cacheable."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response


class RejectInvalidQueryMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # A path carries values too (/api/v1/contacts/<email>, /api/v1/timeline/<email>).
        if INVALID.search(request.path):
            return bad_request(request, "Bad request: the path holds a control character or bytes that are not "
                                        "UTF-8.")
        try:
            query = request.GET.lists()
        except TooManyFieldsSent:
            return bad_request(request, f"Bad request: more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} query "
                                        "parameters.")
        for key, values in query:
            if INVALID.search(key) or any(INVALID.search(value) for value in values):
                return bad_request(request, f"Bad request: the query parameter {key_text(key)} holds a control "
                                            "character or bytes that are not UTF-8.")
            if any(len(value) > MAX_QUERY_VALUE for value in values):
                return bad_request(request, f"Bad request: the query parameter {key_text(key)} is longer than "
                                            f"{MAX_QUERY_VALUE:,} characters.")
        return self.get_response(request)


def bad_request(request: HttpRequest, words: str) -> HttpResponse:
    """A 400 in words: the API's JSON error body under /api/ (its schema documents it), plain text elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": words}, status=400)
    return HttpResponseBadRequest(words + "\n", content_type="text/plain; charset=utf-8")


def key_text(key: str) -> str:
    return repr(INVALID.sub("?", key)[:40])


class SessionTimeoutMiddleware:
    """A login ends OUTREACH_SESSION_MAX_HOURS after it began, and after OUTREACH_SESSION_IDLE_MINUTES without a
    request; the next page then asks to log in again. The last-seen time is written at most once a minute."""

    STARTED, SEEN = "outreach_session_started", "outreach_session_seen"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            session, now = request.session, int(time.time())
            started, seen = session.get(self.STARTED, now), session.get(self.SEEN, now)
            if (now - started > settings.OUTREACH_SESSION_MAX_HOURS * 3600
                    or now - seen > settings.OUTREACH_SESSION_IDLE_MINUTES * 60):
                logout(request)
            else:
                session.setdefault(self.STARTED, now)
                if self.SEEN not in session or now - seen >= 60:
                    session[self.SEEN] = now
        return self.get_response(request)


def client_address(request: HttpRequest) -> str:
    """The address a request came from: REMOTE_ADDR, or behind the reverse proxy (OUTREACH_BEHIND_PROXY) the last
    address in X-Forwarded-For, the one the proxy itself appended (those before it are the client's own words)."""
    if settings.OUTREACH_BEHIND_PROXY:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if forwarded[-1]:
            return forwarded[-1][:45]
    return request.META.get("REMOTE_ADDR", "")


class WorkspaceMiddleware:
    """Every view runs inside a workspace (workspaces.scoping): a signed-in user's chosen one (or first), an API
    token's (an agency token's from its `X-Workspace` header); a public view (no login: the unsubscribe page, the
    webhooks, health) sees every workspace and finds its row by a signed token or secret; any other request
    without a user refuses every query of a tenant model. A streamed answer (an export) is read inside the same
    scope. The permissions of a member come from the role of its membership in that workspace."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.workspace, request.workspaces, request.workspace_sole = None, [], False
        began = request_scope_begin()
        try:
            response = self.get_response(request)
        finally:
            request_scope_end(began)
        if response.streaming and request.workspace is not None:
            response.streaming_content = scoped_stream(response.streaming_content, request.workspace.pk,
                                                       with_unowned=request.workspace_sole)
        return response

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            choice = workspace_choice(user, request.session.get(SESSION_KEY))
            if choice is None:
                return HttpResponseForbidden("This user is a member of no workspace.")
            request.workspace, request.workspaces = choice.workspace, choice.allowed
            request.workspace_sole = choice.sole
            user.workspace_role = choice.role
        elif request.headers.get("Authorization", "").startswith("Bearer ") and request.path.startswith("/api/"):
            found = token_workspace(request)
            if found is None or isinstance(found, HttpResponse):
                return found  # None: an unknown token, answered by the API's own 401 (tenant queries stay refused)
            request.workspace, request.workspaces, request.workspace_sole = found
        elif getattr(view_func, "login_required", True) is False:
            request_scope_choose(None)
            return None
        else:
            return None  # a login-required view sends the visitor to the login page; tenant queries stay refused
        request_scope_choose(request.workspace.pk, only=request.workspace_sole)
        return None


def scoped_stream(content, workspace_id: int, *, with_unowned: bool):
    with workspace_scope(workspace_id, with_unowned=with_unowned):
        yield from content


def token_workspace(request: HttpRequest) -> tuple[Workspace, list[Workspace], bool] | HttpResponse | None:
    """The workspace of an API call: its token's; an agency token's from `X-Workspace` (a name), or the install's
    only one. None for an unknown token: the API answers it (401) in a scope that refuses tenant queries."""
    token = api_token_lookup(request.headers["Authorization"].removeprefix("Bearer ").strip())
    if token is None:
        return None
    everything = list(Workspace.objects.all())
    sole = len(everything) == 1
    if token.workspace_id is not None:
        own = next(w for w in everything if w.pk == token.workspace_id)
        return own, [own], sole
    named = request.headers.get("X-Workspace", "")
    if not named and sole:
        return everything[0], everything, sole
    found = next((w for w in everything if w.name == named), None)
    if found is None:
        return JsonResponse({"detail": "an agency token names the workspace of each call in the X-Workspace header "
                                       f"({'unknown workspace ' + repr(named[:100]) if named else 'none given'})"},
                            status=400)
    return found, everything, sole
