"""A refused IMAP login, as the worker's log and the mailbox's health show it (real Dovecot, a real RQ worker):
one log line with the server's words, no traceback, no retry; "failures in a row" counts the logins that were
refused, not the polls that waited for the next allowed attempt."""

from __future__ import annotations

import logging

import django_rq
import pytest
from rq import SimpleWorker

from inbound.ingest.poll import mailbox_poll
from inbound.tasks import enqueue_poll
from mailboxes.imap.errors import ImapAuthError
from mailboxes.models import Mailbox

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_refused_login_is_one_line_in_the_worker_log_and_recorded_on_the_mailbox(imap_mailbox, dovecot,
                                                                                   monkeypatch, redis_conn, caplog):
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "wrong")
    enqueue_poll(imap_mailbox.pk)
    queue = django_rq.get_queue("ingest")
    (job,) = queue.jobs
    caplog.set_level(logging.INFO)
    SimpleWorker([queue], connection=queue.connection).work(burst=True)

    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)
    assert not [r for r in caplog.records if r.name.startswith("rq") and r.levelno >= logging.WARNING]
    refused = [r for r in caplog.records if "ImapAuthError" in r.getMessage()]
    assert len(refused) == 1, [r.getMessage() for r in refused]
    line = refused[0].getMessage()
    assert line.startswith(f"poll of mailbox {imap_mailbox.name} failed: ImapAuthError: ")
    assert "AUTHENTICATIONFAILED" in line or "Authentication failed" in line, line  # the server's words
    job.refresh()
    assert job.get_status() == "finished" and job.return_value()["login_refused"]
    assert queue.count == 0 and not queue.scheduled_job_registry.get_job_ids(), "no retry of a refused login"
    mailbox = Mailbox.objects.get(pk=imap_mailbox.pk)
    assert (mailbox.poll_failures, mailbox.imap_login_refusals) == (1, 1)
    assert "ImapAuthError" in mailbox.last_poll_error and mailbox.imap_next_login_at is not None


def test_failures_in_a_row_count_the_refused_logins_not_the_polls_that_waited(imap_mailbox, dovecot, monkeypatch,
                                                                              settings):
    settings.OUTREACH_PROBE_INTERVALS = [60, 300]
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "wrong")
    with pytest.raises(ImapAuthError):
        mailbox_poll(mailbox_id=imap_mailbox.pk)
    for _ in range(12):  # the scheduler's polls within the interval: no login, so no failure of one
        assert "next attempt at" in mailbox_poll(mailbox_id=imap_mailbox.pk).error
    mailbox = Mailbox.objects.get(pk=imap_mailbox.pk)
    assert (mailbox.poll_failures, mailbox.imap_login_refusals) == (1, 1)
    assert "ImapAuthError" in mailbox.last_poll_error, "the refusal's words stay, not the wait's"

    monkeypatch.delenv("OUTREACH_SECRET_TEST_IMAP")  # no password at all: no attempt, nothing counted
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_next_login_at=None, imap_login_refusals=0,
                                                      poll_failures=0)
    assert "no login attempted" in mailbox_poll(mailbox_id=imap_mailbox.pk).error
    assert Mailbox.objects.get(pk=imap_mailbox.pk).poll_failures == 0
