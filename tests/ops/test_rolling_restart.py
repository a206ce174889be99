"""A rolling restart loses no send: a real `manage.py rqworker send` stopped with SIGTERM in the middle of a job.

The SMTP server takes 4 s to answer DATA; the worker is sent SIGTERM once the job is authorized, while the
message is being handed off. RQ's warm shutdown lets the job's work horse finish: the job ends `submitted`,
the message arrived once, and the worker exits by itself. (SIGKILL is the lease sweeper's case: a job lost
after its authorization becomes `unknown` and is never sent again, tests/drills.)
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection

from proving.harness import data
from proving.harness.smtp import Behaviour, SmtpServer
from proving.harness.stack import database_url, start_worker, wait_for
from sequences.models import SendJob
from sequences.tasks import dispatch

pytestmark = [pytest.mark.one_database("RQ's warm shutdown on SIGTERM"), pytest.mark.slow,
              pytest.mark.django_db(transaction=True)]
S = SendJob.State


def test_sigterm_lets_the_send_in_progress_finish(redis_conn, tmp_path):
    with SmtpServer(behaviour=Behaviour(data_delay=4.0)) as smtp:
        mailbox = data.mailbox_create(name="rolling", address="sales@rolling.test", smtp_port=smtp.port,
                                      display_name="Sam", daily_cap=100)
        (job,) = data.followups_create(1, sequences=data.sequences_create([mailbox]), tag="roll",
                                       state=S.SCHEDULED, due_in=timedelta(days=1))
        env = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), REDIS_URL=settings.REDIS_URL,
                   PYTHONUNBUFFERED="1")
        worker = start_worker("send", env=env, log_dir=tmp_path)
        try:
            SendJob.objects.filter(pk=job.pk).update(scheduled_at=job.scheduled_at - timedelta(days=2))
            assert dispatch()["queued"] == 1
            wait_for(lambda: SendJob.objects.filter(pk=job.pk, state=S.AUTHORIZED).exists(), timeout=60,
                     what="the job to be authorized (the hand-off under way)")
            worker.proc.terminate()  # SIGTERM: what systemd and honcho send at a restart
            wait_for(lambda: not worker.alive(), timeout=30, what="the worker to finish its job and exit")
        finally:
            worker.stop()
        job.refresh_from_db()
        assert job.state == S.SUBMITTED
        assert smtp.message_ids() == [job.message_id]
