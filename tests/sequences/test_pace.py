"""A mailbox's pace: messages spaced by `min_gap` across workers, and a ramp-up of its daily limit.

Real database (both), real SMTP server on loopback; two workers are two threads with their own connections,
each running the product's pipeline (dispatch, claim, prepare, final check, hand-off, record).
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from itertools import pairwise

import pytest
from django.core.management import CommandError

from db.clock import db_now
from mailboxes.models import Mailbox
from sequences import daily_cap
from sequences.config.export import sequence_export_toml
from sequences.models import DailySendCount, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import enroll, make_sequence
from tests.races.helpers import Worker
from tests.sequences.test_commands import GOOD, run, write

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State


def test_two_workers_never_hand_off_two_messages_of_a_mailbox_closer_than_its_min_gap(mailbox, smtp_server):
    sequence = make_sequence(mailbox=mailbox, steps=1)
    people = [enroll(sequence, f"gap{i}@example.com") for i in range(5)]
    # Every job is queued at once (as a dispatcher pass before the gap was set would), so the final check alone
    # has to space them: with two workers taking them together.
    pending = dispatch_due()
    assert len(pending) == 5
    Mailbox.objects.filter(pk=mailbox.pk).update(min_gap=2)
    lock = threading.Lock()
    deadline = time.monotonic() + 60

    def work():
        while time.monotonic() < deadline:
            with lock:
                job_id = pending.pop(0) if pending else None
            if job_id is None:
                if SendJob.objects.filter(enrollment__in=people, state=S.SUBMITTED).count() == 5:
                    return
                found = dispatch_due()
                with lock:
                    pending.extend(found)
                time.sleep(0.1)
                continue
            send_job_process(job_id=job_id, worker_id=threading.current_thread().name)

    workers = [Worker(work) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.outcome(timeout=90)

    times = sorted(SendJob.objects.filter(enrollment__in=people).values_list("authorized_at", flat=True))
    assert len(times) == 5 and None not in times and len(smtp_server.received) == 5
    gaps = [(b - a).total_seconds() for a, b in pairwise(times)]
    assert min(gaps) >= 2, gaps
    # The final check held the ones that came too early (the dispatcher alone would not have: all were queued).
    held = TimelineEvent.objects.filter(kind="job_deferred", data__reason="min_gap")
    assert held.exists()
    assert Mailbox.objects.get(pk=mailbox.pk).next_handoff_at > times[-1]


def test_a_ramp_sends_its_first_days_figure_then_one_step_more_the_next_day(mailbox, smtp_server):
    Mailbox.objects.filter(pk=mailbox.pk).update(daily_cap=10, ramp_start=2, ramp_step=1)
    mailbox.refresh_from_db()
    sequence = make_sequence(mailbox=mailbox, steps=1)
    people = [enroll(sequence, f"ramp{i}@example.com") for i in range(5)]
    outcomes = [send_job_process(job_id=j, worker_id="w1") for j in dispatch_due()]
    assert [o.state for o in outcomes].count(S.SUBMITTED) == 2
    assert {o.detail for o in outcomes if o.state == "deferred"} == {"daily_cap_reached"}
    today = daily_cap.cap_day(mailbox, db_now())
    assert daily_cap.day_limit(mailbox, today) == 2
    assert daily_cap.ramp_full_on(mailbox, today) == today + timedelta(days=8)  # 2 + 8 x 1 = 10, the cap

    # The next day (the first day's counter moved back one day; the waiting jobs come due).
    DailySendCount.objects.filter(mailbox=mailbox).update(day=today - timedelta(days=1))
    assert daily_cap.day_limit(mailbox, today) == 3
    SendJob.objects.filter(enrollment__in=people, state=S.SCHEDULED).update(scheduled_at=db_now())
    outcomes = [send_job_process(job_id=j, worker_id="w1") for j in dispatch_due()]
    assert [o.state for o in outcomes] == [S.SUBMITTED] * 3
    assert len(smtp_server.received) == 5


def test_the_pace_in_toml_loads_exports_and_refuses_nonsense(tmp_path):
    paced = GOOD.replace("follow_ups_without_reply_view = true",
                         'follow_ups_without_reply_view = true\nmin_gap = "3m"\ngap_jitter = "30s"\n'
                         "ramp = { start = 10, step = 5 }")
    run("load_sequences", write(tmp_path, "paced.toml", paced))
    mailbox = Mailbox.objects.get(name="sales")
    assert (mailbox.min_gap, mailbox.gap_jitter, mailbox.ramp_start, mailbox.ramp_step) == (180, 30, 10, 5)
    exported = sequence_export_toml(mailbox.sequences.first())
    assert 'min_gap = "3m"' in exported and 'gap_jitter = "30s"' in exported
    assert "[mailbox.ramp]" in exported and "start = 10" in exported and "step = 5" in exported

    bad = paced.replace("start = 10", "start = 0").replace('"3m"', '"soon"')
    with pytest.raises(CommandError) as excinfo:
        run("load_sequences", write(tmp_path, "bad.toml", bad))
    assert "ramp.start" in str(excinfo.value) and "min_gap" in str(excinfo.value)
