"""Contacts and enrollments: who is in which sequence."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ..models import Contact, Enrollment, Sequence
from ..selectors import normalize_email, suppression_active_for
from ..timeline import Event, event_record
from .common import ServiceError
from .scheduling import schedule_next


def contact_upsert(
    *, email: str, first_name: str = "", last_name: str = "", company: str = "", fields: dict | None = None,
    timezone_name: str = "",
) -> Contact:
    """Create or update a contact by normalized address; own short transaction."""
    email = normalize_email(email)
    defaults: dict[str, Any] = {"first_name": first_name, "last_name": last_name, "company": company}
    if fields:
        defaults["fields"] = fields
    if timezone_name:
        defaults["timezone"] = timezone_name
    contact, _ = Contact.objects.update_or_create(email=email, defaults=defaults)
    return contact


def enrollment_create(*, sequence_id: int, contact_id: int, actor: str = "") -> Enrollment:
    """Enroll a contact and schedule step 1; one transaction. Refuses suppressed addresses."""
    with transaction.atomic():
        sequence = Sequence.objects.select_related("mailbox").get(pk=sequence_id)
        contact = Contact.objects.get(pk=contact_id)
        blocked = suppression_active_for(contact.email)
        if blocked is not None:
            raise ServiceError(f"{contact.email} is suppressed ({blocked.reason}, {blocked.value})")
        if not sequence.steps.exists():
            raise ServiceError(f"sequence {sequence.name!r} has no steps")
        if Enrollment.objects.filter(sequence=sequence, contact=contact).exists():
            raise ServiceError(f"{contact.email} is already enrolled in {sequence.name!r}")
        enrollment = Enrollment.objects.create(sequence=sequence, contact=contact)
        enrollment = Enrollment.objects.select_related("contact", "sequence__mailbox").get(pk=enrollment.pk)
        event_record(kind=Event.ENROLLED, email=contact.email, enrollment=enrollment, version_seen=1,
                     sequence=sequence.name, actor=actor)
        schedule_next(enrollment, reason="enrolled")
        return enrollment
