"""/api/v1/suppressions: add (stops the person everywhere), lift with a justification, check, list."""

from ninja import Router, Status

from sequences.permissions import MANAGE_SUPPRESSIONS, VIEW_LEDGER
from sequences.selectors import ledger_search, normalize_email, suppression_active_for
from sequences.services import suppressions

from ..auth import actor_of, needs
from ..present import page_of, stop_out, suppression_out
from ..schemas import (
    Error,
    LiftIn,
    SearchText,
    SuppressionAddOut,
    SuppressionCheckOut,
    SuppressionIn,
    SuppressionOut,
    SuppressionPage,
)

router = Router(tags=["suppressions"])


@router.post("", response={201: SuppressionAddOut, 409: Error})
@needs(MANAGE_SUPPRESSIONS)
def suppression_add(request, body: SuppressionIn):
    """Suppress an address or @domain; every enrollment of it stops (already submitted mail cannot be recalled)."""
    entry, summary = suppressions.suppression_add(
        value=body.value, reason=body.reason, note=body.note, source="api", actor=actor_of(request)
    )
    return Status(201, {"entry": suppression_out(entry), "result": stop_out(summary)})


@router.post("/lift", response={201: SuppressionOut, 409: Error})
@needs(MANAGE_SUPPRESSIONS)
def suppression_lift(request, body: LiftIn):
    """Lift with a justification: a new ledger entry; the history stays."""
    entry = suppressions.suppression_lift(value=body.value, note=body.note, actor=actor_of(request), source="api")
    return Status(201, suppression_out(entry))


@router.get("/check", response=SuppressionCheckOut)
@needs(VIEW_LEDGER)
def suppression_check(request, address: str):
    """Is this address suppressed (by itself or its @domain), why, and since when."""
    address = normalize_email(address)
    entry = suppression_active_for(address)
    return {
        "address": address,
        "suppressed": entry is not None,
        "why": entry.reason if entry else "",
        "by": entry.value if entry else "",
        "since": entry.created_at if entry else None,
        "entry": suppression_out(entry) if entry else None,
    }


@router.get("", response=SuppressionPage)
@needs(VIEW_LEDGER)
def suppression_list(request, q: SearchText = "", history: bool = False, page: int = 1, per_page: int = 50):
    """The latest entry of each value (or, with history, every entry), newest first."""
    return page_of(ledger_search(q, history=history), page=page, per_page=per_page, item=suppression_out)
