"""The suppression ledger: add (and stop the person everywhere), lift with a justification, import a file.

The ledger is append-only: the latest entry for a value decides. Adding locks
every enrollment of the address (or of the whole @domain) first, then stops
them through the one stop path, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet

from sequences.stop_summary import StopSummary
from workspaces.scoping import workspace_scope

from ..locks import enrollments_lock
from ..models import GIVEN_REASONS, Enrollment, GuardrailSignal, Suppression
from ..selectors import CURRENT, in_part, ledger_part, ledger_parts_lifted, suppression_key, suppression_latest
from ..storable import unstorable
from ..timeline import Event, event_record
from .common import ServiceError, T, operator_log
from .guardrails import guardrail_record
from .stops import enrollment_stop_locked

E = Enrollment.Status
# The suppressions the deliverability guardrail counts against the mailbox that sent to the address.
GUARDRAIL_KINDS = {Suppression.Reason.HARD_BOUNCE: GuardrailSignal.Kind.HARD_BOUNCE,
                   Suppression.Reason.COMPLAINT: GuardrailSignal.Kind.COMPLAINT}

# The stop reason an enrollment gets when its address is suppressed for a reason.
STOP_REASON_FOR_SUPPRESSION = {
    Suppression.Reason.UNSUBSCRIBE: Enrollment.StopReason.UNSUBSCRIBED,
    Suppression.Reason.COMPLAINT: Enrollment.StopReason.COMPLAINED,
    Suppression.Reason.HARD_BOUNCE: Enrollment.StopReason.HARD_BOUNCE,
    Suppression.Reason.SOFT_BOUNCES: Enrollment.StopReason.SUPPRESSED,
    Suppression.Reason.MANUAL: Enrollment.StopReason.SUPPRESSED,
    Suppression.Reason.POSSIBLE_OPTOUT: Enrollment.StopReason.SUPPRESSED,
}

SUPPRESSION_WORDS = {
    Suppression.Reason.UNSUBSCRIBE: "unsubscribed",
    Suppression.Reason.COMPLAINT: "complained (marked a message as spam)",
    Suppression.Reason.HARD_BOUNCE: "hard-bounced (the address does not exist)",
    Suppression.Reason.SOFT_BOUNCES: "bounced softly too often",
    Suppression.Reason.MANUAL: "was suppressed by an operator",
    Suppression.Reason.POSSIBLE_OPTOUT: "may have asked to stop (held until an operator reviews the reply)",
}


def suppression_add(
    *, value: str, reason: str, note: str = "", source: str = "", actor: str = "",
    workspace_id: int | None | object = CURRENT,
) -> tuple[Suppression, StopSummary]:
    """Suppress an address or @domain and stop its enrollments; durable transaction. In the ledger's part of
    `workspace_id` (by default the request's workspace; None: the agency's, "everywhere", which holds and stops the
    person in every workspace; sequences.selectors).

    Idempotent: an address already suppressed gets no second entry, but any
    enrollment of it still active is stopped. A person gives one of GIVEN_REASONS (a provisional opt-out is
    ingestion's, in its own transaction).
    """
    if reason not in GIVEN_REASONS:
        raise ServiceError(f"unknown suppression reason {reason!r} (use {', '.join(GIVEN_REASONS)})")
    with transaction.atomic(durable=True):
        return suppression_add_in_transaction(value=value, reason=reason, note=note, source=source, actor=actor,
                                              workspace_id=workspace_id)


def suppression_add_in_transaction(
    *, value: str, reason: str, note: str = "", source: str = "", actor: str = "",
    workspace_id: int | None | object = CURRENT,
) -> tuple[Suppression, StopSummary]:
    """As suppression_add, inside the caller's transaction (e.g. with an inbound ledger row)."""
    value, is_domain = suppression_key(value)
    _validate_suppression_value(value, is_domain, note=note, source=source)
    if reason not in Suppression.Reason.values:
        raise ServiceError(f"unknown suppression reason {reason!r} (use {', '.join(Suppression.Reason.values)})")
    part = ledger_part(workspace_id)
    enrollments = enrollments_lock(held_by(value, is_domain=is_domain, part=part))
    latest = suppression_latest(value, workspace_id=part)
    if latest is not None and latest.action == Suppression.Action.ADD:
        entry = latest
    else:
        entry = Suppression.objects.create(workspace_id=part, value=value, is_domain=is_domain,
                                           action=Suppression.Action.ADD,
                                           reason=reason, note=note, source=source, actor=actor)
        event_record(kind=Event.SUPPRESSION_ADDED, email=value, workspace_id=part, value=value, reason=reason,
                     source=source, actor=actor, entry=entry.pk)
        if reason in GUARDRAIL_KINDS and not is_domain:
            # Counted against the mailbox of the workspace that sent to it: never another client's.
            with workspace_scope(part, with_unowned=True) if part is not None else nullcontext():
                guardrail_record(email=value, kind=GUARDRAIL_KINDS[reason])
    summary = StopSummary()
    stop_reason = STOP_REASON_FOR_SUPPRESSION[entry.reason]
    because = f"{value} {SUPPRESSION_WORDS[entry.reason]}" + (f" ({source})" if source else "")
    for enrollment in enrollments:
        summary.add(enrollment_stop_locked(enrollment, reason=stop_reason, actor=actor, source=source or "suppression",
                                           because=because))
    operator_log(actor=actor, action="suppression_add", target=value, kind=T.SUPPRESSION,
                 result=summary.as_dict() | {"entry": entry.pk, "reason": entry.reason})
    return entry, summary


def held_by(value: str, *, is_domain: bool, part: int | None) -> QuerySet[Enrollment]:
    """The enrollments not stopped that an entry of `value` in the ledger's part holds: the workspace's, or for
    the agency's part every workspace's (read past the request's scope)."""
    found = Enrollment._base_manager.filter(contact__email__iendswith=value) if is_domain else (
        Enrollment._base_manager.filter(contact__email=value))
    if part is not None:
        found = found.filter(sequence__workspace_id=part)
    return found.exclude(status=E.STOPPED)


def suppression_lift(*, value: str, note: str, actor: str = "", source: str = "",
                     workspace_id: int | None | object = CURRENT) -> Suppression:
    """Lift a suppression with a justification: a new ledger entry in the same part, history stays."""
    value, is_domain = suppression_key(value)
    _validate_suppression_value(value, is_domain, note=note, source=source)
    if not note.strip():
        raise ServiceError("lifting a suppression needs a justification (note)")
    with transaction.atomic(durable=True):
        part, latest = _deciding(value, workspace_id, lambda entry: entry.action == Suppression.Action.ADD)
        if latest is None or latest.action != Suppression.Action.ADD:
            raise ServiceError(f"{value} is not suppressed" + ("" if part is None else " in this workspace"))
        entry = Suppression.objects.create(workspace_id=part,
            value=value, is_domain=is_domain, action=Suppression.Action.LIFT, note=note.strip(), source=source,
            actor=actor,
        )
        event_record(kind=Event.SUPPRESSION_LIFTED, email=value, workspace_id=part, value=value, note=note,
                     actor=actor, entry=entry.pk)
        operator_log(actor=actor, action="suppression_lift", target=value, kind=T.SUPPRESSION,
                     result={"entry": entry.pk, "lifted": latest.pk})
        return entry


def optout_review(*, value: str, confirm: bool, actor: str, note: str = "",
                  workspace_id: int | None | object = CURRENT) -> tuple[Suppression, Suppression]:
    """An operator's decision on a provisional opt-out (reason POSSIBLE_OPTOUT): confirm it (a new UNSUBSCRIBE
    entry: the webhook says the person unsubscribed) or lift it (sending to the address is allowed again).
    Refused when the address's latest entry is not a provisional opt-out (decided already, or never one).
    Returns the new entry and the provisional one it decides."""
    value, _ = suppression_key(value)
    with transaction.atomic(durable=True):
        part, latest = _deciding(value, workspace_id, lambda entry: entry.action == Suppression.Action.ADD and (
            entry.reason == Suppression.Reason.POSSIBLE_OPTOUT))
        provisional = latest is not None and latest.action == Suppression.Action.ADD and (
            latest.reason == Suppression.Reason.POSSIBLE_OPTOUT)
        if not provisional:
            raise ServiceError(f"{value} has no opt-out waiting for review (decided already?)")
        words = note.strip()
        if confirm:
            entry = Suppression.objects.create(workspace_id=part,
                value=value, action=Suppression.Action.ADD, reason=Suppression.Reason.UNSUBSCRIBE, source="review",
                actor=actor, note=words or f"opt-out confirmed after review of {latest.source or 'the reply'}")
            event_record(kind=Event.SUPPRESSION_ADDED, email=value, workspace_id=part, value=value, reason=entry.reason,
                         source="review", actor=actor, entry=entry.pk)
        else:
            entry = Suppression.objects.create(workspace_id=part,
                value=value, action=Suppression.Action.LIFT, source="review", actor=actor,
                note=words or f"not an opt-out: lifted after review of {latest.source or 'the reply'}")
            event_record(kind=Event.SUPPRESSION_LIFTED, email=value, workspace_id=part, value=value,
                         note=entry.note, actor=actor, entry=entry.pk)
        operator_log(actor=actor, action="optout_confirm" if confirm else "optout_lift", target=value,
                     kind=T.SUPPRESSION, result={"entry": entry.pk, "provisional": latest.pk, "note": entry.note})
        return entry, latest


def _deciding(value: str, workspace_id, wanted) -> tuple[int | None, Suppression | None]:
    """The ledger's part and its latest entry (locked) that a lift or a review decides: the first part whose latest
    entry is `wanted`, else the first part's latest."""
    found = []
    for part in ledger_parts_lifted(workspace_id):
        latest = (Suppression._base_manager.select_for_update().filter(in_part(part), value=value).order_by("-id")
                  .first())
        if latest is not None and wanted(latest):
            return part, latest
        found.append((part, latest))
    return found[0]


def _validate_suppression_value(value: str, is_domain: bool, **texts: str) -> None:
    """The value is an address or an @domain; each of `texts` (note, source) can be stored."""
    for name, text in texts.items():
        if unstorable(text):
            raise ServiceError(f"the {name} holds a NUL character or a lone surrogate, which nothing can store")
    try:
        validate_email(("x" + value) if is_domain else value)
    except ValidationError:
        raise ServiceError(f"{value!r} is neither an email address nor an @domain") from None


@dataclass
class ImportRow:
    line: int
    value: str
    reason: str
    note: str


def suppression_import(
    *, rows: list[ImportRow], actor: str, source: str, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Suppress each row of a file through `suppression_add` (one durable transaction per row).

    A row that fails does not stop the others; its error is reported with its line.
    """
    added = already = 0
    stopped = canceled = submitted = 0
    errors: list[dict[str, Any]] = []
    for i, row in enumerate(rows, 1):
        before = suppression_latest(suppression_key(row.value)[0])
        try:
            entry, summary = suppression_add(
                value=row.value, reason=row.reason, note=row.note, source=f"{source} line {row.line}", actor=actor
            )
        except ServiceError as exc:
            errors.append({"line": row.line, "value": row.value, "error": str(exc)})
        else:
            if before is not None and before.pk == entry.pk:
                already += 1
            else:
                added += 1
            stopped += summary.enrollments
            canceled += summary.canceled
            submitted += summary.submitted + summary.in_flight
        if progress and (i % 25 == 0 or i == len(rows)):
            progress(i, len(rows))
    return {"total": len(rows), "added": added, "already": already, "errors": errors,
            "enrollments_stopped": stopped, "jobs_canceled": canceled, "jobs_cannot_recall": submitted}
