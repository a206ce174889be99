"""Re-authentication before an admin changes another user's password or role.

A stolen or forgotten-open admin session must not be enough to take other accounts over: the admin's user
change pages (groups, staff and superuser status, the password form) for anyone but oneself first ask for the
admin's own password again. A confirmation holds OUTREACH_REAUTH_MINUTES; wrong passwords count toward the
login lockout (django-axes) like any failed login.
"""

from __future__ import annotations

import time

from django import forms
from django.conf import settings
from django.contrib.auth import authenticate
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode

CONFIRMED_AT = "outreach_reauth_at"  # session key: when the admin last confirmed their password


class ReauthForm(forms.Form):
    password = forms.CharField(label="Your password", strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "current-password",
                                                                 "autofocus": True}))


def reauth_fresh(request: HttpRequest) -> bool:
    confirmed = request.session.get(CONFIRMED_AT, 0)
    return time.time() - confirmed <= settings.OUTREACH_REAUTH_MINUTES * 60


def reauth_required(request: HttpRequest, target_user_id) -> HttpResponse | None:
    """A redirect to the confirmation page when *request* would change another user without a fresh one."""
    if str(target_user_id) == str(request.user.pk) or reauth_fresh(request):
        return None
    return HttpResponseRedirect(f"{reverse('admin:reauthenticate')}?{urlencode({'next': request.get_full_path()})}")


def reauth_view(request: HttpRequest, *, context: dict) -> HttpResponse:
    """Ask for the admin's own password; on success remember the time and go back to `next`."""
    target = request.POST.get("next") or request.GET.get("next") or reverse("admin:index")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = reverse("admin:index")
    form = ReauthForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = authenticate(request, username=request.user.get_username(), password=form.cleaned_data["password"])
        if user is not None and user.pk == request.user.pk:
            request.session[CONFIRMED_AT] = int(time.time())
            return HttpResponseRedirect(target)
        form.add_error("password", "That is not your password.")
    minutes = settings.OUTREACH_REAUTH_MINUTES
    return TemplateResponse(request, "admin/reauthenticate.html", context | {
        "form": form, "next": target, "minutes": minutes, "title": "Confirm your password"},
        status=400 if form.errors else 200)
