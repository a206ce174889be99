"""Who works in which workspace, and with which role there.

A user with no membership works across the install (an agency's staff: its groups give its role, and it may switch
to any workspace); a member sees only its workspaces, each with the role its membership names.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission

from .models import ROLE_GROUP, Membership, Workspace

SESSION_KEY = "outreach_workspace"


@dataclass(frozen=True)
class Choice:
    workspace: Workspace  # the one the user works in now
    allowed: list[Workspace]  # those it may switch to
    role: str | None  # its membership's role there; None for an agency user, whose groups decide
    sole: bool  # the install has this one workspace only


def workspace_choice(user, chosen: int | None) -> Choice | None:
    """Where a signed-in user works; None for a member of nothing."""
    memberships = list(Membership.objects.filter(user=user).select_related("workspace"))
    if memberships:
        allowed = [m.workspace for m in memberships]
        roles = {m.workspace_id: m.role for m in memberships}
        sole = len(allowed) == 1 and not Workspace.objects.exclude(pk=allowed[0].pk).exists()
    else:
        allowed = list(Workspace.objects.all()) or [Workspace.objects.get_or_create(name="Default")[0]]
        roles, sole = {}, len(allowed) == 1
    if not allowed:
        return None
    current = next((w for w in allowed if w.pk == chosen), allowed[0])
    return Choice(current, allowed, roles.get(current.pk), sole)


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
