"""An operator adds one new contact, optionally enrolling it in a sequence at once; in the operator log.

The row comes checked by the import's own rules (`sequences.contact_rows.row_check`). Enrolling goes through the
import's batch (`enrollments_create_batch` with one row), so the new contact is refused for exactly what an import
would refuse (suppressed, erased, a value a step needs and lacks) and, when refused, nothing is written, not even
the contact. An address that is already a contact is refused: its own page changes or enrolls it.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from ..models import Contact, Enrollment
from .common import ServiceError, operator_log
from .enrollments import ContactRow, contact_upsert, enrollments_create_batch


class ContactExists(ServiceError):
    """The address is already a contact (its id, for a link to it)."""

    def __init__(self, contact_id: int, email: str):
        super().__init__(f"{email} is already a contact")
        self.contact_id = contact_id


def contact_add(*, row: ContactRow, sequence_id: int | None, actor: str) -> tuple[Contact, Enrollment | None]:
    """Create a contact from a checked row, enrolled in `sequence_id` when given; one durable transaction.

    Raises ContactExists for an address that is already a contact, ServiceError for what an import refuses."""
    try:
        with transaction.atomic(durable=True):
            existing = Contact.objects.filter(email=row.email).values_list("pk", flat=True).first()
            if existing is not None:
                raise ContactExists(existing, row.email)
            enrollment = None
            if sequence_id is None:
                contact = contact_upsert(email=row.email, first_name=row.first_name, last_name=row.last_name,
                                         company=row.company, fields=dict(row.fields), timezone_name=row.timezone_name)
            else:
                result = enrollments_create_batch(sequence_id=sequence_id, rows=[row], actor=actor)
                if result.rejected:
                    raise ServiceError(result.rejected[0][1])  # raised inside the block: nothing is kept
                enrollment = Enrollment.objects.select_related("contact", "sequence").get(
                    pk=result.enrollment_ids[row.email])
                contact = enrollment.contact
            operator_log(actor=actor, action="contact_add", target=contact.email, target_id=contact.pk,
                         result={"enrolled in": enrollment.sequence.name} if enrollment else {})
            return contact, enrollment
    except IntegrityError:
        # Another operator (or an import) created the address between our read and our insert.
        found = Contact.objects.filter(email=row.email).values_list("pk", flat=True).first()
        if found is None:
            raise
        raise ContactExists(found, row.email) from None
