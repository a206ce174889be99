"""The worker `manage.py rqworker` runs imports each job's module before forking its horse, runs a job queued
inside a workspace inside it, and runs the ingest queue's polls itself with a database connection it keeps
(outreach.worker)."""

from __future__ import annotations

import os
import sys

import django_rq
import pytest
from django.db import connection
from django_rq.workers import get_worker_class
from rq.worker import Worker as RqWorker

from outreach.worker import Worker
from tests.rq_jobs import connection as connection_jobs
from workspaces.scoping import workspace_scope

MODULE = "tests.rq_jobs.horse_only"
# The test process has threads of its own (pytest, Django); the horse runs only the job.
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")


@pytest.fixture
def not_imported():
    sys.modules.pop(MODULE, None)
    yield
    sys.modules.pop(MODULE, None)


def _run(worker_class, *jobs: tuple[str, str]) -> list:
    """Enqueue (queue, function) in order and run them with one worker; each job's return value."""
    queues = {name: django_rq.get_queue(name) for name, _ in jobs}
    enqueued = [queues[name].enqueue(function) for name, function in jobs]
    worker_class(list(queues.values()), connection=enqueued[0].connection).work(burst=True)
    values = []
    for job in enqueued:
        job.refresh()
        assert job.is_finished, (job.func_name, job.latest_result())
        values.append(job.return_value())
    return values


def _run_in_a_horse(worker_class) -> int:
    return _run(worker_class, ("default", f"{MODULE}.pid"))[0]


def test_manage_py_rqworker_runs_this_worker():
    assert get_worker_class() is Worker


def test_the_worker_imports_the_jobs_module_itself_and_the_horse_inherits_it(redis_conn, not_imported):
    assert _run_in_a_horse(Worker) != os.getpid()  # the job ran in a horse
    assert MODULE in sys.modules


def test_rqs_own_worker_leaves_the_import_to_every_horse(redis_conn, not_imported):
    assert _run_in_a_horse(RqWorker) != os.getpid()
    assert MODULE not in sys.modules


def test_a_job_whose_function_cannot_be_imported_fails_and_the_worker_goes_on(redis_conn, not_imported):
    queue = django_rq.get_queue("default")
    broken = queue.enqueue("tests.rq_jobs.no_such_module.pid")
    Worker([queue], connection=queue.connection).work(burst=True)  # returns: the worker did not die on it
    broken.refresh()
    assert broken.is_failed
    assert _run_in_a_horse(Worker) != os.getpid()  # and it runs the next job


@pytest.mark.parametrize("with_unowned", [True, False])
def test_a_job_queued_inside_a_workspace_runs_inside_it(redis_conn, with_unowned):
    queue = django_rq.get_queue("default")
    with workspace_scope(7, with_unowned=with_unowned):
        job = queue.enqueue("tests.rq_jobs.scope.seen")
    assert job.meta["workspace"] == [7, with_unowned]  # the shape the jobs already queued carry
    outside = queue.enqueue("tests.rq_jobs.scope.seen")
    assert "workspace" not in outside.meta
    Worker([queue], connection=queue.connection).work(burst=True)
    job.refresh()
    outside.refresh()
    assert job.return_value() == [7, with_unowned]
    assert outside.is_finished and outside.return_value() is None


def test_a_poll_runs_in_the_worker_and_other_jobs_in_a_horse(redis_conn, not_imported):
    in_worker, in_horse = _run(Worker, ("ingest", f"{MODULE}.pid"), ("default", f"{MODULE}.pid"))
    assert in_worker == os.getpid()
    assert in_horse != os.getpid()


@pytest.mark.django_db(transaction=True)
def test_a_horse_never_shares_the_database_connection_of_a_poll_before_it(redis_conn):
    # The poll opens a connection in the worker; the horse forked next never uses it (it opens its own).
    try:
        touched, shared = _run(Worker, ("ingest", "tests.rq_jobs.connection.touch"),
                               ("default", "tests.rq_jobs.connection.shares_a_connection_of_its_parent"))
    finally:
        connection_jobs.TOUCHED.clear()
    assert touched == 1
    assert shared is False


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="a server process per connection: PostgreSQL")
def test_polls_keep_the_workers_connection_and_a_dead_one_is_replaced(redis_conn):
    first, second = _run(Worker, ("ingest", "tests.rq_jobs.connection.backend"),
                         ("ingest", "tests.rq_jobs.connection.backend"))
    assert first[0] == second[0] == os.getpid()
    assert first[1] == second[1]  # the same connection, its server process warm

    queue = django_rq.get_queue("ingest")
    ended = queue.enqueue("tests.rq_jobs.connection.backend_ended")
    after = queue.enqueue("tests.rq_jobs.connection.backend")
    Worker([queue], connection=queue.connection).work(burst=True)
    ended.refresh()
    after.refresh()
    assert ended.is_failed
    assert after.is_finished, after.latest_result()  # a new connection, not the dead one
    assert after.return_value()[1] != second[1]
