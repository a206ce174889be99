"""Data-protection requests read in replies: open the admins' task with its deadline, and close it.

The address is suppressed by ingestion in the same transaction (inbound.ingest.effects); this is the task:
one a person and open request (a second demand from the same person while one is open adds nothing), due one
calendar month after receipt (GDPR Art. 12(3)). Erasing the person closes it (inbound.erasure).
"""

from __future__ import annotations

import calendar
from datetime import date, datetime

from django.db import transaction
from django.db.models import QuerySet

from db.clock import db_now
from sequences.selectors import normalize_email
from sequences.services.common import ServiceError, T, operator_log

from .models import DataRequest


def one_month_after(day: date) -> date:
    """The same day of the next month, or that month's last day ("31 January" gives 28 or 29 February)."""
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def data_requests_open() -> QuerySet[DataRequest]:
    """The data-protection requests not closed yet (Replies, the dashboard's count)."""
    return DataRequest.objects.filter(done_at__isnull=True)


def data_request_open_in_transaction(*, address: str, words: str, inbound_id: int | None,
                                     received_at: datetime) -> tuple[DataRequest, bool]:
    """The person's open request, or a new one due a month after `received_at`; (request, created)."""
    address = normalize_email(address)
    open_one = DataRequest.objects.filter(address=address, done_at__isnull=True).first()
    if open_one is not None:
        return open_one, False
    return DataRequest.objects.create(address=address, words=words[:300], inbound_id=inbound_id,
                                      received_at=received_at, due_on=one_month_after(received_at.date())), True


def data_request_done(*, pk: int, actor: str, outcome: str) -> DataRequest:
    """Close a request with what was done, in the admin's words."""
    outcome = " ".join(outcome.split())
    if not outcome:
        raise ServiceError("say what was done (for example: data exported and sent, or erased)")
    with transaction.atomic(durable=True):
        request = DataRequest.objects.select_for_update().filter(pk=pk).first()
        if request is None:
            raise ServiceError(f"no data-protection request #{pk}")
        if request.done_at is not None:
            raise ServiceError(f"request #{pk} was closed already ({request.outcome})")
        DataRequest.objects.filter(pk=pk).update(done_at=db_now(), done_by=actor, outcome=outcome[:300])
        operator_log(actor=actor, action="data_request_done", target=f"data request {pk}", kind=T.SUPPRESSION,
                     target_id=pk, result={"outcome": outcome[:300], "due_on": request.due_on.isoformat()})
    request.refresh_from_db()
    return request


def data_requests_close_erased(*, address: str, actor: str) -> int:
    """The person was erased: their open requests are done (inside the erasure's transaction)."""
    return DataRequest.objects.filter(address=normalize_email(address), done_at__isnull=True).update(
        done_at=db_now(), done_by=actor or "erasure", outcome="erased (GDPR Art. 17)")

