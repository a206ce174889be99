"""The watcher's heartbeat: a quiet, healthy connection keeps the folder's replies-read-through time within
seconds of real time; an answer that shows mail beyond the cursor, or no answer at all, moves nothing."""

from __future__ import annotations

import os
import signal
import time

import pytest

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from mailboxes.models import ImapCursor
from proving.harness import mails
from tests.inbound.test_watch import Driven, Watching

pytestmark = pytest.mark.django_db(transaction=True)


def lag_seconds(mailbox) -> float:
    """How far the folder's replies-read-through time trails the database clock now."""
    read_through = ImapCursor.objects.get(mailbox=mailbox, folder="INBOX").read_through
    return (db_now() - read_through).total_seconds()


def test_a_quiet_healthy_watch_keeps_the_view_within_seconds_of_real_time(imap_mailbox, dovecot, settings):
    """Every heartbeat answered with nothing new moves the view to when it was sent; the re-check (a minute
    here) is not what moves it."""
    settings.OUTREACH_WATCHER_HEARTBEAT_SECONDS = 0.5
    with Watching(idle_seconds=60) as w:
        assert w.polled.acquire(timeout=10)  # the catch-up poll on connect reads the folder once
        time.sleep(1.5)  # the first heartbeats
        lags = []
        for _ in range(20):  # 5 s, twice the bound below
            lags.append(lag_seconds(imap_mailbox))
            time.sleep(0.25)
    assert max(lags) <= 2.5, f"the view trailed real time by up to {max(lags):.2f} s: {lags}"


def test_an_answer_that_shows_mail_beyond_the_cursor_advances_nothing(imap_mailbox, dovecot):
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    with Driven(imap_mailbox, on_new=lambda _pk, _folder: None) as driven:  # no poll reads what arrives
        driven.exchange()
        quiet = driven.cursor().read_through

        # Mail arrives, the heartbeat goes at once: announced in its answer or just before it, never advanced.
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
        driven.exchange()
        for _ in range(3):
            driven.exchange()
        assert driven.cursor().unread_since is not None and driven.asked
        assert driven.cursor().read_through == quiet

        # The mark is lifted, the mail still unread (a poll that read the folder just before it arrived): each
        # heartbeat's search after the cursor finds it, and the view stays; the folder is marked and polled again.
        ImapCursor.objects.filter(mailbox=imap_mailbox, folder="INBOX").update(unread_since=None)
        driven.asked.clear()
        driven.exchange()
        driven.exchange()
        assert driven.cursor().read_through == quiet, "a heartbeat advanced past mail beyond the cursor"
        assert driven.asked == [imap_mailbox.pk] and driven.cursor().unread_since is not None

        mailbox_poll(mailbox_id=imap_mailbox.pk)  # read: the next heartbeat's search finds nothing beyond it
        begun = db_now()
        driven.exchange()
        assert driven.cursor().read_through >= begun


def test_a_connection_that_stops_answering_advances_nothing(imap_mailbox, dovecot):
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    with Driven(imap_mailbox) as driven:
        driven.exchange()
        quiet = driven.cursor().read_through
        os.killpg(dovecot.master_pid, signal.SIGSTOP)  # the server and its connections hang, none is closed
        try:
            driven.watch.line.timeout = 1.0
            driven.exchange(within=10)
            assert driven.watch.session is None, "an unanswered heartbeat did not give the connection up"
            assert driven.cursor().read_through == quiet
        finally:
            os.killpg(dovecot.master_pid, signal.SIGCONT)


def test_a_folder_with_unread_mail_is_not_advanced_by_heartbeats(imap_mailbox, dovecot):
    """The unread mark holds the view where it was until a poll reads the folder, whatever the heartbeats say."""
    from inbound.ingest.view import folder_unread_mark

    mailbox_poll(mailbox_id=imap_mailbox.pk)
    with Driven(imap_mailbox) as driven:
        polled = driven.cursor().read_through
        folder_unread_mark(mailbox_id=imap_mailbox.pk, folder="INBOX")
        for _ in range(3):
            driven.exchange()
        assert driven.cursor().read_through == polled


def test_heartbeats_and_pushes_over_starttls(mailbox, tmp_path, monkeypatch):
    """The same over TLS (STARTTLS, a private CA): the non-blocking reads drain what TLS has decrypted."""
    from inbound.models import InboundMessage
    from proving.harness.dovecot import DEFAULT_USERS, Dovecot
    from proving.harness.tls import make_certificates

    certs = make_certificates(tmp_path)
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", DEFAULT_USERS["alice"])
    with Dovecot(DEFAULT_USERS, certificates=certs) as server:
        mailbox.imap_host, mailbox.imap_port, mailbox.imap_security = server.host, server.port, "starttls"
        mailbox.imap_username, mailbox.imap_password_env = "alice", "OUTREACH_SECRET_TEST_IMAP"
        mailbox.ca_file, mailbox.imap_folders = str(certs.ca_file), ["INBOX"]
        mailbox.save()
        mailbox_poll(mailbox_id=mailbox.pk)
        with Driven(mailbox) as driven:
            begun = db_now()
            driven.exchange()
            driven.exchange(examine=True)
            assert driven.cursor().read_through >= begun
            driven.asked.clear()
            server.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
            deadline = time.monotonic() + 10
            while not driven.asked:
                assert time.monotonic() < deadline, "no push over TLS"
                driven.watcher.step(timeout=0.2)
            assert InboundMessage.objects.count() == 1
            begun = db_now()
            driven.exchange()  # the search after the push finds nothing beyond the cursor: advanced again
            assert driven.cursor().read_through >= begun
