"""The editor against the scheduler, on PostgreSQL: a step is never deleted under an enrollment scheduling it."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from db.clock import db_now
from sequences.locks import enrollment_lock
from sequences.models import SendJob, Step
from sequences.services.campaigns import step_delete
from sequences.services.common import ServiceError
from sequences.services.scheduling import schedule_step
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.races.helpers import Worker

pytestmark = pytest.mark.django_db(transaction=True)


def _wait_until_blocked_or_done(worker: Worker, deadline: float = 10) -> None:
    """Until the worker's transaction waits for a row lock held by another (or the worker is done)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end and worker.is_alive():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.01)


def test_deleting_a_step_waits_for_the_enrollment_that_is_scheduling_it():
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL only")
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2)
    ada = enroll(sequence, "ada@example.com")
    step2 = sequence.steps.get(position=2)
    locked, release = threading.Event(), threading.Event()

    def record_of_a_submission():
        # What send_job_record_submitted does: lock the enrollment, choose the next step, create its job.
        with transaction.atomic():
            enrollment = enrollment_lock(enrollment_id=ada.pk)
            locked.set()
            assert release.wait(20)
            return schedule_step(enrollment, step=step2, at=db_now(), reason="previous_step_submitted").pk

    scheduler = Worker(record_of_a_submission)
    scheduler.start()
    assert locked.wait(20)
    deleter = Worker(lambda: step_delete(step_id=step2.pk, actor="op"))
    deleter.start()
    _wait_until_blocked_or_done(deleter)
    release.set()

    job_id = scheduler.outcome()  # the scheduler's record commits: it never fails for the editor's sake
    with pytest.raises(ServiceError, match="1 person has it scheduled"):
        deleter.outcome()
    assert Step.objects.filter(pk=step2.pk).exists()
    assert SendJob.objects.get(pk=job_id).step_id == step2.pk
