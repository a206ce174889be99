"""Contacts through the API, under the rules of `manage.py enroll`: validated the same way, and lossless.

Lossless: an existing contact changes only in the values a call gives that
are not empty, and its template fields are merged, never replaced — the same
`_changes` that `enrollments_create_batch` applies with `--update-contacts`.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from sequences.contact_rows import NAMED, row_check
from sequences.models import Contact, Enrollment
from sequences.services.common import ServiceError
from sequences.services.enrollments import ContactRow, _changes, enrollment_create


class BadRow(ServiceError):
    """A row `enroll` would reject: the API answers 422."""


def contact_row(data: dict[str, Any], *, line: int = 1) -> ContactRow:
    """A validated row from an API body, or BadRow with the reason `enroll` would give."""
    fields = data.get("fields") or {}
    clash = sorted(set(fields) & set(NAMED))
    if clash:
        raise BadRow(f"fields: {', '.join(clash)} are contact columns, not template fields")
    cells = {name: str(data.get(name) or "").strip() for name in NAMED} | {
        str(k).strip().lower(): str(v).strip() for k, v in fields.items()
    }
    row, reason = row_check(line, cells, extra=False)
    if row is None:
        raise BadRow(reason)
    return row


def contact_upsert_lossless(*, row: ContactRow, update: bool = True) -> tuple[Contact, bool, list[str]]:
    """Create the contact, or (with `update`) change an existing one in the non-empty values given.

    Its own short transaction, or a savepoint in the caller's.
    """
    for _ in range(2):  # a concurrent first insert of the same address: the second pass updates it
        try:
            with transaction.atomic():
                contact = Contact.objects.select_for_update().filter(email=row.email).first()
                if contact is None:
                    contact = Contact.objects.create(
                        email=row.email,
                        first_name=row.first_name,
                        last_name=row.last_name,
                        company=row.company,
                        timezone=row.timezone_name or "UTC",
                        fields=row.fields,
                    )
                    contact.refresh_from_db()
                    return contact, True, []
                changes = _changes(contact, row) if update else {}
                for name, value in changes.items():
                    setattr(contact, name, value)
                if changes:
                    contact.save(update_fields=sorted(changes))
                return contact, False, sorted(changes)
        except IntegrityError:
            continue
    raise ServiceError(f"{row.email}: could not be written, try again")


def enrollment_create_from_row(*, sequence_id: int, row: ContactRow, update_contact: bool, actor: str) -> Enrollment:
    """Enroll one API row as `enroll` would: one transaction, and a refused row changes nothing, not its contact."""
    with transaction.atomic(durable=True):
        contact, _, _ = contact_upsert_lossless(row=row, update=update_contact)
        return enrollment_create(sequence_id=sequence_id, contact_id=contact.pk, actor=actor)
