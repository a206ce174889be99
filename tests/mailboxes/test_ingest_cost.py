"""What a message that acts costs the database, counted as `bench ingest` counts it (statements, COMMIT aside)."""

from __future__ import annotations

import pytest

from mailboxes.models import InboundMessage
from proving.bench.ingest import statements_by_kind
from sequences.models import Enrollment

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reply_that_stops_its_enrollment_is_six_statements():
    counted = statements_by_kind()
    # The arrival event with the row's id, the person's lock, their jobs, the job's move, the enrollment's
    # move, and the row written once with its effect and the cursor.
    assert counted["reply"] == {"messages": 20, "statements_median": 6, "statements_max": 6}
    assert counted["auto_reply"]["statements_max"] <= 6
    assert counted["unsubscribe"]["statements_max"] <= 8
    replies = InboundMessage.objects.filter(kind=InboundMessage.Kind.HUMAN_REPLY)
    assert replies.count() == 20 and all(r.effect.startswith("stopped (replied)") for r in replies)
    assert Enrollment.objects.filter(stop_reason=Enrollment.StopReason.REPLIED).count() == 20
