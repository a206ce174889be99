"""The mailbox form's check runs in a worker (sequences.mailbox_checks): a test posts, runs the queued check as the
worker would, and opens the page that waited on it."""

from __future__ import annotations

import threading

import django_rq
import pytest
from django.db import connection
from rq import Queue, SimpleWorker
from rq.timeouts import TimerDeathPenalty


class _ThreadWorker(SimpleWorker):
    """A worker for a thread other than the main one: a timer, not a signal, for the job's time limit."""

    death_penalty_class = TimerDeathPenalty


def run_checks(worker_class=SimpleWorker) -> None:
    """Run what waits on the default queue, one job at a time (`work(burst=True)` may wait out its pub/sub thread's
    60-second read when it stops)."""
    queue = django_rq.get_queue("default")
    worker = worker_class([queue], connection=queue.connection)
    while (found := Queue.dequeue_any([queue], None, connection=queue.connection)) is not None:
        worker.execute_job(*found)


def submit(client, url: str, data: dict):
    """POST the mailbox form; when it queued a check, run it and GET the page that shows what it found (the list,
    after a save). A form refused before any check comes back as it is."""
    response = client.post(url, data)
    if response.status_code == 302 and "?check=" in response.url:
        run_checks()
        response = client.get(response.url)
    return response


@pytest.fixture
def check_worker():
    """A worker thread for browser tests: it runs queued checks while the page waits on them."""
    stop = threading.Event()

    def work() -> None:
        try:
            while not stop.wait(0.2):
                run_checks(_ThreadWorker)
        finally:
            connection.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(10)
