"""Reads that several callers share."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Q, QuerySet, Subquery

from .models import Enrollment, OperatorAction, ProviderCancel, SendJob, Suppression, TimelineEvent


def normalize_email(value: str) -> str:
    return value.strip().lower()


def suppression_key(value: str) -> tuple[str, bool]:
    """'Foo@Example.com' -> ('foo@example.com', False); '@Example.com' -> ('@example.com', True)."""
    value = normalize_email(value)
    if value.startswith("@"):
        return value, True
    return value, False


def suppression_latest(value: str) -> Suppression | None:
    """The latest ledger entry for a normalized value (it decides: an add suppresses, a lift does not)."""
    return Suppression.objects.filter(value=value).order_by("-id").first()


def suppression_active_for(email: str) -> Suppression | None:
    """The entry that currently suppresses this address (its own or its domain's), if any."""
    email = normalize_email(email)
    domain = "@" + email.rsplit("@", 1)[-1]
    for value in (email, domain):
        latest = suppression_latest(value)
        if latest is not None and latest.action == Suppression.Action.ADD:
            return latest
    return None


def suppressions_current() -> QuerySet[Suppression]:
    """The latest ledger entry of every value (whether it suppresses or was lifted)."""
    latest = Suppression.objects.filter(value=OuterRef("value")).order_by("-id").values("id")[:1]
    return Suppression.objects.filter(id=Subquery(latest))


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
