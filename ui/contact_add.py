"""Add one contact in the browser, and enroll it in a sequence at once if the operator picks one.

Thin: the form becomes an import row checked by the import's rules (`contact_rows.row_check`), then one service
(`services.contacts.contact_add`) creates it, through the import's own batch when it is enrolled, so what an
import refuses is refused here in the same words and nothing is written. Operators (and admins) add, as they edit;
staff read.
"""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render

from sequences.contact_rows import NAMED, row_check
from sequences.models import Sequence
from sequences.permissions import OPERATE
from sequences.services.common import ServiceError
from sequences.services.contacts import ContactExists, contact_add
from sequences.storable import row_id

from .access import ui_view

OWN = ("email", "first_name", "last_name", "company", "timezone")
FIELD_PAIRS = 3  # blank template-field pairs on the form; more are added on the contact's page


def _cells(data) -> tuple[dict[str, str], list[tuple[str, str]], str]:
    """The form as an import row, the template-field pairs as typed, or why it cannot be a row."""
    cells = {name: data.get(name, "").strip() for name in OWN}
    pairs = [(data.get(f"field_name_{i}", "").strip(), data.get(f"field_value_{i}", "").strip())
             for i in range(1, FIELD_PAIRS + 1)]
    for name, value in pairs:
        if not (name or value):
            continue
        if not (name and value):
            return cells, pairs, "a template field needs a name and a value"
        if name.lower() in NAMED:
            return cells, pairs, f"{name.lower()!r} is one of the contact's own details, not a template field"
        cells[name.lower()] = value
    return cells, pairs, ""


def _sequence(data) -> tuple[Sequence | None, str]:
    """The sequence picked to enroll in (None: not enrolled), or why the choice cannot be used."""
    raw = data.get("sequence", "")
    if not raw:
        return None, ""
    pk = row_id(raw)
    sequence = Sequence.objects.filter(pk=pk).first() if pk is not None else None
    return sequence, "" if sequence is not None else "that sequence no longer exists; choose another"


def _added(request, contact, enrollment):
    if enrollment is None:
        messages.success(request, f"Added {contact.email} (not enrolled in any sequence).")
        return redirect("contact_detail", pk=contact.pk)
    messages.success(request, f"Added {contact.email} and enrolled it in {enrollment.sequence.name}: step 1 is "
                              "scheduled, and is checked before it leaves.")
    return redirect("enrollment_detail", pk=enrollment.pk)


@ui_view(OPERATE, methods=("GET", "POST"))
def contact_add_page(request):
    error, existing = "", None
    cells, pairs = {}, [("", "")] * FIELD_PAIRS
    chosen = request.POST.get("sequence", "") if request.method == "POST" else request.GET.get("sequence", "")
    if request.method == "POST":
        cells, pairs, error = _cells(request.POST)
        sequence, problem = _sequence(request.POST)
        error = error or problem
        row = None
        if not error:
            row, error = row_check(0, cells, extra=False)
        if row is not None:
            try:
                contact, enrollment = contact_add(row=row, sequence_id=sequence.pk if sequence else None,
                                                  actor=request.user.get_username())
            except ContactExists as exc:
                error, existing = str(exc), exc.contact_id
            except ServiceError as exc:
                error = str(exc)
            else:
                return _added(request, contact, enrollment)
    return render(request, "ui/contact_add.html", {
        "values": cells, "pairs": pairs, "error": error, "existing": existing, "chosen": chosen,
        "sequences": Sequence.objects.order_by("name"),
    }, status=400 if error else 200)
