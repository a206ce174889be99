"""Admin pages: booking sources (Calendly, Cal.com) — add, edit, delete, each with the URL to paste into the
provider — and the bookings received, newest first, with what each did.

A source's signing key is typed here once and sealed at once (meetings.services, mailboxes.sealed): the pages
never render it, not even into the form that replaces it.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render

from meetings.models import BookingEvent, BookingSource
from meetings.services import (
    booking_source_create,
    booking_source_delete,
    booking_source_update,
    booking_source_url,
)
from sequences.services.common import ServiceError

from .access import page_of, ui_view

# Admins: the permission of the outbound webhook pages (booking sources are the webhooks that come in).
MANAGE_BOOKINGS = "sequences.manage_webhooks"


class BookingSourceForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="For you: “Sales Calendly”, “Cal.com demo page”.")
    provider = forms.ChoiceField(choices=BookingSource.Provider.choices, widget=forms.RadioSelect)
    secret = forms.CharField(
        max_length=500, label="Signing key", widget=forms.PasswordInput(render_value=False),
        help_text="Calendly: the signing_key you give it when you create the webhook subscription. Cal.com: the "
                  "secret you give the webhook. Make one with `openssl rand -hex 32`. It is stored encrypted and "
                  "never shown again.")

    def __init__(self, *args, replacing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if replacing:
            self.fields["secret"].required = False
            self.fields["secret"].label = "Signing key (set — replace)"
            self.fields["secret"].help_text = "Leave empty to keep the one stored (it is never shown)."


def _sources() -> list[tuple[BookingSource, str]]:
    return [(s, booking_source_url(s)) for s in BookingSource.objects.order_by("name")]


def _actor(request) -> str:
    return request.user.get_username()


@ui_view(MANAGE_BOOKINGS, methods=("GET", "POST"))
def booking_sources(request):
    form = BookingSourceForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            source = booking_source_create(name=form.cleaned_data["name"], provider=form.cleaned_data["provider"],
                                           secret=form.cleaned_data["secret"], actor=_actor(request))
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Booking source {source.name} added: paste its URL into "
                                      f"{source.get_provider_display()}.")
            return redirect("booking_webhook_list")
    events = BookingEvent.objects.select_related("contact").order_by("-received_at", "-id")
    return render(request, "ui/booking_sources.html", {
        "form": form, "sources": _sources(), "page": page_of(request, events),
    }, status=200 if request.method == "GET" or form.is_valid() else 400)


@ui_view(MANAGE_BOOKINGS, methods=("GET", "POST"))
def booking_source_edit(request, pk: int):
    source = get_object_or_404(BookingSource, pk=pk)
    initial = {"name": source.name, "provider": source.provider}
    form = BookingSourceForm(request.POST if request.method == "POST" else None, initial=initial, replacing=True)
    if request.method == "POST" and form.is_valid():
        try:
            source = booking_source_update(source_id=pk, name=form.cleaned_data["name"],
                                           provider=form.cleaned_data["provider"],
                                           secret=form.cleaned_data["secret"], actor=_actor(request))
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Booking source {source.name} saved.")
            return redirect("booking_webhook_list")
    return render(request, "ui/booking_sources.html", {
        "form": form, "editing": source, "editing_url": booking_source_url(source),
    }, status=200 if request.method == "GET" else 400)


@ui_view(MANAGE_BOOKINGS, methods=("POST",))
def booking_source_delete_view(request, pk: int):
    try:
        name = booking_source_delete(source_id=pk, actor=_actor(request))
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Booking source {name} deleted: its URL now answers 404. The bookings it "
                                  "received stay listed.")
    return redirect("booking_webhook_list")
