"""Contacts and enrollments: who is in which sequence."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.template import TemplateSyntaxError

from db.clock import db_now
from db.sql import rows_copied
from workspaces.current import workspace_default

from ..digests import address_erased, addresses_erased
from ..messages import MissingValue, PrepareError, contact_context, render
from ..models import Contact, Enrollment, SendJob, Sequence, StepVariant, Suppression, TimelineEvent
from ..reasons import Reason
from ..selectors import normalize_email, suppression_active_for
from ..states import LEFT
from ..timeline import Event, event_record, events_record_many
from ..variants import running_variants, variant_pick
from ..window import zone_problem
from .common import ServiceError, T, operator_log
from .rotation import mailboxes_choose
from .scheduling import new_message_id, schedule_next, schedule_step

# The refusal of an erased person's address: it names no address (the caller knows which one it sent).
ERASED = "this address belongs to a person whose data was erased: it is never imported or mailed again"


def contact_upsert(
    *, email: str, first_name: str = "", last_name: str = "", company: str = "", fields: dict | None = None,
    timezone_name: str = "", workspace_id: int | None = None,
) -> Contact:
    """Create or update a contact by normalized address in a workspace (by default the request's, or the install's
    only one); own short transaction. Refuses an unknown time zone."""
    if timezone_name and zone_problem(timezone_name):
        raise ServiceError(f"{normalize_email(email)}: timezone: {zone_problem(timezone_name)}")
    email = normalize_email(email)
    if address_erased(email, workspace_id):
        raise ServiceError(ERASED)
    defaults: dict[str, Any] = {"first_name": first_name, "last_name": last_name, "company": company}
    if fields:
        defaults["fields"] = fields
    if timezone_name:
        defaults["timezone"] = timezone_name
    workspace_id = workspace_id or workspace_default()
    if workspace_id is None:
        raise ServiceError(f"{email}: this install has several workspaces: say which one the contact belongs to")
    contact, _ = Contact.objects.update_or_create(workspace_id=workspace_id, email=email, defaults=defaults)
    return contact


def enrollment_create(*, sequence_id: int, contact_id: int, actor: str = "", delay_seconds: int = 0,
                      extra: dict | None = None) -> Enrollment:
    """Enroll a contact and schedule step 1; one transaction. Refuses suppressed addresses and unknown time zones.

    The enrollment is given the mailbox of the sequence's pool with the most
    daily capacity left (services.rotation) and keeps it for its whole life.
    `delay_seconds`: step 1 is due that long after now (a reply rule's re-engagement); whether it leaves then is
    the final check's to decide, like any step. `extra`: more words for the enrollment's event.
    """
    with transaction.atomic():
        sequence = Sequence.objects.select_related("mailbox").get(pk=sequence_id)
        contact = Contact.objects.get(pk=contact_id)
        if contact.workspace_id != sequence.workspace_id:
            raise ServiceError(f"{contact.email} is a contact of another workspace than {sequence.name!r}")
        blocked = suppression_active_for(contact.email, workspace_id=sequence.workspace_id)
        if blocked is not None:
            raise ServiceError(f"{contact.email} is suppressed ({blocked.reason}, {blocked.value})")
        if address_erased(contact.email, contact.workspace_id):
            raise ServiceError(ERASED)
        if contact.timezone and zone_problem(contact.timezone):
            raise ServiceError(f"{contact.email}: timezone: {zone_problem(contact.timezone)}")
        if not sequence.steps.exists():
            raise ServiceError(f"sequence {sequence.name!r} has no steps")
        if Enrollment.objects.filter(sequence=sequence, contact=contact).exists():
            raise ServiceError(f"{contact.email} is already enrolled in {sequence.name!r}")
        (mailbox,) = mailboxes_choose(sequence, count=1, now=db_now())
        enrollment = Enrollment.objects.create(sequence=sequence, contact=contact, mailbox=mailbox)
        enrollment = Enrollment.objects.select_related("contact", "mailbox", "sequence__mailbox").get(pk=enrollment.pk)
        event_record(kind=Event.ENROLLED, email=contact.email, enrollment=enrollment, version_seen=1,
                     sequence=sequence.name, actor=actor, mailbox=mailbox.name, **(extra or {}))
        if delay_seconds:
            first = sequence.steps.order_by("position").first()
            schedule_step(enrollment, step=first,
                          at=db_now() + timedelta(seconds=delay_seconds + first.wait_seconds), reason=Reason.ENROLLED)
        else:
            schedule_next(enrollment, reason=Reason.ENROLLED)
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
    suppressed: int = 0  # rejected rows whose address (or domain) is suppressed
    already_enrolled: int = 0  # rejected rows already in the sequence
    missing_values: int = 0  # rejected rows lacking a value a step uses without a fallback
    enrollment_ids: dict[str, int] = dataclass_field(default_factory=dict)  # address -> its new enrollment's id
    refused: list[tuple[int, Refusal]] = dataclass_field(default_factory=list)  # (line, why): `rejected` by kind


CONTACT_FIELDS = ("first_name", "last_name", "company", "timezone")


def _suppressed(emails: list[str], workspace_id: int) -> dict[str, Suppression]:
    """The entry suppressing each address (its own or its domain's) for a workspace, as suppression_active_for
    decides (the workspace's part of the ledger and the agency's), in one read."""
    values = set(emails) | {"@" + e.rsplit("@", 1)[-1] for e in emails}
    latest: dict[tuple[str, int | None], Suppression] = {}
    for entry in (Suppression._base_manager.filter(Q(workspace_id=workspace_id) | Q(workspace__isnull=True),
                                                   value__in=values).order_by("id")):
        latest[entry.value, entry.workspace_id] = entry
    out = {}
    for email in emails:
        for value in (email, "@" + email.rsplit("@", 1)[-1]):
            entry = next((e for part in (workspace_id, None) if (e := latest.get((value, part))) is not None
                          and e.action == Suppression.Action.ADD), None)
            if entry is not None:
                out[email] = entry
                break
    return out


@dataclass(frozen=True)
class Refusal:
    """Why a row is not enrolled although it is valid: its address is suppressed, or already in the sequence."""

    SUPPRESSED = "suppressed"
    ERASED = "erased"  # counted with the suppressed: never mailed again
    ALREADY_ENROLLED = "already_enrolled"
    TIMEZONE = "timezone"
    MISSING_VALUE = "missing_value"  # a step would fail for lack of a value (unless the import allows it)

    kind: str
    reason: str


ROWS_SHOWN = 200  # rows listed under each count of an import (the counts are always whole)


@dataclass
class EnrollCounts:
    """What one import's rows come to, each row counted once under one outcome: the counts its dry run, the
    progress and result of its run, the operator log and the `enroll` command show, so none can disagree.

    `rejected`: rows that cannot be enrolled as they are (an invalid or duplicated row, a refused time zone or
    domain, a value a step needs); `already`: people in the sequence already, left as they are (a file enrolled
    again is not an error); `suppressed`: suppressed or erased addresses, never enrolled. `flagged` notes rows
    that are enrolled all the same (a role account, a value a step lacks when the import allows it); `missing`
    counts the rows lacking a value a step needs, rejected or (allowed) enrolled.
    """

    enrolled: int = 0
    rejected: list[tuple[int, str]] = dataclass_field(default_factory=list)  # (line, reason)
    already: list[tuple[int, str]] = dataclass_field(default_factory=list)
    suppressed: list[tuple[int, str]] = dataclass_field(default_factory=list)
    flagged: list[tuple[int, str]] = dataclass_field(default_factory=list)
    missing: int = 0

    @property
    def rows(self) -> int:
        return self.enrolled + len(self.rejected) + len(self.already) + len(self.suppressed)

    def refuse(self, line: int, refusal: Refusal) -> None:
        if refusal.kind in (Refusal.SUPPRESSED, Refusal.ERASED):
            self.suppressed.append((line, refusal.reason))
        elif refusal.kind == Refusal.ALREADY_ENROLLED:
            self.already.append((line, refusal.reason))
        else:
            self.rejected.append((line, refusal.reason))
            self.missing += refusal.kind == Refusal.MISSING_VALUE

    def add(self, result: BatchResult) -> None:
        """A batch's outcome (`enrollments_create_batch`): its enrolled rows, and its refusals by kind."""
        self.enrolled += result.enrolled
        for line, refusal in result.refused:
            self.refuse(line, refusal)

    def words(self, *, dry_run: bool = False) -> str:
        """The four counts in words, as the command prints them: '35 enrolled, 5 rejected, 2 already enrolled,
        1 suppressed (43 rows)'; with `dry_run`, '35 would be enrolled, …'."""
        rows = self.rows
        return (f"{self.enrolled} {'would be ' if dry_run else ''}enrolled, {len(self.rejected)} rejected, "
                f"{len(self.already)} already enrolled, {len(self.suppressed)} suppressed "
                f"({rows} row{'s' if rows != 1 else ''})")

    def shown(self, limit: int = ROWS_SHOWN) -> dict[str, Any]:
        """The counts and the first `limit` rows of each kind, in line order, as plain data (a page's context, the
        stored result of a background run)."""
        out: dict[str, Any] = {"rows": self.rows, "enrolled": self.enrolled, "n_missing": self.missing}
        for kind in ("rejected", "already", "suppressed", "flagged"):
            listed = sorted(getattr(self, kind))
            out[f"n_{kind}"], out[kind] = len(listed), [list(row) for row in listed[:limit]]
        return out

    def plain(self) -> dict[str, Any]:
        """Every row of each kind (`from_plain` reads it back): what a background run is given."""
        return {"rejected": self.rejected, "already": self.already, "suppressed": self.suppressed,
                "flagged": self.flagged, "missing": self.missing}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> EnrollCounts:
        rows = {kind: [(int(line), str(reason)) for line, reason in data.get(kind, [])]
                for kind in ("rejected", "already", "suppressed", "flagged")}
        return cls(missing=int(data.get("missing", 0)), **rows)


def enrollments_dry_run_counts(*, sequence_id: int, rows: list[ContactRow],
                               rejected: list[tuple[int, str]] | None = None,
                               flagged: list[tuple[int, str]] | None = None, allow_missing: bool = False,
                               update_contacts: bool = False) -> tuple[EnrollCounts, list[ContactRow]]:
    """What enrolling these checked rows would do, counted as the run counts it, and the rows it would enroll;
    reads only. `rejected`, `flagged`: what the file's own checks found before (invalid rows, address notes).

    A row lacking a value a step needs is rejected, or with `allow_missing` enrolled with a note (that person
    gets the steps before it, then stops there, failed)."""
    counts = EnrollCounts(rejected=list(rejected or []), flagged=list(flagged or []))
    refused = enrollments_dry_run(sequence_id=sequence_id, rows=rows, update_contacts=update_contacts)
    kept = []
    for row in rows:
        refusal = refused.get(row.email)
        if refusal is not None and refusal.kind == Refusal.MISSING_VALUE and allow_missing:
            counts.missing += 1
            counts.flagged.append((row.line, f"{refusal.reason}; enrolled anyway: stops at that step, failed"))
            refusal = None
        if refusal is None:
            counts.enrolled += 1
            kept.append(row)
        else:
            counts.refuse(row.line, refusal)
    return counts, kept


class StepNeeds:
    """Which value a row lacks that some step of the sequence uses without a fallback, found by rendering every
    step's subject and body for the contact the row makes (as preparation will): '' when none.

    Rendered once per pattern of filled-in variables (a file's rows share a few), so a large import renders
    its steps a few times, not once per row; a template that branches on a value's content rather than on its
    presence is judged by the first row of its pattern.
    """

    def __init__(self, sequence: Sequence, *, texts: list[tuple[int, str, str]] | None = None):
        """`texts`: (position, subject, body) to judge instead of the saved steps (a step's text before it is
        saved, `people_lacking`)."""
        if texts is not None:
            self.steps = list(texts)
        else:
            # A step's running A/B variants are rendered too (a step with variants sends theirs, not its own).
            self.steps = list(sequence.steps.order_by("position").values_list("position", "subject", "body"))
            self.steps += list(StepVariant.objects.filter(step__sequence=sequence, stopped_at__isnull=True)
                               .order_by("step__position", "id").values_list("step__position", "subject", "body"))
        self.seen: dict[frozenset[str], str] = {}
        self.sequence = sequence

    def missing(self, contact: Contact) -> str:
        try:
            context = contact_context(contact, self.sequence)
        except PrepareError:
            return ""  # not a missing value: preparation says what it is
        pattern = frozenset(k for k, v in context.items() if v not in (None, "") and not (isinstance(v, str)
                                                                                          and not v.strip()))
        if pattern not in self.seen:
            self.seen[pattern] = self._first_missing(context)
        return self.seen[pattern]

    def _first_missing(self, context: dict) -> str:
        for position, subject, body in self.steps:
            for text in (subject, body):
                try:
                    render(text, context)
                except MissingValue as exc:
                    return f"no value for {exc.name}, used by step {position} without a fallback"
                except (PrepareError, TemplateSyntaxError):
                    continue  # another failure: preparation reports it with its reason
        return ""


def people_lacking(*, sequence: Sequence, position: int, subject: str, body: str) -> tuple[int, int, str]:
    """For a step's text before it is saved: (people still to get step `position` who lack a value it uses
    without a fallback, people still to get it, the first such lack in words). Reads only."""
    needs = StepNeeds(sequence, texts=[(position, subject, body)])
    waiting = (Contact.objects.filter(enrollments__sequence=sequence,
                                      enrollments__status__in=(Enrollment.Status.ACTIVE, Enrollment.Status.PAUSED))
               .exclude(enrollments__jobs__in=SendJob.objects.filter(
                   LEFT, enrollment__sequence=sequence, step__position__gte=position)))
    lacking, total, words = 0, 0, ""
    for contact in waiting.iterator(chunk_size=2000):
        total += 1
        if missing := needs.missing(contact):
            lacking += 1
            words = words or missing
    return lacking, total, words


def _row_contact(row: ContactRow, contact: Contact | None, *, update_contacts: bool) -> Contact:
    """The contact a row leaves behind: a new one from the row, an existing one as it is, or changed by the row."""
    if contact is None:
        return Contact(email=row.email, first_name=row.first_name, last_name=row.last_name, company=row.company,
                       timezone=row.timezone_name, fields=row.fields)
    if not update_contacts:
        return contact
    merged = Contact(email=contact.email, first_name=contact.first_name, last_name=contact.last_name,
                     company=contact.company, timezone=contact.timezone, fields=contact.fields)
    for name, value in _changes(contact, row).items():
        setattr(merged, name, value)
    return merged


def _enrolled(sequence: Sequence, existing: dict[str, Contact]) -> set[str]:
    """Which of the contacts (by address) are already in the sequence: one read of the (sequence, contact) unique
    index by contact id, none when no row names an existing contact (a new address is in no sequence yet).

    Not a join on the addresses: PostgreSQL runs a statement repeated with the same number of parameters (every
    full batch) on a generic plan, which for that join walked every enrollment of the sequence and compared each
    with the whole list of addresses, so each batch of a big import took longer than the one before.
    """
    if not existing:
        return set()
    email_of = {contact.pk: email for email, contact in existing.items()}
    found = (Enrollment.objects.filter(sequence=sequence, contact_id__in=list(email_of)).order_by()
             .values_list("contact_id", flat=True))
    return {email_of[contact_id] for contact_id in found}


def _refusals(sequence: Sequence, rows: list[ContactRow], *, update_contacts: bool = False,
              existing: dict[str, Contact] | None = None, allow_missing: bool = False,
              needs: StepNeeds | None = None) -> dict[str, Refusal]:
    """The rows the batch refuses, by address: the one rule for enrolling and for a dry run. A row that lacks a
    value a step needs is refused unless `allow_missing` (that person would stop at that step, "failed")."""
    emails = [row.email for row in rows]
    suppressed = _suppressed(emails, sequence.workspace_id)
    erased = addresses_erased(emails, sequence.workspace_id)
    if existing is None:
        existing = {c.email: c for c in Contact.objects.filter(workspace_id=sequence.workspace_id, email__in=emails)}
    enrolled = _enrolled(sequence, existing)
    refused = {}
    for row in rows:
        email, blocked = row.email, suppressed.get(row.email)
        zone = _zone_refused(row, existing.get(email), update_contacts=update_contacts)
        if email in erased:
            refused[email] = Refusal(Refusal.ERASED, ERASED)
        elif blocked is not None:
            refused[email] = Refusal(Refusal.SUPPRESSED, f"{email} is suppressed ({blocked.reason}, {blocked.value})")
        elif email in enrolled:
            refused[email] = Refusal(Refusal.ALREADY_ENROLLED, f"{email} is already enrolled in {sequence.name!r}")
        elif zone:
            refused[email] = Refusal(Refusal.TIMEZONE, f"{email}: timezone: {zone}")
        elif not allow_missing:
            needs = needs or StepNeeds(sequence)
            lacking = needs.missing(_row_contact(row, existing.get(email), update_contacts=update_contacts))
            if lacking:
                refused[email] = Refusal(Refusal.MISSING_VALUE, f"{email}: {lacking}")
    return refused


def enrollments_dry_run(*, sequence_id: int, rows: list[ContactRow], allow_missing: bool = False,
                        update_contacts: bool = False) -> dict[str, Refusal]:
    """What enrollments_create_batch would refuse, without writing anything (reads only)."""
    sequence = Sequence.objects.get(pk=sequence_id)
    needs = StepNeeds(sequence)
    refused: dict[str, Refusal] = {}
    for start in range(0, len(rows), 5000):
        refused |= _refusals(sequence, rows[start:start + 5000], allow_missing=allow_missing, needs=needs,
                             update_contacts=update_contacts)
    return refused


def _changes(contact: Contact, row: ContactRow) -> dict[str, Any]:
    """What the row would change on an existing contact: its non-empty values that differ."""
    wanted = {"first_name": row.first_name, "last_name": row.last_name, "company": row.company,
              "timezone": row.timezone_name}
    changes: dict[str, Any] = {k: v for k, v in wanted.items() if v and getattr(contact, k) != v}
    merged = {**contact.fields, **{k: v for k, v in row.fields.items() if v}}
    if merged != contact.fields:
        changes["fields"] = merged
    return changes


def _zone_refused(row: ContactRow, contact: Contact | None, *, update_contacts: bool) -> str:
    """Why a row's time zone, or the zone its existing contact keeps, is refused ('' when both are fine)."""
    if row.timezone_name and zone_problem(row.timezone_name):
        return zone_problem(row.timezone_name)
    keeps = contact is not None and not (update_contacts and row.timezone_name)
    if keeps and contact.timezone and zone_problem(contact.timezone):
        return f"the contact's time zone: {zone_problem(contact.timezone)}"
    return ""


def enrollments_create_batch(*, sequence_id: int, rows: list[ContactRow], update_contacts: bool = False,
                             actor: str = "", allow_missing: bool = False) -> BatchResult:
    """Enroll many contacts and schedule each one's step 1; one transaction for the batch.

    Writes what contact_upsert + enrollment_create write for each accepted row
    (the contact, the enrollment, its step-1 job, and the `enrolled` and
    `job_scheduled` events), with one bulk INSERT per table instead of one per
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
        existing = {c.email: c for c in Contact.objects.filter(workspace_id=sequence.workspace_id, email__in=emails)}
        refused = _refusals(sequence, rows, update_contacts=update_contacts, existing=existing,
                            allow_missing=allow_missing)
        accepted: list[ContactRow] = []
        for row in rows:
            refusal = refused.get(row.email)
            if refusal is None:
                accepted.append(row)
                continue
            result.rejected.append((row.line, refusal.reason))
            result.refused.append((row.line, refusal))
            if refusal.kind in (Refusal.SUPPRESSED, Refusal.ERASED):
                result.suppressed += 1
            elif refusal.kind == Refusal.ALREADY_ENROLLED:
                result.already_enrolled += 1
            elif refusal.kind == Refusal.MISSING_VALUE:
                result.missing_values += 1

        new_rows = [r for r in accepted if r.email not in existing]
        created = rows_copied([
            Contact(workspace_id=sequence.workspace_id, email=r.email, first_name=r.first_name,
                    last_name=r.last_name, company=r.company,
                    timezone=r.timezone_name, fields=r.fields) for r in new_rows])
        result.contacts_created = len(created)
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

        contacts = {c.email: c for c in created} | existing
        # Each keeps the mailbox chosen here for its whole life (services.rotation).
        mailboxes = mailboxes_choose(sequence, count=len(accepted), now=db_now())
        enrollments = rows_copied([
            Enrollment(sequence_id=sequence.pk, contact_id=contacts[r.email].pk, mailbox_id=m.pk)
            for r, m in zip(accepted, mailboxes, strict=True)])
        # Step 1 of a new enrollment, as schedule_next creates it: nothing sent yet, due after its wait.
        scheduled_at = db_now() + timedelta(seconds=step.wait_seconds)
        variants = running_variants(step.pk)  # step 1's A/B variants, each person given one (sequences.variants)
        jobs = rows_copied([
            SendJob(enrollment_id=e.pk, step_id=step.pk, state=SendJob.State.SCHEDULED, scheduled_at=scheduled_at,
                    variant_id=variant_pick(variants, enrollment_id=e.pk, step_id=step.pk) if variants else None,
                    message_id=new_message_id(m)) for e, m in zip(enrollments, mailboxes, strict=True)])
        events = []
        for row, enrollment, job, mailbox in zip(accepted, enrollments, jobs, mailboxes, strict=True):
            # The same events, with the same data, as enrollment_create writes.
            events.append(TimelineEvent(kind=Event.ENROLLED, email=row.email, enrollment_id=enrollment.pk,
                                        version_seen=1, data={"sequence": sequence.name, "actor": actor,
                                                              "mailbox": mailbox.name}))
            events.append(TimelineEvent(kind=Event.JOB_SCHEDULED, email=row.email, enrollment_id=enrollment.pk,
                                        job_id=job.pk, version_seen=1, data={"step": step.position,
                                                                             "scheduled_at": scheduled_at.isoformat(),
                                                                             "reason": "enrolled"}))
        events_record_many(events)
        result.enrolled = len(accepted)
        result.enrollment_ids = {row.email: e.pk for row, e in zip(accepted, enrollments, strict=True)}
    return result


def enrollments_create_many(*, sequence_id: int, rows: list[ContactRow], actor: str = "", batch_size: int = 1000,
                            progress=None, allow_missing: bool = False, source: str = "",
                            counts: EnrollCounts | None = None) -> BatchResult:
    """enrollments_create_batch over many rows, one transaction per batch; `progress(enrolled, len(rows))` after
    each (the rows are those the dry run would enroll: the bar ends full unless something changed since).

    `counts`: the rows the import refused before these (its dry run's), to which each batch's outcome is added.
    One operator-log row says what the import did (`source`: the file), with the same counts, also when it
    stopped part-way: the batches before the failure stay enrolled."""
    counts = counts if counts is not None else EnrollCounts()
    total = BatchResult()
    done = 0
    try:
        for start in range(0, len(rows), batch_size):
            result = enrollments_create_batch(sequence_id=sequence_id, rows=rows[start:start + batch_size],
                                              actor=actor, allow_missing=allow_missing)
            counts.add(result)
            total.enrolled += result.enrolled
            total.rejected += result.rejected
            total.refused += result.refused
            total.contacts_created += result.contacts_created
            total.contacts_kept += result.contacts_kept
            total.suppressed += result.suppressed
            total.already_enrolled += result.already_enrolled
            total.missing_values += result.missing_values
            done = min(start + batch_size, len(rows))
            if progress is not None:
                progress(total.enrolled, len(rows))
    except Exception as exc:
        _import_log(sequence_id, actor, source, counts, failed=f"stopped after {done} of {len(rows)} rows, "
                                                               f"{total.enrolled} of them enrolled: {str(exc)[:300]}")
        raise
    _import_log(sequence_id, actor, source, counts)
    return total


def _import_log(sequence_id: int, actor: str, source: str, counts: EnrollCounts, failed: str = "") -> None:
    name = Sequence.objects.filter(pk=sequence_id).values_list("name", flat=True).first() or str(sequence_id)
    result: dict[str, Any] = {"file": source} if source else {}
    result |= {"enrolled": counts.enrolled, "rejected": len(counts.rejected), "suppressed": len(counts.suppressed),
               "already enrolled": len(counts.already)}
    if failed:
        result["failed"] = failed
    operator_log(actor=actor, action="enrollment_import", target=f"sequence {name}", kind=T.SEQUENCE,
                 target_id=sequence_id, result=result)
