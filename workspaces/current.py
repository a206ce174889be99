"""The workspace a new tenant row belongs to when the code that makes it does not say, and the scopes that
background work (the scheduler, commands) runs in."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext

from .models import DEFAULT_NAME, Workspace
from .scoping import scoped_workspace_id, workspace_scope


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


def scope_or_only() -> AbstractContextManager[None]:
    """The scope's workspace, as it is; outside any scope, a scope of the install's only workspace (rows written
    without a workspace are its). Raises LookupError in words, before any scope is entered, where the install has
    several (as `workspace_named(None)` does)."""
    if scoped_workspace_id() is not None:
        return nullcontext()
    return workspace_scope(workspace_named(None).pk, with_unowned=True)


def each_workspace(workspaces: Iterable[Workspace] | None = None) -> Iterator[Workspace]:
    """Each of *workspaces* (default: the install's, by name) in turn, the loop's body inside its own scope; rows
    written without a workspace are its where it is the install's only workspace."""
    everything = list(Workspace.objects.order_by("name"))
    for workspace in everything if workspaces is None else workspaces:
        with workspace_scope(workspace.pk, with_unowned=len(everything) == 1):
            yield workspace
