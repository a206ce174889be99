"""The reading side never logs in without a password, and never in a burst after a refusal (real Dovecot)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from mailboxes.imap.errors import ImapAuthError
from mailboxes.models import Mailbox

pytestmark = pytest.mark.django_db(transaction=True)


def login_attempts(dovecot) -> int:
    """Connections that reached Dovecot's login process: a successful or a refused login each leave a line."""
    return sum(1 for line in dovecot.log().splitlines()
               if "imap-login:" in line and ("Login:" in line or "auth failed" in line))


def test_an_empty_or_unset_password_makes_no_login_attempt(imap_mailbox, dovecot, monkeypatch):
    for value in ("", None):
        if value is None:
            monkeypatch.delenv("OUTREACH_SECRET_TEST_IMAP")
        else:
            monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", value)
        result = mailbox_poll(mailbox_id=imap_mailbox.pk)
        assert "OUTREACH_SECRET_TEST_IMAP is empty or not set: no login attempted" in result.error
    assert login_attempts(dovecot) == 0
    mailbox = Mailbox.objects.get(pk=imap_mailbox.pk)
    # No attempt, so no failure in a row: the poll's error says why nothing was read.
    assert mailbox.poll_failures == 0 and "no login attempted" in mailbox.last_poll_error


def test_a_refused_login_is_tried_again_once_per_interval_of_the_ladder(imap_mailbox, dovecot, monkeypatch,
                                                                       settings):
    settings.OUTREACH_PROBE_INTERVALS = [60, 300]
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "wrong")
    with pytest.raises(ImapAuthError):
        mailbox_poll(mailbox_id=imap_mailbox.pk)
    for _ in range(5):  # the scheduler's polls and the task's retries within the interval
        assert "next attempt at" in mailbox_poll(mailbox_id=imap_mailbox.pk).error
    assert login_attempts(dovecot) == 1

    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_next_login_at=db_now() - timedelta(seconds=1))
    with pytest.raises(ImapAuthError):
        mailbox_poll(mailbox_id=imap_mailbox.pk)
    assert login_attempts(dovecot) == 2
    mailbox = Mailbox.objects.get(pk=imap_mailbox.pk)
    assert mailbox.imap_login_refusals == 2
    assert timedelta(seconds=290) < mailbox.imap_next_login_at - db_now() <= timedelta(seconds=300)

    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")  # the operator fixed the password
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_next_login_at=db_now() - timedelta(seconds=1))
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    mailbox = Mailbox.objects.get(pk=imap_mailbox.pk)
    assert (mailbox.imap_login_refusals, mailbox.imap_next_login_at, mailbox.poll_failures) == (0, None, 0)


def test_the_watcher_asks_the_same_gate_before_it_logs_in(imap_mailbox, dovecot, monkeypatch):
    """A refused login holds the IDLE watcher too: its reconnects within the interval attempt no login."""
    from inbound.watcher import _connect

    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "wrong")
    for _ in range(4):
        with pytest.raises(ImapAuthError):
            _connect(imap_mailbox, "INBOX")
    assert login_attempts(dovecot) == 1
    assert Mailbox.objects.get(pk=imap_mailbox.pk).imap_login_refusals == 1
