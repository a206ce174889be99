"""What the final check costs, and what it still guarantees: statements, the daily counter, reused connections.

A real database (SQLite and PostgreSQL) and a real SMTP server on loopback, as everywhere.
"""

from __future__ import annotations

import threading
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection

from db.clock import db_now
from proving.bench.stats import StatementCounter
from proving.harness.smtp import SmtpServer
from sequences.models import DailySendCount, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import (
    Authorization,
    dispatch_due,
    send_job_authorize,
    send_job_claim,
    send_job_record_submitted,
)
from sequences.services.stops import enrollment_stop
from sequences.services.suppressions import suppression_add
from tests.factories import enroll, make_sequence
from tests.races.helpers import Gate, Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def claimed(mailbox, emails, *, steps=1):
    sequence = make_sequence(mailbox=mailbox, steps=steps)
    for email in emails:
        enroll(sequence, email)
    ids = dispatch_due()
    return [(job_id, send_job_claim(job_id=job_id, worker_id=f"w{job_id}").version) for job_id in ids]


def test_what_the_final_check_runs(mailbox):
    (first, (job_id, version)) = claimed(mailbox, ["first@example.com", "count@example.com"])
    assert send_job_authorize(job_id=first[0], worker_id=f"w{first[0]}", version=first[1]).outcome == "authorized"
    statements = StatementCounter()
    with connection.execute_wrapper(statements):
        decision = send_job_authorize(job_id=job_id, worker_id=f"w{job_id}", version=version)
    assert decision.outcome == "authorized"
    # The enrollment lock (it finds the enrollment from the job), the job with its rows but not the mailbox, the
    # mailbox lock (which reads it), the facts (clock, ledger, previous step, reply view), the day's slot (its
    # row exists: the day's first message created it), the move, the event; on SQLite its BEGIN IMMEDIATE is a
    # statement too. A change here is a change of the guard's cost: say why in the commit.
    assert len(statements.sql) == 7 + (connection.vendor == "sqlite"), statements.sql
    assert "outreach_mailbox" not in statements.sql[1].split("FROM", 1)[1], "the job is read without its mailbox"
    if connection.vendor == "postgresql":
        assert "FOR NO KEY UPDATE" in statements.sql[0] and "FOR NO KEY UPDATE" in statements.sql[2]
    kinds = list(TimelineEvent.objects.filter(job_id=job_id).values_list("kind", flat=True))
    assert kinds[-1] == "job_authorized"
    assert DailySendCount.objects.get(mailbox=mailbox).sent == 2


def test_the_daily_cap_counts_per_calendar_day_in_the_mailbox_zone(mailbox, smtp_server):
    mailbox.daily_cap, mailbox.window_timezone = 2, "Pacific/Kiritimati"  # UTC+14: its day is rarely UTC's
    mailbox.save(update_fields=["daily_cap", "window_timezone"])
    sequence = make_sequence(mailbox=mailbox, steps=1)
    for i in range(3):
        enroll(sequence, f"cap{i}@example.com")
    outcomes = [send_job_process(job_id=j, worker_id="w1") for j in dispatch_due()]

    assert [o.state for o in outcomes] == [S.SUBMITTED, S.SUBMITTED, "deferred"]
    assert outcomes[2].detail == "daily_cap_reached"
    zone = ZoneInfo("Pacific/Kiritimati")
    today = db_now().astimezone(zone).date()
    (count,) = DailySendCount.objects.filter(mailbox=mailbox)
    assert (count.day, count.sent) == (today, 2)
    # It waits for local midnight, when the next day's count begins.
    waiting = SendJob.objects.get(pk=outcomes[2].job_id)
    assert waiting.scheduled_at == datetime.combine(today + timedelta(days=1), time(0), tzinfo=zone)
    assert len(smtp_server.received) == 2


def test_a_job_back_from_the_hand_off_gives_its_slot_back(mailbox, smtp_server, settings):
    settings.OUTREACH_RETRY_BASE_SECONDS = 0
    mailbox.daily_cap = 1
    mailbox.save(update_fields=["daily_cap"])
    sequence = make_sequence(mailbox=mailbox, steps=1)
    enroll(sequence, "later@example.com")
    smtp_server.behaviour.rcpt_reply = "451 4.3.0 try again later"
    (job_id,) = dispatch_due()
    assert send_job_process(job_id=job_id, worker_id="w1").state == S.SCHEDULED
    assert DailySendCount.objects.get(mailbox=mailbox).sent == 0, "a refused message is not a message of the day"

    smtp_server.behaviour.rcpt_reply = None
    enroll(sequence, "other@example.com")
    outcomes = [send_job_process(job_id=j, worker_id="w1").state for j in dispatch_due()]
    assert outcomes == [S.SUBMITTED, "deferred"]
    assert DailySendCount.objects.get(mailbox=mailbox).sent == 1


