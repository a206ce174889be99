"""An operator's changes to one contact: its details, and enrolling it in a sequence; each in the operator log.

The values come checked by the import's own rules (`sequences.contact_rows.row_check`: lengths, line breaks,
time zone, field names and sizes) as a `ContactRow`; enrolling refuses what an import of that row would refuse
(`enrollments_dry_run`: suppressed, erased, already enrolled, a value a step needs and lacks).
"""

from __future__ import annotations

from django.db import transaction

from ..models import Contact, Enrollment
from .common import ServiceError, operator_log
from .enrollments import ContactRow, enrollment_create, enrollments_dry_run

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
