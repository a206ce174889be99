"""Who may see and do what in the operator UI.

Every page's Content-Security-Policy comes from SECURE_CSP (outreach/settings.py) through Django's
ContentSecurityPolicyMiddleware, for the UI, the login, the admin, error pages and the public pages alike.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponseNotAllowed

from sequences.permissions import PERM_TEXT

# --- roles and access ----------------------------------------------------------------

def ui_view(perm: str, *, methods: tuple[str, ...] = ("GET",)) -> Callable:
    """Anonymous -> login; permission missing -> 403 page; method not offered -> 405."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            # Permission before method: a role without access gets the 403 page whatever it sends.
            if not request.user.has_perm(perm):
                raise PermissionDenied(PERM_TEXT.get(perm, "Your role does not include this page."))
            allowed = set(methods) | ({"HEAD"} if "GET" in methods else set())
            if request.method not in allowed:
                return HttpResponseNotAllowed(sorted(allowed))
            return view(request, *args, **kwargs)

        wrapped.required_perm = perm  # type: ignore[attr-defined]
        return wrapped

    return decorator


def page_of(request, items, per_page: int = 50):
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def query_without_page(request) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()

