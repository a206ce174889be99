"""/api/v1/timeline/{email}: the same events as `manage.py timeline EMAIL --json`."""

from ninja import Router

from ...models import TimelineEvent
from ...selectors import normalize_email
from ...web.access import VIEW_INCIDENT
from ..auth import needs
from ..present import timeline_event_out
from ..schemas import TimelineEventOut

router = Router(tags=["timeline"])


@router.get("/{email}", response=list[TimelineEventOut])
@needs(VIEW_INCIDENT)
def timeline(request, email: str):
    """Every event of the address and of its @domain, in commit order, database-clock times."""
    email = normalize_email(email)
    events = TimelineEvent.objects.filter(email__in=[email, "@" + email.rsplit("@", 1)[-1]]).order_by("at", "id")
    return [timeline_event_out(e) for e in events]
