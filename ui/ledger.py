"""The "Download ledger" links: the send ledger (sequences.ledger) of a contact, an enrollment or a sequence as CSV.

Each download needs the permission of the page its link sits on, and is written as it is read (a sequence's
ledger may be long).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone

from sequences.ledger import LedgerRow, ledger_csv_lines, send_ledger_rows
from sequences.models import Contact, Enrollment, Sequence
from sequences.permissions import VIEW_ENROLLMENT

from .access import ui_view


@ui_view(VIEW_ENROLLMENT)
def contact_send_ledger(request, pk: int):
    contact = get_object_or_404(Contact, pk=pk)
    return _csv(send_ledger_rows(contact_id=contact.pk), f"contact-{contact.pk}")


@ui_view(VIEW_ENROLLMENT)
def enrollment_send_ledger(request, pk: int):
    enrollment = get_object_or_404(Enrollment, pk=pk)
    return _csv(send_ledger_rows(enrollment_id=enrollment.pk), f"enrollment-{enrollment.pk}")


@ui_view(VIEW_ENROLLMENT)  # a row per person and message: people's data, as the other ledgers (not a client's)
def sequence_send_ledger(request, pk: int):
    sequence = get_object_or_404(Sequence, pk=pk)
    return _csv(send_ledger_rows(sequence_id=sequence.pk), f"sequence-{sequence.pk}")


def _csv(rows: Iterator[LedgerRow], what: str) -> StreamingHttpResponse:
    def lines():
        yield "\ufeff"  # spreadsheets read the file as UTF-8
        yield from ledger_csv_lines(rows)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="send-ledger-{what}-{timezone.now():%Y%m%d-%H%M%S}.csv"'
    return response
