"""The indexes every send and every inbound row writes are only those a query reads (PostgreSQL)."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction

from inbound.models import InboundMessage
from sequences.models import KINDS_FOUND_BY_KIND, DailySendCount, Enrollment, SendJob, TimelineEvent
from tests.factories import MailboxFactory, enroll, make_sequence
from ui.rows import enrollment_events

pytestmark = pytest.mark.django_db


def _indexes(model) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [model._meta.db_table])
        return dict(cursor.fetchall())


def _plan_for_kinds(kinds: tuple[str, ...]) -> str:
    """The plan of a search of the timeline by these kinds, given as literals (as a page's custom plan sees them)."""
    assert all(re.fullmatch(r"[a-z_]+", k) for k in kinds)
    listed = ", ".join(f"'{k}'" for k in kinds)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN SELECT id FROM {TimelineEvent._meta.db_table} WHERE kind IN ({listed})")
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.postgresql("reads pg_indexes: the indexes PostgreSQL builds")
def test_the_hot_tables_carry_no_prefix_index_and_no_index_another_one_leads_with():
    for model in (SendJob, TimelineEvent, InboundMessage, Enrollment, DailySendCount):
        indexes = _indexes(model)
        assert not [name for name, sql in indexes.items() if "varchar_pattern_ops" in sql], model
        columns = {name: re.search(r"USING \w+ \(([^)]*)\)", sql).group(1) for name, sql in indexes.items()}
        single = {c for name, c in columns.items() if "," not in c and " WHERE " not in indexes[name]}
        led = {c.split(",")[0].strip() for name, c in columns.items() if "," in c and " WHERE " not in indexes[name]}
        # An index on one column that a composite index on every row already begins with is written for nothing.
        assert not (single & led), (model, single & led)


@pytest.mark.postgresql("asks PostgreSQL's planner whether each search can use the partial index")
def test_the_timeline_kind_index_holds_only_the_kinds_a_page_finds_by_kind_alone():
    """Every `kind IN (...)` of the enrollment page's timeline can be read from the partial index."""
    mailbox = MailboxFactory()
    enrollment = enroll(make_sequence(mailbox=mailbox), "ada@example.test")
    sql = str(enrollment_events(enrollment).query)
    found = [tuple(k.strip() for k in group.split(",")) for group in re.findall(r'"kind" IN \(([^)]*)\)', sql)]
    assert found and set().union(*found) <= set(KINDS_FOUND_BY_KIND)
    for kinds in found:
        assert "timelineevent_kind_found_idx" in _plan_for_kinds(kinds)
    # A send's events are not in it: a search for one of them cannot use it.
    assert "timelineevent_kind_found_idx" not in _plan_for_kinds(("job_authorized",))
