"""What an operator does from a contact's page: change its details, enroll it in a sequence, suppress it.

Thin: the values are checked by the import's rules (`contact_rows.row_check`, and the import's check of the values
the steps need, `services.enrollments.StepNeeds`), then one service each (`services.contacts`,
`services.suppressions`), every change in the operator log. Operators (and admins) edit
and enroll; suppressing needs the ledger's permission (admins), as everywhere else; staff read.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Max
from django.shortcuts import get_object_or_404, redirect, render

from sequences.contact_rows import NAMED, row_check
from sequences.labels import stop_summary_sentences
from sequences.models import Contact, Enrollment, SendJob, Sequence, Suppression
from sequences.permissions import MANAGE_SUPPRESSIONS, OPERATE
from sequences.services.common import ServiceError
from sequences.services.contacts import contact_edit, contact_enroll
from sequences.services.enrollments import ContactRow, StepNeeds
from sequences.services.suppressions import suppression_add
from sequences.states import LEFT
from sequences.storable import row_id

from .access import ui_view

NEW = "new_field"  # the form's blank pair for one more template field


def _cells(data, contact: Contact) -> tuple[dict[str, str], str]:
    """The form as an import row (the address stays the contact's), or why it cannot be one."""
    cells = {"email": contact.email}
    for name in ("first_name", "last_name", "company", "timezone"):
        if name not in data:
            return cells, "the form came incomplete; open it again"
        cells[name] = data[name].strip()
    for key, value in data.items():
        if key.startswith("field:") and value.strip():
            cells[key.removeprefix("field:")] = value.strip()
    name, value = data.get(f"{NEW}_name", "").strip().lower(), data.get(f"{NEW}_value", "").strip()
    if name or value:
        if not (name and value):
            return cells, "a new field needs a name and a value"
        if name in NAMED:
            return cells, f"{name!r} is one of the contact's own details, not a template field"
        cells[name] = value
    return cells, ""


def _needed_value_removed(contact: Contact, row: ContactRow) -> str:
    """Why the edit may not be saved: it takes away a value that a step still to come of one of the person's
    active or paused enrollments uses without a fallback (that step would fail), by the import's own check
    (`StepNeeds`, every running A/B variant included); '' when it takes none. A value the contact already lacked
    is not the edit's doing and does not refuse it."""
    after = Contact(email=contact.email, first_name=row.first_name, last_name=row.last_name, company=row.company,
                    timezone=row.timezone_name, fields=dict(row.fields))
    enrollments = (contact.enrollments.filter(status__in=(Enrollment.Status.ACTIVE, Enrollment.Status.PAUSED))
                   .select_related("sequence").order_by("pk"))
    for enrollment in enrollments:
        sent = (SendJob.objects.filter(LEFT, enrollment=enrollment)
                .aggregate(last=Max("step__position"))["last"] or 0)
        for position, subject, body in StepNeeds(enrollment.sequence).steps:
            if position <= sent:
                continue  # already sent: what it said is kept
            needs = StepNeeds(enrollment.sequence, texts=[(position, subject, body)])
            if (lacking := needs.missing(after)) and not needs.missing(contact):
                return (f"{contact.email} is still to get step {position} of “{enrollment.sequence.name}”, "
                        f"which needs this value: {lacking}. Keep the value, or give the step's template a "
                        'fallback (…|default:"…")')
    return ""


@ui_view(OPERATE, methods=("GET", "POST"))
def contact_edit_page(request, pk: int):
    contact = get_object_or_404(Contact, pk=pk)
    error, values = "", None
    if request.method == "POST":
        cells, error = _cells(request.POST, contact)
        row = None
        if not error:
            row, error = row_check(0, cells, extra=False)
        if row is not None and (error := _needed_value_removed(contact, row)):
            row = None
        if row is not None:
            changed = contact_edit(contact_id=pk, row=row, actor=request.user.get_username())
            messages.success(request, f"Saved: {', '.join(c.replace('_', ' ') for c in changed)}." if changed
                             else "Nothing changed.")
            return redirect("contact_detail", pk=pk)
        values = cells
    shown = values or {"first_name": contact.first_name, "last_name": contact.last_name,
                       "company": contact.company, "timezone": contact.timezone, **(contact.fields or {})}
    fields = sorted((k, v) for k, v in shown.items() if k not in NAMED)
    return render(request, "ui/contact_edit.html", {"contact": contact, "values": shown, "fields": fields,
                                                    "error": error}, status=400 if error else 200)


@ui_view(OPERATE, methods=("POST",))
def contact_enroll_action(request, pk: int):
    contact = get_object_or_404(Contact, pk=pk)
    sequence_id = row_id(request.POST.get("sequence"))
    sequence = Sequence.objects.filter(pk=sequence_id).first() if sequence_id is not None else None
    if sequence is None:
        messages.error(request, "Choose a sequence to enroll in.")
        return redirect("contact_detail", pk=pk)
    try:
        enrollment = contact_enroll(contact_id=pk, sequence_id=sequence.pk, actor=request.user.get_username())
    except ServiceError as exc:
        messages.error(request, f"Not enrolled in {sequence.name}: {exc}")
        return redirect("contact_detail", pk=pk)
    messages.success(request, f"Enrolled {contact.email} in {sequence.name}: step 1 is scheduled, and is checked "
                              "before it leaves.")
    return redirect("enrollment_detail", pk=enrollment.pk)


@ui_view(MANAGE_SUPPRESSIONS, methods=("POST",))
def contact_suppress(request, pk: int):
    contact = get_object_or_404(Contact, pk=pk)
    reason = request.POST.get("reason", Suppression.Reason.MANUAL)
    try:
        entry, summary = suppression_add(value=contact.email, reason=reason, note=request.POST.get("note", "")[:2000],
                                         source="operator", actor=request.user.get_username())
    except ServiceError as exc:
        messages.error(request, f"Not suppressed: {exc}")
    else:
        said = stop_summary_sentences(canceled=summary.canceled, in_flight=summary.in_flight,
                                      submitted=summary.submitted, before="the suppression") if summary.changed else []
        messages.success(request, " ".join([f"{entry.value} is suppressed ({entry.get_reason_display()}): nothing "
                                            "more is sent to it.", *said]))
    return redirect("contact_detail", pk=pk)
