"""The dashboard's numbers over all time are counted once a minute in the background and read from one row; the
page says when they were counted, counts itself when the row is missing or stale, and counts a new sequence on
the spot. A sequence's own page counts live. The results read their rare rows through partial indexes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse

from db.clock import db_now
from sequences.models import (
    FINAL_CHECK_CANCEL,
    HELD_BY_MAILBOX,
    HOLD,
    DashboardCounts,
    SendJob,
    Sequence,
    TimelineEvent,
)
from sequences.services.sending import dispatch_due, held_error
from sequences.timeline import Event
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.test_operations import submit
from tests.ui.test_results_failed_held import _world
from ui import dashboard_counts, results


def _sent_cell(page: str, sequence) -> str:
    row = page.split(f'href="{reverse("sequence_detail", args=[sequence.pk])}"')[1].split("</tr>")[0]
    return row.split('data-label="Sent">')[1].split("<")[0]


def test_the_dashboard_reads_the_last_count_and_says_when(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, waits=(0,), name="Counted")
    enroll(sequence, "a@example.com")
    submit(dispatch_due()[0])
    client.force_login(users["staff"])
    page = client.get(reverse("dashboard")).content.decode()
    assert _sent_cell(page, sequence) == "1" and 'id="counted-at">Counted ' in page
    assert DashboardCounts.objects.get().numbers["sequences"][str(sequence.pk)]["sent"] == 1

    enroll(sequence, "b@example.com")
    submit(dispatch_due()[0])
    page = client.get(reverse("dashboard")).content.decode()
    assert _sent_cell(page, sequence) == "1", "read from the row counted less than a minute ago"
    detail = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert 'data-label="Sent">2' in detail, "a sequence's own page counts as it is opened"

    assert dashboard_counts.count_task().startswith("dashboard counted at ")
    assert _sent_cell(client.get(reverse("dashboard")).content.decode(), sequence) == "2"

    enroll(sequence, "c@example.com")
    submit(dispatch_due()[0])
    DashboardCounts.objects.update(counted_at=db_now() - dashboard_counts.STALE - timedelta(seconds=1))
    assert _sent_cell(client.get(reverse("dashboard")).content.decode(), sequence) == "3", "stale: counted again"


def test_a_sequence_created_since_the_last_count_is_counted_on_the_spot(client, users):
    client.force_login(users["staff"])
    dashboard_counts.count()
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, waits=(0,), name="Newer")
    enroll(sequence, "a@example.com")
    submit(dispatch_due()[0])
    assert _sent_cell(client.get(reverse("dashboard")).content.decode(), sequence) == "1"


def test_a_job_held_for_two_reasons_is_counted_once(db):
    sequence, _, held, _ = _world()
    job = held.jobs.get(step__position=2)
    assert results.step_results(sequence)[1][1].held == 1
    SendJob.objects.filter(pk=job.pk).update(error=held_error("connection refused"))
    assert SendJob.objects.filter(HELD_BY_MAILBOX, pk=job.pk).exists()
    assert results.step_results(sequence)[1][1].held == 1
    assert results.sequence_counts(Sequence.objects.filter(pk=sequence.pk))[sequence.pk].held == 1


@pytest.mark.one_database("the plans are PostgreSQL's: a big database is PostgreSQL, SQLite keeps the small ones")
def test_the_rare_rows_the_results_count_are_read_through_their_partial_indexes(db):
    """The index conditions are the very expressions the results filter with, on event kinds that exist. (The
    jobs held by their mailbox have one too, in competition with the due-jobs index on an empty table: shown
    on a big one by `bench pages`.)"""
    kinds = {child[1] for q in (FINAL_CHECK_CANCEL, HOLD) for c in q.children
             for child in (c.children if hasattr(c, "children") else [c]) if child[0] == "kind"}
    assert kinds == {Event.JOB_CANCELED, Event.JOB_HELD_OUT_OF_OFFICE, Event.JOB_DEFERRED}
    queries = {
        "timelineevent_final_check_idx": TimelineEvent.objects.filter(FINAL_CHECK_CANCEL).order_by().values("job_id"),
        "timelineevent_hold_idx": TimelineEvent.objects.filter(HOLD).order_by().values("job_id"),
    }
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: make the planner show what it can use
        for index, query in queries.items():
            assert index in query.explain(), index
