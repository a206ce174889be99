"""Contacts and enrollments: who is in which sequence."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import timedelta
from typing import Any

from django.db import transaction

from ..dbclock import db_now
from ..models import Contact, Enrollment, SendJob, Sequence, Suppression, TimelineEvent
from ..selectors import normalize_email, suppression_active_for
from ..timeline import Event, event_record
from .common import ServiceError
from .scheduling import new_message_id, schedule_next


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


@dataclass(frozen=True)
class ContactRow:
    """One validated row of an import: a normalized address and the values to enroll it with."""

    line: int
    email: str
    first_name: str = ""
    last_name: str = ""
    company: str = ""
    timezone_name: str = ""
    fields: dict[str, str] = dataclass_field(default_factory=dict)


@dataclass
class BatchResult:
    enrolled: int = 0
    rejected: list[tuple[int, str]] = dataclass_field(default_factory=list)  # (line, reason)
    contacts_created: int = 0
    contacts_updated: int = 0
    fields_changed: Counter = dataclass_field(default_factory=Counter)  # field name -> contacts changed
    contacts_kept: int = 0  # existing contacts the file would have changed, left as they were


CONTACT_FIELDS = ("first_name", "last_name", "company", "timezone")


def _suppressed(emails: list[str]) -> dict[str, Suppression]:
    """The entry suppressing each address (its own or its domain's), as suppression_active_for decides, in one read."""
    values = set(emails) | {"@" + e.rsplit("@", 1)[-1] for e in emails}
    latest: dict[str, Suppression] = {}
    for entry in Suppression.objects.filter(value__in=values).order_by("id"):
        latest[entry.value] = entry
    out = {}
    for email in emails:
        for value in (email, "@" + email.rsplit("@", 1)[-1]):
            entry = latest.get(value)
            if entry is not None and entry.action == Suppression.Action.ADD:
                out[email] = entry
                break
    return out


def _changes(contact: Contact, row: ContactRow) -> dict[str, Any]:
    """What the row would change on an existing contact: its non-empty values that differ."""
    wanted = {"first_name": row.first_name, "last_name": row.last_name, "company": row.company,
              "timezone": row.timezone_name}
    changes: dict[str, Any] = {k: v for k, v in wanted.items() if v and getattr(contact, k) != v}
    merged = {**contact.fields, **{k: v for k, v in row.fields.items() if v}}
    if merged != contact.fields:
        changes["fields"] = merged
    return changes


def enrollments_create_batch(*, sequence_id: int, rows: list[ContactRow], update_contacts: bool = False,
                             actor: str = "") -> BatchResult:
    """Enroll many contacts and schedule each one's step 1; one transaction for the batch.

    Writes what contact_upsert + enrollment_create write for each accepted row
    (the contact, the enrollment, its step-1 job, and the `enrolled` and
    `job_scheduled` events), with one statement per table instead of one per
    row. A row that is refused (suppressed, already enrolled) changes nothing,
    not even its contact; an existing contact changes only with
    `update_contacts`, and only in the values the row gives.
    """
    result = BatchResult()
    with transaction.atomic():
        sequence = Sequence.objects.select_related("mailbox").get(pk=sequence_id)
        step = sequence.steps.order_by("position").first()
        if step is None:
            raise ServiceError(f"sequence {sequence.name!r} has no steps")
        emails = [row.email for row in rows]
        suppressed = _suppressed(emails)
        enrolled = set(Enrollment.objects.filter(sequence=sequence, contact__email__in=emails)
                       .values_list("contact__email", flat=True))
        existing = {c.email: c for c in Contact.objects.filter(email__in=emails)}
        accepted: list[ContactRow] = []
        for row in rows:
            blocked = suppressed.get(row.email)
            if blocked is not None:
                result.rejected.append((row.line, f"{row.email} is suppressed ({blocked.reason}, {blocked.value})"))
            elif row.email in enrolled:
                result.rejected.append((row.line, f"{row.email} is already enrolled in {sequence.name!r}"))
            else:
                accepted.append(row)

        new = [Contact(email=r.email, first_name=r.first_name, last_name=r.last_name, company=r.company,
                       timezone=r.timezone_name or "UTC", fields=r.fields)
               for r in accepted if r.email not in existing]
        Contact.objects.bulk_create(new)
        result.contacts_created = len(new)
        changed: list[Contact] = []
        for row in accepted:
            contact = existing.get(row.email)
            changes = _changes(contact, row) if contact is not None else {}
            if not changes:
                continue
            if not update_contacts:
                result.contacts_kept += 1
                continue
            for name, value in changes.items():
                setattr(contact, name, value)
            result.fields_changed.update(changes.keys())
            changed.append(contact)
        if changed:
            Contact.objects.bulk_update(changed, fields=sorted(set(result.fields_changed)))
        result.contacts_updated = len(changed)

        contacts = {c.email: c for c in new} | existing
        enrollments = Enrollment.objects.bulk_create(
            [Enrollment(sequence=sequence, contact=contacts[r.email]) for r in accepted])
        # Step 1 of a new enrollment, as schedule_next creates it: nothing sent yet, due after its wait.
        scheduled_at = db_now() + timedelta(seconds=step.wait_seconds)
        jobs = SendJob.objects.bulk_create([
            SendJob(enrollment=e, step=step, state=SendJob.State.SCHEDULED, scheduled_at=scheduled_at,
                    message_id=new_message_id(sequence.mailbox)) for e in enrollments])
        events = []
        for row, enrollment, job in zip(accepted, enrollments, jobs, strict=True):
            # The same events, with the same data, as event_record writes for enrollment_create.
            events.append(TimelineEvent(kind=Event.ENROLLED.value, email=row.email, enrollment=enrollment,
                                        version_seen=1, data={"sequence": sequence.name, "actor": actor}))
            events.append(TimelineEvent(kind=Event.JOB_SCHEDULED.value, email=row.email, enrollment=enrollment,
                                        job=job, version_seen=job.version,
                                        data={"step": step.position, "scheduled_at": scheduled_at.isoformat(),
                                              "reason": "enrolled"}))
        TimelineEvent.objects.bulk_create(events)
        result.enrolled = len(accepted)
    return result
