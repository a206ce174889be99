"""An operator's contacts one at a time: adding one, changing its details, enrolling it in a sequence; each in the
operator log.

The values come checked by the import's own rules (`sequences.contact_rows.row_check`: lengths, line breaks,
time zone, field names and sizes) as a `ContactRow`; enrolling refuses what an import of that row would refuse
(`enrollments_dry_run`: suppressed, erased, already enrolled, a value a step needs and lacks). A contact added
with a sequence goes through the import's batch (`enrollments_create_batch` with one row): when refused, nothing
is written, not even the contact. An address that is already a contact is refused: its own page changes or
enrolls it.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from ..models import Contact, Enrollment
from .common import ServiceError, operator_log
from .enrollments import ContactRow, contact_upsert, enrollment_create, enrollments_create_batch, enrollments_dry_run

EDITABLE = ("first_name", "last_name", "company", "timezone", "fields")


def contact_edit(*, contact_id: int, row: ContactRow, actor: str) -> list[str]:
    """Change a contact's name, company, time zone and template fields; durable transaction. Returns what changed.

    The address is the contact's identity and is not changed here. Emails already sent keep what they said; the
    next ones are prepared with the new values.
    """
    with transaction.atomic(durable=True):
        contact = Contact.objects.select_for_update().get(pk=contact_id)
        new = {"first_name": row.first_name, "last_name": row.last_name, "company": row.company,
               "timezone": row.timezone_name, "fields": dict(row.fields)}
        changed = [name for name in EDITABLE if getattr(contact, name) != new[name]]
        if not changed:
            return []
        before = {name: getattr(contact, name) for name in changed}
        for name in changed:
            setattr(contact, name, new[name])
        contact.save(update_fields=changed)
        operator_log(actor=actor, action="contact_edit", target=contact.email, target_id=contact.pk,
                     result={"changed": changed, "before": before})
        return changed


def contact_enroll(*, contact_id: int, sequence_id: int, actor: str) -> Enrollment:
    """Enroll one contact in a sequence, refused for what an import would refuse; one transaction."""
    with transaction.atomic(durable=True):
        contact = Contact.objects.get(pk=contact_id)
        row = ContactRow(line=0, email=contact.email, first_name=contact.first_name, last_name=contact.last_name,
                         company=contact.company, timezone_name=contact.timezone, fields=contact.fields or {})
        refused = enrollments_dry_run(sequence_id=sequence_id, rows=[row]).get(contact.email)
        if refused is not None:
            raise ServiceError(refused.reason)
        enrollment = enrollment_create(sequence_id=sequence_id, contact_id=contact_id, actor=actor)
        operator_log(actor=actor, action="contact_enroll", target=contact.email, target_id=contact.pk,
                     result={"sequence": enrollment.sequence.name, "enrollment": enrollment.pk})
        return enrollment


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
