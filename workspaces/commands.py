"""`--workspace NAME` for the commands that find rows by name or address: the command runs inside that workspace
(what it reads is that workspace's, what it makes belongs to it). Without it a command acts across the install, and
what it makes goes to the install's only workspace (refused, in words, where there are several)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.management.base import CommandError
from django.db.models import Manager, QuerySet

from .current import workspace_named
from .models import Workspace
from .scoping import scoped_workspace_id, workspace_scope


def workspace_argument(parser) -> None:
    parser.add_argument("--workspace", metavar="NAME", default="",
                        help="the workspace to act in (manage.py workspace list); needed where there are several")


def in_named_workspace(handle: Callable) -> Callable:
    """A command's `handle`, run inside the workspace its `--workspace` names."""

    @wraps(handle)
    def run(self, *args, workspace: str = "", **options):
        if not workspace:
            return handle(self, *args, **options)
        try:
            chosen = workspace_named(workspace)
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        with workspace_scope(chosen.pk, with_unowned=Workspace.objects.count() == 1):
            return handle(self, *args, **options)

    return run


def one_person_refused(email: str, workspaces: list[str]) -> None:
    """A command that finds a person by address, run without `--workspace` where the address is a contact in
    several workspaces, is refused in words: each is a person of its own, and mixing them would answer neither."""
    if scoped_workspace_id() is None and len(workspaces) > 1:
        raise CommandError(f"{email} is a contact in {len(workspaces)} workspaces ({', '.join(workspaces)}): name "
                           "one with --workspace NAME")


def one_named(rows: Manager | QuerySet, name: str, *, what: str) -> Any:
    """The row of *rows* (a tenant model's, by its manager) named *name*, or None: the one in the command's
    workspace; run without `--workspace`, the install's one of that name. A name used in several workspaces (each
    workspace names its sequences as it likes) is refused in words, as `workspace_named(None)` refuses."""
    found = list(rows.filter(name=name)[:2])
    if len(found) > 1:
        try:
            workspace_named(None)
        except LookupError as exc:
            raise CommandError(f"{what} {name!r} is a name in more than one workspace: {exc}") from None
    return found[0] if found else None


def ledger_arguments(parser) -> None:
    """`--workspace NAME` or `--everywhere` for a suppression: the ledger's part it is written to."""
    parser.add_argument("--workspace", metavar="NAME", default="",
                        help="the workspace whose ledger it is in (needed where there are several)")
    parser.add_argument("--everywhere", action="store_true",
                        help="the agency's list: holds (or lifts) the address in every workspace")


def ledger_part_named(*, workspace: str, everywhere: bool) -> int | None:
    """The ledger's part a command's `--workspace`/`--everywhere` name: a workspace's id, or None (everywhere)."""
    if everywhere and workspace:
        raise CommandError("give --workspace or --everywhere, not both")
    if everywhere:
        return None
    try:
        return workspace_named(workspace or None).pk
    except LookupError as exc:
        raise CommandError(f"{exc}; or --everywhere for every workspace") from None
