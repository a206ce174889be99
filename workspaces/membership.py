"""Who works in which workspace, and with which role there.

A user with no membership works across the install (an agency's staff: its groups give its role, and it may switch
to any workspace); a member sees only its workspaces, each with the role its membership names.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission
from django.db.models import OuterRef, Subquery

from .models import ROLE_GROUP, Membership, Workspace

SESSION_KEY = "outreach_workspace"


@dataclass(frozen=True)
class Choice:
    workspace: Workspace  # the one the user works in now
    allowed: list[Workspace]  # those it may switch to
    role: str | None  # its membership's role there; None for an agency user, whose groups decide
    sole: bool  # the install has this one workspace only


def workspace_choice(user, chosen: int | None) -> Choice | None:
    """Where a signed-in user works; None for a member of nothing. One query: every workspace with the user's
    role in it (None where it is no member)."""
    role_there = Membership.objects.filter(user=user, workspace=OuterRef("pk")).values("role")[:1]
    everything = list(Workspace.objects.annotate(member_role=Subquery(role_there)))
    allowed = [w for w in everything if w.member_role is not None] or everything
    if not allowed:
        allowed = [Workspace.objects.get_or_create(name="Default")[0]]
        allowed[0].member_role = None
    current = next((w for w in allowed if w.pk == chosen), allowed[0])
    return Choice(current, allowed, current.member_role, len(everything) <= 1)


def workspace_switch(request, workspace_id: int) -> Workspace | None:
    """Work in another workspace from the next page on; None when the user may not."""
    choice = workspace_choice(request.user, workspace_id)
    if choice is None or choice.workspace.pk != workspace_id:
        return None
    request.session[SESSION_KEY] = workspace_id
    return choice.workspace


class MembershipBackend(ModelBackend):
    """Django's permissions, with a member's role in the workspace it works in (set on the user for the request by
    `outreach.middleware.WorkspaceMiddleware`) in place of its groups."""

    def _get_group_permissions(self, user_obj):
        role = getattr(user_obj, "workspace_role", None)
        if role is None:
            return super()._get_group_permissions(user_obj)
        return Permission.objects.filter(group__name=ROLE_GROUP[role])
