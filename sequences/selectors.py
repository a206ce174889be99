"""Reads that several callers share."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from workspaces.current import sole_workspace_id
from workspaces.models import Workspace
from workspaces.scoping import current_scope, scoped_workspace_id

from .models import Contact, Enrollment, OperatorAction, ProviderCancel, SendJob, Sequence, Suppression, TimelineEvent


def normalize_email(value: str) -> str:
    return value.strip().lower()


def suppression_key(value: str) -> tuple[str, bool]:
    """'Foo@Example.com' -> ('foo@example.com', False); '@Example.com' -> ('@example.com', True)."""
    value = normalize_email(value)
    if value.startswith("@"):
        return value, True
    return value, False


# The ledger has a part per workspace and the agency's part (workspace None: "everywhere"): the latest entry of a
# value in a part decides for that part. A send in a workspace is held by its own part and by the agency's.
CURRENT = object()  # the part of the workspace the request (or its job) works in; outside any, the agency's


def ledger_part(workspace_id: int | None | object = CURRENT) -> int | None:
    """The ledger's part an entry is written to or read from: the one named, else the scope's, else the install's
    only workspace's, else the agency's (background work that knows no workspace holds the person everywhere)."""
    if workspace_id is not CURRENT:
        return workspace_id
    scoped = scoped_workspace_id()
    if scoped is not None:
        return scoped
    return sole_workspace_id()


def ledger_parts_lifted(workspace_id: int | None | object = CURRENT) -> list[int | None]:
    """Where a lift (or a review) looks for the entry it decides, in order: the part, and in an install of one
    workspace the agency's too (an entry written before the workspace existed)."""
    part = ledger_part(workspace_id)
    if workspace_id is not CURRENT or part is None:
        return [part]
    scope = current_scope()
    with_unowned = scope.with_unowned if scope is not None else not Workspace.objects.exclude(pk=part).exists()
    return [part, None] if with_unowned else [part]


def in_part(workspace_id: int | None) -> Q:
    return Q(workspace__isnull=True) if workspace_id is None else Q(workspace_id=workspace_id)


def suppression_latest(value: str, *, workspace_id: int | None | object = CURRENT) -> Suppression | None:
    """The latest entry for a normalized value in one part of the ledger (it decides: an add suppresses, a lift
    does not)."""
    part = ledger_part(workspace_id)
    return Suppression._base_manager.filter(in_part(part), value=value).order_by("-id").first()


def suppression_active_for(email: str, *, workspace_id: int | None | object = CURRENT) -> Suppression | None:
    """The entry that currently suppresses this address (its own or its domain's) for a workspace: in its part or
    the agency's. Outside any workspace and with none named, in any part (what holds somebody anywhere)."""
    email = normalize_email(email)
    domain = "@" + email.rsplit("@", 1)[-1]
    part = ledger_part(workspace_id)
    for value in (email, domain):
        entries = Suppression._base_manager.filter(value=value)
        parts = ([part, None] if part is not None
                 else list(entries.values_list("workspace_id", flat=True).distinct()) if workspace_id is CURRENT
                 else [None])
        for each in dict.fromkeys(parts):
            latest = entries.filter(in_part(each)).order_by("-id").first()
            if latest is not None and latest.action == Suppression.Action.ADD:
                return latest
    return None


def job_workspace_id(job_id: int | None) -> int | None:
    """The workspace of a send job (its sequence's); None when there is no such job (the agency's part)."""
    if job_id is None:
        return None
    return (SendJob._base_manager.filter(pk=job_id).values_list("enrollment__sequence__workspace_id", flat=True)
            .first())


def suppressions_current() -> QuerySet[Suppression]:
    """The latest ledger entry of every value in each part (whether it suppresses or was lifted); in a workspace,
    its part and the agency's."""
    part_of = Coalesce("workspace_id", Value(0))
    latest = (Suppression._base_manager.annotate(part=part_of).filter(value=OuterRef("value"), part=OuterRef("part"))
              .order_by("-id").values("id")[:1])
    return Suppression.objects.annotate(part=part_of).filter(id=Subquery(latest))


