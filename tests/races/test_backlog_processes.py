"""Replies during a send backlog, on the processes `scripts/run` starts (proving.harness.backlog).

Seven follow-ups are queued behind a slow SMTP server (aiosmtpd, 3 s per message). Just after the first
one has left, three people whose follow-ups are still queued answer step 1: their replies are delivered
into the mailbox's INBOX on a real Dovecot (IMAP APPEND). The real IDLE watcher hears them, the real
`ingest` worker polls, the real `send` worker's final check decides. Those three are stopped and none of
their follow-ups leaves; the four others get theirs, once each.

Layouts (proving.harness.backlog.LAYOUTS):
- `scripts/run` (the product): the poll runs on a worker of its own, beside the send in progress. Here that
  alone keeps the repliers' follow-ups back (the case passes with the unread mark removed): the poll has
  committed the stop long before the send in progress ends.
- `one worker`: the poll waits behind every queued send (one worker serves `send` first), so the only
  thing between the repliers and their follow-ups is the watcher's unread mark and the final check's hold
  on it (sequences.reply_view, View.UNREAD).
- `before`: one worker, and a watcher that marks nothing (`watch_unmarked`): the stack #35 measured. It
  shows the test can fail: the first replier's follow-up is handed off seconds after the reply reached
  the inbox. Without the unread mark, the `one worker` layout is this one: deleting the
  `folder_unread_mark` call in `inbound.watcher.Watcher._new_mail` makes the `one worker` case fail the
  same way.
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.db import connection

from proving.harness import backlog, data
from proving.harness.smtp import Behaviour, SmtpServer
from proving.harness.stack import database_url, wait_for
from sequences.models import Enrollment, SendJob, TimelineEvent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
S = SendJob.State
FOLLOW_UPS = 7  # the sends take FOLLOW_UPS x 3 s: the test's length
REPLIERS = (2, 4, 6)  # queue positions of the people who reply: still queued when they do, the last one last
TAG = "bk"


@pytest.fixture
def slow_smtp():
    with SmtpServer(behaviour=Behaviour(data_delay=3.0)) as server:
        yield server


@pytest.fixture
def env(redis_conn):
    """What the processes run with: this test's database and Redis index, the mailbox's IMAP password, and
    held follow-ups due again after 2 s (the product's default is 10 s)."""
    return dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), REDIS_URL=settings.REDIS_URL,
                OUTREACH_SECRET_TEST_IMAP="alicepw", OUTREACH_REPLY_VIEW_RECHECK_SECONDS="2", PYTHONUNBUFFERED="1")


# `before` is the test's control (that it can fail): what it shows is the watcher, not the database.
@pytest.mark.parametrize("layout", ["scripts/run", "one worker", pytest.param(
    "before", marks=pytest.mark.one_database("a control of the test itself: the watcher that marks nothing"))])
def test_replies_during_a_send_backlog_stop_their_people_before_any_follow_up_leaves(dovecot, slow_smtp, env,
                                                                                    tmp_path, layout):
    mailbox = data.mailbox_create(
        name="backlog", address="sales0@bench.outreach.test", display_name="Sam", smtp_port=slow_smtp.port,
        daily_cap=10**6, imap_host=dovecot.host, imap_port=dovecot.port, imap_username="alice",
        imap_password_env="OUTREACH_SECRET_TEST_IMAP", imap_folders=["INBOX"])
    jobs = backlog.followups_waiting(mailbox=mailbox, count=FOLLOW_UPS, tag=TAG)
    repliers = {i: jobs[i] for i in REPLIERS}
    with backlog.processes(layout, mailbox=mailbox, env=env, log_dir=tmp_path):
        backlog.release(jobs)
        wait_for(lambda: backlog.submitted(jobs) >= 1, timeout=30, what="the first follow-up to leave")
        waiting = SendJob.objects.filter(pk__in=[j.pk for j in repliers.values()], state=S.QUEUED).count()
        assert waiting == len(REPLIERS), "a replier's follow-up was taken before the reply: no race to show"
        replied_at = {i: backlog.reply_append(dovecot, "alice", tag=TAG, index=i) for i in REPLIERS}
        if layout == "before":
            first = repliers[REPLIERS[0]]
            wait_for(lambda: SendJob.objects.filter(pk=first.pk, state=S.SUBMITTED).exists(), timeout=30,
                     what="the first replier's follow-up to leave")
            first.refresh_from_db()
            assert first.authorized_at.timestamp() > replied_at[REPLIERS[0]]  # handed off after the reply
            assert first.message_id in slow_smtp.message_ids()
            return
        wait_for(lambda: not SendJob.objects.filter(pk__in=[j.pk for j in jobs],
                                                    state__in=(S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED))
                 .exists(), timeout=120, what="every follow-up to be sent or canceled")

    received = slow_smtp.message_ids()
    for i, job in repliers.items():
        job.refresh_from_db()
        enrollment = Enrollment.objects.get(pk=job.enrollment_id)
        assert (enrollment.status, enrollment.stop_reason) == ("stopped", "replied"), i
        assert (job.state, job.cancel_reason, job.authorized_at) == (S.CANCELED, "replied", None), i
        assert job.message_id not in received, i
    others = [j for i, j in enumerate(jobs) if i not in repliers]
    assert SendJob.objects.filter(pk__in=[j.pk for j in others], state=S.SUBMITTED).count() == len(others)
    assert sorted(received) == sorted(j.message_id for j in others)  # each once
    held = TimelineEvent.objects.filter(job__in=[j.pk for j in jobs], kind="job_deferred",
                                        data__reason="reply_view").count()
    if layout == "one worker":
        assert held, "the poll waited behind the sends, so the hold must have kept follow-ups back"
