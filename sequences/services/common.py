"""What every service shares: the refusal error and the operator log."""

from __future__ import annotations

from typing import Any

from workspaces.scoping import scoped_workspace_id

from ..models import OperatorAction


class ServiceError(Exception):
    """A request the domain refuses, with a message fit for an operator."""


T = OperatorAction.TargetKind


def operator_log(
    *, actor: str, action: str, target: str, result: dict[str, Any], kind: str = "", target_id: int | None = None
) -> None:
    """One operator-log row, in the caller's transaction; nothing is logged for the system's own actions."""
    if actor:
        OperatorAction.objects.create(actor=actor, action=action, target=target, target_kind=kind,
                                      target_id=target_id, result=result, workspace_id=scoped_workspace_id())


def fields_saved(instance, values: dict[str, Any]) -> list[str]:
    """Set on `instance` the values that differ and save only those fields; the names changed (sorted as given)."""
    changed = [k for k, v in values.items() if getattr(instance, k) != v]
    for key in changed:
        setattr(instance, key, values[key])
    if changed:
        instance.save(update_fields=changed)
    return changed