def optouts_waiting() -> QuerySet[Suppression]:
    """The addresses suppressed provisionally (a reply that may ask to stop) that no operator has decided on yet:
    the latest ledger entry is still that provisional one (Replies → Needs review, the dashboard's count)."""
    return suppressions_current().filter(action=Suppression.Action.ADD, reason=Suppression.Reason.POSSIBLE_OPTOUT)


def enrollments_for_value(value: str) -> QuerySet[Enrollment]:
    """Enrollments touched by a suppression of an address or of a whole domain."""
    value, is_domain = suppression_key(value)
    if is_domain:
        return Enrollment.objects.filter(contact__email__iendswith=value)
    return Enrollment.objects.filter(contact__email=value)


def provider_cancels_pending(*, enrollment_id: int) -> list[int]:
    """Ids of the enrollment's jobs whose cancel request a provider has not answered yet."""
    return list(
        SendJob.objects.filter(enrollment_id=enrollment_id, provider_cancel_status=ProviderCancel.REQUESTED)
        .order_by("pk").values_list("pk", flat=True)
    )


def jobs_with_labels() -> QuerySet[SendJob]:
    """Send jobs with what their honest labels read (enrollment, sequence, mailbox, contact, step)."""
    return SendJob.objects.select_related("enrollment__mailbox", "enrollment__sequence__mailbox", "enrollment__contact",
                                          "step")


def ledger_search(q: str, *, history: bool) -> QuerySet[Suppression]:
    """Current entries (latest per value) or the whole history, filtered by address or domain."""
    qs = Suppression.objects.all() if history else suppressions_current()
    q = q.strip()
    if q:
        value, _ = suppression_key(q)
        if "@" in value:
            domain = "@" + value.rsplit("@", 1)[-1]
            qs = qs.filter(Q(value=value) | Q(value=domain) | Q(value__icontains=value))
        else:
            qs = qs.filter(value__icontains=value)
    return qs.order_by("-id")


def suppression_status(value: str) -> dict[str, Any]:
    """A value's latest entry and, for an address, the entry that blocks it (its own or its domain's)."""
    value, is_domain = suppression_key(value)
    return {"value": value, "is_domain": is_domain, "latest": suppression_latest(value),
            "blocking": None if is_domain else suppression_active_for(value)}


def operator_actions(q: str = "", action: str = "") -> QuerySet[OperatorAction]:
    qs = OperatorAction.objects.all()
    if q:
        qs = qs.filter(Q(actor__icontains=q) | Q(target__icontains=q))
    if action:
        qs = qs.filter(action=action)
    return qs.order_by("-at", "-id")


def sequence_name_taken(*, workspace_id: int | None, name: str, sequence_id: int | None = None) -> bool:
    """Whether another sequence of the workspace has this name. A name is its workspace's: another workspace's
    sequence of the same name is no conflict, and nothing says it exists."""
    return Sequence._base_manager.filter(workspace_id=workspace_id, name=name).exclude(pk=sequence_id).exists()


def contact_workspace_names(email: str) -> list[str]:
    """The workspaces, by name, in which the address is a contact (as far as the scope sees)."""
    return sorted(Contact.objects.filter(email=normalize_email(email)).values_list("workspace__name", flat=True))


def timeline_of_address(email: str) -> QuerySet[TimelineEvent]:
    """Every timeline event of an address and of its @domain, in commit order (`timeline`, the API)."""
    email = normalize_email(email)
    return TimelineEvent.objects.filter(email__in=[email, "@" + email.rsplit("@", 1)[-1]]).order_by("at", "id")


def timeline_event_fields(event: TimelineEvent) -> dict[str, Any]:
    """One event as `timeline --json` and the API name its fields."""
    return {
        "at": event.at, "kind": event.kind, "enrollment": event.enrollment_id, "job": event.job_id,
        "version_seen": event.version_seen, "worker": event.worker_id, "data": event.data,
    }
