"""The dispatcher and send jobs through real Redis and an in-process RQ worker."""

from __future__ import annotations

import django_rq
import pytest
from rq.worker import SimpleWorker

from sequences.models import SendJob
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim
from sequences.tasks import dispatch
from tests.factories import enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)


def work(queue_name: str) -> None:
    queue = django_rq.get_queue(queue_name)
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def test_dispatch_enqueues_after_commit_and_a_worker_sends(mailbox, smtp_server, redis_conn):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    for i in range(3):
        enroll(sequence, f"rq{i}@example.com")
    assert dispatch() == {"queued": 3, "re_enqueued": 0, "marked_unknown": 0, "probes": 0}
    assert django_rq.get_queue("send").count == 3
    work("send")
    assert len(smtp_server.received) == 3
    assert set(SendJob.objects.values_list("state", flat=True)) == {"submitted"}
    assert all(":" in w for w in SendJob.objects.values_list("worker_id", flat=True))


def test_jobs_lost_from_redis_are_enqueued_again_and_sent_once(mailbox, smtp_server, redis_conn):
    enroll(make_sequence(mailbox=mailbox, steps=1), "lost@example.com")
    dispatch()
    # While its enqueue mark lives, a queued job is not enqueued again on every pass.
    assert dispatch(stale_after_seconds=0)["re_enqueued"] == 0
    assert django_rq.get_queue("send").count == 1
    redis_conn.flushdb()  # Redis lost everything; the database still says "queued"
    assert dispatch(stale_after_seconds=0) == {"queued": 0, "re_enqueued": 1, "marked_unknown": 0, "probes": 0}
    work("send")
    # A duplicate enqueue is harmless too: the second delivery finds the job submitted.
    job = SendJob.objects.get()
    django_rq.get_queue("send").enqueue("sequences.tasks.send_job", job.pk)
    work("send")
    assert len(smtp_server.received) == 1
    job.refresh_from_db()
    assert job.state == "submitted"
    assert job.events.filter(kind="claim_noop").count() == 1


def test_the_sweeper_runs_in_the_dispatcher_pass(mailbox, smtp_server, redis_conn):
    enroll(make_sequence(mailbox=mailbox, steps=1), "sweep@example.com")
    (job_id,) = dispatch_due()
    job = send_job_claim(job_id=job_id, worker_id="gone")
    send_job_authorize(job_id=job_id, worker_id="gone", version=job.version)
    SendJob.objects.filter(pk=job_id).update(lease_until="2000-01-01T00:00:00Z")
    assert dispatch()["marked_unknown"] == 1
    work("send")
    assert smtp_server.received == []
