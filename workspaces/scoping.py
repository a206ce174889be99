"""Which workspace a query of a tenant model sees: the request's, filtered by the model's manager.

A page or an API call runs inside its workspace (`outreach.middleware.WorkspaceMiddleware`): every query of a
tenant model through its manager (`WorkspaceManager`), related managers included, is filtered to that workspace,
so an id, a slug or a URL of another workspace's object answers as if it did not exist. A request with nobody
signed in runs in a scope that refuses every tenant query (`ScopeRefused`) unless its view is one of the public
ones that find their row by a signed token (`workspace_unscoped`). Background work (workers, the scheduler, the
watcher, commands) runs outside any request and acts on the rows it was handed by id, across the install; a
command that finds rows by name takes `--workspace`.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Final

from django.db import models


class ScopeRefused(Exception):
    """A tenant query where no workspace was chosen (a request with nobody signed in, outside a public view)."""


class _Marker:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


REFUSE: Final = _Marker("REFUSE")  # a request without a workspace: a tenant query is an error
UNSCOPED: Final = _Marker("UNSCOPED")  # a public view that finds its row by a signed token


@dataclass(frozen=True)
class Scope:
    workspace_id: int
    with_unowned: bool  # rows written without a workspace (None) are its rows (the install has one workspace, or
    # the work is ingestion's or a booking's, which own what background work wrote for them)
    only: bool = False  # a request in an install of this one workspace: nothing to filter


# None: outside any request (background work); a Scope: the workspace a request works in.
_scope: ContextVar[Scope | _Marker | None] = ContextVar("workspace_scope", default=None)


@contextmanager
def _set(value: Scope | _Marker | None) -> Iterator[None]:
    token = _scope.set(value)
    try:
        yield
    finally:
        _scope.reset(token)


def workspace_scope(workspace_id: int, *, with_unowned: bool = False):
    """Queries of tenant models see this workspace only; *with_unowned*: and the rows written without a workspace."""
    if not isinstance(workspace_id, int):
        raise TypeError(f"a workspace scope needs a workspace id, not {workspace_id!r}")
    return _set(Scope(workspace_id, with_unowned))


def workspace_refused():
    """Queries of tenant models raise `ScopeRefused` (a request with nobody signed in)."""
    return _set(REFUSE)


def workspace_unscoped():
    """Queries of tenant models see every workspace (a public view that finds its row by a signed token)."""
    return _set(UNSCOPED)


def request_scope_begin() -> Token:
    """A request starts refusing tenant queries until `request_scope_choose` says its workspace (a middleware's
    two steps, before and at the view); `request_scope_end` restores what was before."""
    return _scope.set(REFUSE)


def request_scope_choose(workspace_id: int | None, *, only: bool = False) -> None:
    """The request's workspace (None: a public view, which sees every workspace); *only*: the install has this one
    workspace only, so the request's queries are not filtered at all (rows without a workspace are its too)."""
    _scope.set(UNSCOPED if workspace_id is None else Scope(workspace_id, with_unowned=only, only=only))


def request_scope_end(token: Token) -> None:
    _scope.reset(token)


def current_scope() -> Scope | None:
    """The workspace a request (or a job it queued) works in, if any."""
    value = _scope.get()
    return value if isinstance(value, Scope) else None


def scoped_workspace_id() -> int | None:
    """The workspace queries are filtered to, if any."""
    value = _scope.get()
    return value.workspace_id if isinstance(value, Scope) else None


class _ScopedManager(models.Manager):
    path = ""
    unowned = ""
    shared = False

    def get_queryset(self) -> models.QuerySet:
        queryset = super().get_queryset()
        value = _scope.get()
        if value is None or value is UNSCOPED:
            return queryset
        if value is REFUSE:
            refused = copy.copy(queryset)
            refused.__class__ = refused_class(type(queryset))
            return refused
        if value.only:  # the install's only workspace: every row is its own, a filter would only cost
            return queryset
        return queryset.filter(self.condition(value))

    def condition(self, scope: Scope) -> models.Q:
        first, _, rest = self.path.partition("__")
        if not rest:
            seen = own_rows(first, scope)
            return seen | models.Q(**{f"{first}__isnull": True}) if self.shared else seen
        related = self.model._meta.get_field(first).related_model
        rows = related._base_manager.filter(**{rest: scope.workspace_id}).values("pk")
        seen = models.Q(**{f"{first}__in": rows})
        if self.unowned:
            seen |= models.Q(**{f"{first}__isnull": True}) & own_rows(self.unowned, scope)
        return seen


def _refuse(self, *args, **kwargs):
    raise ScopeRefused(f"a query of {self.model.__name__} needs a workspace, and this request has none")


_REFUSED_CLASSES: dict[type, type] = {}


def refused_class(base: type) -> type:
    """A queryset class that may be built and chained (a form's field at import) but raises when it would run;
    `none()` stays allowed."""
    if base not in _REFUSED_CLASSES:
        blocked = ("_fetch_all", "count", "exists", "aggregate", "update", "delete", "iterator", "contains",
                   "in_bulk", "explain", "get_or_create", "update_or_create", "bulk_update")

        def none(self):
            empty = self._chain()
            empty.__class__ = base
            empty.query.set_empty()
            return empty

        _REFUSED_CLASSES[base] = type(f"Refused{base.__name__}", (base,),
                                      {name: _refuse for name in blocked} | {"none": none})
    return _REFUSED_CLASSES[base]


def WorkspaceManager(path: str, *, unowned: str = "", shared: bool = False) -> models.Manager:  # noqa: N802
    """A tenant model's manager, filtered to the scope's workspace through `path` ("workspace", or a foreign key
    and the path on from its model: "step__sequence__workspace"). Related managers (`sequence.steps`) are built
    from its class and filter alike.

    A path through a foreign key filters by a subquery of the related rows (`step_id IN (SELECT ...)`), never a
    join: a `select_for_update()` of the row locks that row only, as it did before workspaces (sequences/locks.py).
    A nullable workspace column: a row without one (written by background work outside any workspace) is seen only
    while the install has a single workspace. `unowned`: for the rows whose first hop is empty (an event without
    an enrollment), the column that says their workspace. `shared`: a row without a workspace is the agency's,
    seen in every workspace (the suppression ledger's "everywhere" part)."""

    class Manager(_ScopedManager):
        pass

    Manager.path, Manager.unowned, Manager.shared = path, unowned, shared
    return Manager()


def own_rows(column: str, scope: Scope) -> models.Q:
    seen = models.Q(**{f"{column}_id": scope.workspace_id})
    return seen | models.Q(**{f"{column}__isnull": True}) if scope.with_unowned else seen
