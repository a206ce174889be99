"""The header's workspace switcher: a person in several workspaces chooses the one the next pages show."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from sequences.permissions import VIEW
from workspaces.membership import workspace_switch

from .access import ui_view


@ui_view(VIEW, methods=("POST",))
def workspace_switch_view(request: HttpRequest) -> HttpResponse:
    try:
        wanted = int(request.POST.get("workspace", ""))
    except ValueError:
        wanted = 0
    chosen = workspace_switch(request, wanted)
    if chosen is None:
        messages.error(request, "You are not a member of that workspace.")
    else:
        messages.success(request, f"Now working in {chosen.name}.")
    # The dashboard, not the page it came from: that page's object belongs to the other workspace.
    return redirect("dashboard")
