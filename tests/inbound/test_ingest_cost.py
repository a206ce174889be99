"""What a message that acts costs the database, counted as `bench ingest` counts it (statements, COMMIT aside)."""

from __future__ import annotations

import pytest
from django.db import connection

from inbound.models import InboundMessage
from proving.bench.ingest import statements_by_kind
from sequences.models import Enrollment

pytestmark = pytest.mark.django_db(transaction=True)


def test_what_a_reply_that_stops_its_enrollment_runs():
    counted = statements_by_kind()
    # The row, the cursor, the arrival event (and the webhook endpoints it may go to), the person's lock,
    # their jobs, the job's move (update, event; its stamp is read only if used), the enrollment's move (update,
    # event, endpoints), the row's effect; the replies inbox: the person's conversation (an update by key, then for
    # a first reply an insert in its savepoint) and its reply_received event (and endpoints); SQLite's BEGIN
    # IMMEDIATE. A change here is a change of ingestion's cost: say why in the commit.
    expected = 12 + 6 + (connection.vendor == "sqlite")
    assert counted["reply"] == {"messages": 20, "statements_median": expected, "statements_max": expected}
    assert counted["auto_reply"]["statements_max"] <= 14 + 6  # + the replies inbox, as above
    assert counted["unsubscribe"]["statements_max"] <= 18 + 6
    replies = InboundMessage.objects.filter(kind=InboundMessage.Kind.HUMAN_REPLY)
    assert replies.count() == 20 and all(r.effect.startswith("stopped (replied)") for r in replies)
    assert Enrollment.objects.filter(stop_reason=Enrollment.StopReason.REPLIED).count() == 20
