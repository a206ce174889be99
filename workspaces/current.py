"""The workspace a new tenant row belongs to when the code that makes it does not say."""

from __future__ import annotations

from .models import DEFAULT_NAME, Workspace
from .scoping import scoped_workspace_id


def sole_workspace_id() -> int | None:
    """The install's only workspace, if it has exactly one."""
    ids = list(Workspace.objects.values_list("pk", flat=True)[:2])
    return ids[0] if len(ids) == 1 else None


def workspace_default() -> int | None:
    """The request's workspace; else the install's only one (made, named "Default", when there is none); else
    None, which a required column refuses: with several workspaces, background work names the workspace."""
    scoped = scoped_workspace_id()
    if scoped is not None:
        return scoped
    only = sole_workspace_id()
    if only is not None:
        return only
    if not Workspace.objects.exists():
        return Workspace.objects.get_or_create(name=DEFAULT_NAME)[0].pk
    return None


def workspace_named(name: str | None) -> Workspace:
    """A command's `--workspace NAME`; without one, the install's only workspace. Raises LookupError in words."""
    if name:
        found = Workspace.objects.filter(name=name).first()
        if found is None:
            known = ", ".join(Workspace.objects.values_list("name", flat=True)) or "none"
            raise LookupError(f"no workspace named {name!r} (known: {known})")
        return found
    first_two = list(Workspace.objects.all()[:2])
    if len(first_two) == 1:
        return first_two[0]
    if not first_two:
        return Workspace.objects.get_or_create(name=DEFAULT_NAME)[0]
    raise LookupError("this install has several workspaces: name one with --workspace NAME "
                      "(manage.py workspace list shows them)")
