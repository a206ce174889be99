"""The worker `manage.py rqworker` runs imports each job's module before forking its horse (outreach.worker)."""

from __future__ import annotations

import os
import sys

import django_rq
import pytest
from django_rq.workers import get_worker_class
from rq.worker import Worker as RqWorker

from outreach.worker import Worker

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