def test_concurrent_final_checks_never_pass_the_cap(mailbox):
    mailbox.daily_cap = 3
    mailbox.save(update_fields=["daily_cap"])
    jobs = claimed(mailbox, [f"race{i}@example.com" for i in range(8)])
    barrier = threading.Barrier(len(jobs))

    def authorize(job_id, version):
        barrier.wait(10)
        return send_job_authorize(job_id=job_id, worker_id=f"w{job_id}", version=version).outcome

    workers = [Worker(lambda j=j, v=v: authorize(j, v)) for j, v in jobs]
    for worker in workers:
        worker.start()
    outcomes = sorted(worker.outcome() for worker in workers)
    assert outcomes == ["authorized"] * 3 + ["deferred"] * 5
    assert DailySendCount.objects.get(mailbox=mailbox).sent == 3
    assert SendJob.objects.filter(state=S.AUTHORIZED).count() == 3


def test_consecutive_messages_of_a_mailbox_share_one_connection(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    for i in range(3):
        enroll(sequence, f"reuse{i}@example.com")
    states = [send_job_process(job_id=j, worker_id="w1").state for j in dispatch_due()]
    assert states == [S.SUBMITTED] * 3
    assert len(smtp_server.received) == 3
    assert (smtp_server.connections, smtp_server.rsets) == (1, 2)


def test_a_reused_connection_still_waits_for_the_final_check(mailbox, smtp_server):
    """A stop between two messages of one connection: the second is canceled, nothing of it reaches the server."""
    sequence = make_sequence(mailbox=mailbox, steps=1)
    first, second, third = (enroll(sequence, f"p{i}@example.com") for i in range(3))
    job_ids = dispatch_due()
    assert send_job_process(job_id=job_ids[0], worker_id="w1").state == S.SUBMITTED

    gate = Gate("prepared")
    worker = Worker(lambda: send_job_process(job_id=job_ids[1], worker_id="w1"))
    worker.start()
    gate.wait()
    enrollment_stop(enrollment_id=second.pk, reason="replied")
    gate.release()
    assert worker.outcome().state == "lost"
    gate.remove()
    assert send_job_process(job_id=job_ids[2], worker_id="w1").state == S.SUBMITTED

    assert [r.recipients for r in smtp_server.received] == [["p0@example.com"], ["p2@example.com"]]
    assert SendJob.objects.get(pk=job_ids[1]).state == S.CANCELED
    assert smtp_server.connections == 1


def test_a_connection_the_server_dropped_is_replaced_without_a_retry(mailbox):
    with SmtpServer() as server:
        mailbox.smtp_port = server.port
        mailbox.save(update_fields=["smtp_port"])
        sequence = make_sequence(mailbox=mailbox, steps=1)
        enroll(sequence, "a@example.com")
        enroll(sequence, "b@example.com")
        job_ids = dispatch_due()
        assert send_job_process(job_id=job_ids[0], worker_id="w1").state == S.SUBMITTED
    # The server went away with the idle connection; another one answers on the same port.
    with SmtpServer(port=server.port) as again:
        assert send_job_process(job_id=job_ids[1], worker_id="w1").state == S.SUBMITTED
        assert len(again.received) == 1 and again.connections == 1
    job = SendJob.objects.get(pk=job_ids[1])
    assert job.attempts == 1 and job.error == ""


def test_a_middle_step_s_record_writes_the_next_job_with_its_event(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=3)
    enroll(sequence, "middle@example.com")
    (job_id,) = dispatch_due()
    claimed_job = send_job_claim(job_id=job_id, worker_id="w1")
    assert send_job_authorize(job_id=job_id, worker_id="w1", version=claimed_job.version).outcome == \
        "authorized"
    counter = StatementCounter()
    with connection.execute_wrapper(counter):
        assert send_job_record_submitted(job_id=job_id, worker_id="w1", smtp_reply="250 2.0.0 Ok")
    # The lock, the job with its rows, the move (its update, its event, the webhook endpoints that event may go
    # to; the stamp it decided is read only if used), the progress (steps, jobs, the clock), the next job and
    # its event. On SQLite the same count: its BEGIN IMMEDIATE is a statement, and its clock is this process's
    # (no statement).
    assert len(counter.sql) == 10, counter.sql
    following = SendJob.objects.get(enrollment__contact__email="middle@example.com", step__position=2)
    event = TimelineEvent.objects.get(kind="job_scheduled", job=following)
    assert (following.state, event.version_seen, event.data["step"]) == (S.SCHEDULED, following.version, 2)
    assert event.data["scheduled_at"] == following.scheduled_at.isoformat()
    assert event.enrollment_id == following.enrollment_id and event.email == "middle@example.com"


def test_a_connection_that_saw_a_refusal_is_not_reused(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    enroll(sequence, "nobody@example.com")
    enroll(sequence, "somebody@example.com")
    job_ids = dispatch_due()
    smtp_server.behaviour.rcpt_reply = "550 5.1.1 user unknown"
    assert send_job_process(job_id=job_ids[0], worker_id="w1").state == S.FAILED
    smtp_server.behaviour.rcpt_reply = None
    assert send_job_process(job_id=job_ids[1], worker_id="w1").state == S.SUBMITTED
    assert (smtp_server.connections, smtp_server.rsets) == (2, 0)


def authorize_while_held(job_id: int, version: int, hold) -> tuple[bool, Authorization]:
    """Run `hold` (writes of another transaction, under its locks) and keep its transaction open while the final
    check of the job starts; then commit it. Returns whether the final check waited for it, and its decision."""
    from django.db import close_old_connections, transaction

    locked, release = threading.Event(), threading.Event()

    def holder():
        try:
            with transaction.atomic():
                hold()
                locked.set()
                release.wait(10)
        finally:
            close_old_connections()

    decision = {}

    def authorize():
        try:
            decision["it"] = send_job_authorize(job_id=job_id, worker_id=f"w{job_id}", version=version)
        finally:
            close_old_connections()

    holding = threading.Thread(target=holder)
    holding.start()
    assert locked.wait(10)
    worker = threading.Thread(target=authorize)
    worker.start()
    worker.join(1.0)
    waited = worker.is_alive()
    release.set()
    holding.join(10)
    worker.join(10)
    return waited, decision["it"]


def test_a_pause_that_does_not_lock_the_enrollments_still_wins_over_an_authorize_that_reads_after_it(mailbox):
    """The deliverability guardrail pauses a mailbox with the mailbox row locked, not the enrollments; the final
    check locks that row too, so it waits for the pause and then refuses instead of authorizing under it."""
    from sequences.locks import mailbox_lock
    from sequences.states import MAILBOX_PAUSED, mailbox_move

    ((job_id, version),) = claimed(mailbox, ["paused-meanwhile@example.com"])

    def guardrail_pause():
        mailbox_move(mailbox=mailbox_lock(mailbox_id=mailbox.pk), to=MAILBOX_PAUSED, actor="guardrail")

    waited, decision = authorize_while_held(job_id, version, guardrail_pause)
    assert waited, f"the final check did not wait for the pause: {decision}"
    assert (decision.outcome, decision.reason) == ("canceled", "mailbox_paused")
    assert SendJob.objects.get(pk=job_id).state == S.CANCELED


def test_the_final_check_reads_what_a_transaction_holding_the_lock_committed_while_it_waited(mailbox):
    """The reads after the lock see what was committed while the final check waited for it: a ledger entry
    written under the enrollment lock, by a transaction that touches neither the enrollment nor the job."""
    from sequences.locks import enrollment_lock
    from sequences.models import Suppression

    ((job_id, version),) = claimed(mailbox, ["held@example.com"])
    enrollment_id = SendJob.objects.get(pk=job_id).enrollment_id

    def ledger_entry_under_the_lock():
        enrollment_lock(enrollment_id=enrollment_id)
        Suppression.objects.create(value="held@example.com", action=Suppression.Action.ADD,
                                   reason=Suppression.Reason.UNSUBSCRIBE)

    waited, decision = authorize_while_held(job_id, version, ledger_entry_under_the_lock)
    assert waited, f"the final check did not wait for the lock: {decision}"
    assert (decision.outcome, decision.reason) == ("canceled", "suppressed")


def test_an_address_changed_since_the_claim_is_checked_against_the_ledger_as_it_is_now(mailbox):
    """The ledger is read for the address the contact has when the final check runs, not the one the claim saw."""
    from sequences.models import Contact

    ((job_id, version),) = claimed(mailbox, ["before@example.com"])
    suppression_add(value="after@example.com", reason="unsubscribe", source="test")
    Contact.objects.filter(email="before@example.com").update(email="after@example.com")
    decision = send_job_authorize(job_id=job_id, worker_id=f"w{job_id}", version=version)
    assert (decision.outcome, decision.reason) == ("canceled", "suppressed")
