"""/api/v1/timeline/{email}: the same events as `manage.py timeline EMAIL --json`."""

from ninja import Router

from sequences.permissions import VIEW_INCIDENT
from sequences.selectors import timeline_event_fields, timeline_of_address

from ..auth import needs
from ..schemas import TimelineEventOut

router = Router(tags=["timeline"])


@router.get("/{email}", response=list[TimelineEventOut])
@needs(VIEW_INCIDENT)
def timeline(request, email: str):
    """Every event of the address and of its @domain, in commit order, database-clock times."""
    return [timeline_event_fields(e) for e in timeline_of_address(email)]
