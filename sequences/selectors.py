"""Reads that several callers share."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from .models import Contact, Enrollment, SendJob, Suppression


def normalize_email(value: str) -> str:
    return value.strip().lower()


def suppression_key(value: str) -> tuple[str, bool]:
    """'Foo@Example.com' -> ('foo@example.com', False); '@Example.com' -> ('@example.com', True)."""
    value = normalize_email(value)
    if value.startswith("@"):
        return value, True
    return value, False


def suppression_active_for(email: str) -> Suppression | None:
    """The entry that currently suppresses this address (its own or its domain's), if any."""
    email = normalize_email(email)
    domain = "@" + email.rsplit("@", 1)[-1]
    for value in (email, domain):
        latest = Suppression.objects.filter(value=value).order_by("-id").first()
        if latest is not None and latest.action == Suppression.Action.ADD:
            return latest
    return None


def suppressions_current() -> QuerySet[Suppression]:
    """The latest ledger entry of every value (whether it suppresses or was lifted)."""
    latest = Suppression.objects.filter(value=OuterRef("value")).order_by("-id").values("id")[:1]
    return Suppression.objects.filter(id=Subquery(latest))


def enrollments_for_value(value: str) -> QuerySet[Enrollment]:
    """Enrollments touched by a suppression of an address or of a whole domain."""
    value, is_domain = suppression_key(value)
    if is_domain:
        return Enrollment.objects.filter(contact__email__endswith=value)
    return Enrollment.objects.filter(contact__email=value)


def contact_by_email(email: str) -> Contact | None:
    return Contact.objects.filter(email=normalize_email(email)).first()


def jobs_for_email(email: str) -> QuerySet[SendJob]:
    return SendJob.objects.filter(enrollment__contact__email=normalize_email(email)).select_related(
        "enrollment__sequence", "step"
    )


def provider_cancels_pending(*, enrollment_id: int) -> list[int]:
    """Ids of the enrollment's jobs whose cancel request a provider has not answered yet."""
    return list(
        SendJob.objects.filter(enrollment_id=enrollment_id, provider_cancel_status="requested")
        .order_by("pk").values_list("pk", flat=True)
    )
