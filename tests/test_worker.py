"""The worker `manage.py rqworker` runs imports each job's module before forking its horse, and runs a job queued
inside a workspace inside it (outreach.worker)."""

from __future__ import annotations

import os
import sys

import django_rq
import pytest
from django_rq.workers import get_worker_class
from rq.worker import Worker as RqWorker

from outreach.worker import Worker
from workspaces.scoping import workspace_scope

MODULE = "tests.rq_jobs.horse_only"
# The test process has threads of its own (pytest, Django); the horse runs only the job.
pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")


@pytest.fixture
def not_imported():
    sys.modules.pop(MODULE, None)
    yield
    sys.modules.pop(MODULE, None)


def _run_in_a_horse(worker_class) -> int:
    queue = django_rq.get_queue("default")
    job = queue.enqueue(f"{MODULE}.pid")
    worker_class([queue], connection=queue.connection).work(burst=True)
    job.refresh()
    assert job.is_finished, job.latest_result()
    return job.return_value()


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
