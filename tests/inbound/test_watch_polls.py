"""What a start of many folders costs the pollers: a mailbox's folders open one after another, and the polls
they ask for merge, at most one waiting in the queue per mailbox, however many folders ask."""

from __future__ import annotations

import os
import time

import django_rq
import pytest
from rq import SimpleWorker

from inbound.ingest.poll import mailbox_poll
from inbound.models import InboundMessage
from inbound.tasks import poll_lock
from inbound.watcher import Watcher, enqueue_poll_merged, key
from mailboxes.models import Mailbox
from proving.bench.watcher import tcp_connections
from proving.harness import mails

pytestmark = pytest.mark.django_db(transaction=True)


def polls_waiting() -> int:
    return django_rq.get_queue("ingest").count


def polls_run() -> None:
    queue = django_rq.get_queue("ingest")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)


def test_asks_merge_into_the_poll_that_waits_and_a_pass_that_begins_takes_the_next(imap_mailbox, dovecot,
                                                                                   redis_conn):
    mailbox_poll(mailbox_id=imap_mailbox.pk)  # the folder's cursor starts here
    for _ in range(20):  # twenty folders opened, each asking for its catch-up poll
        enqueue_poll_merged(imap_mailbox.pk)
    assert polls_waiting() == 1
    dovecot.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
    enqueue_poll_merged(imap_mailbox.pk)  # a push after the ask: the waiting poll has not begun reading
    assert polls_waiting() == 1
    polls_run()
    assert InboundMessage.objects.count() == 1

    enqueue_poll_merged(imap_mailbox.pk)  # the pass began after the last ask: this one needs a poll of its own
    assert polls_waiting() == 1


def test_an_ask_while_the_mailbox_is_polled_is_left_to_the_running_poll(imap_mailbox, redis_conn):
    lock = poll_lock(imap_mailbox.pk)
    assert lock.acquire()  # a poll of the mailbox runs
    try:
        enqueue_poll_merged(imap_mailbox.pk)
        assert polls_waiting() == 0
        # The flag the running poll looks for once its pass is done: it reads the mailbox again.
        assert redis_conn.exists(f"outreach:poll:{imap_mailbox.pk}:again")
    finally:
        lock.release()


def test_a_mailbox_has_one_connection_being_opened_at_a_time(imap_mailbox, dovecot):
    folders = ["INBOX", "Bounces", "Replies", "Other"]
    for folder in folders[1:]:
        dovecot.create_folder("alice", folder)
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_folders=folders)
    box = Mailbox.objects.get(pk=imap_mailbox.pk)
    asked: list[tuple[int, str]] = []
    watcher = Watcher(on_new=lambda pk, folder: asked.append((pk, folder)), idle_seconds=3600,
                      heartbeat_seconds=3600)
    try:
        watcher.reconcile({key(box, folder): (box, folder) for folder in folders})
        most = 0
        deadline = time.monotonic() + 20
        while any(w.session is None for w in watcher.watches.values()):
            assert time.monotonic() < deadline, "the folders were not all opened"
            watcher.step(timeout=0.2)
            most = max(most, sum(1 for w in watcher.watches.values() if w.opening is not None))
        assert most == 1  # four openers, one mailbox: its logins one after another
        # A catch-up poll of its folder asked for per connection (merged when queued).
        assert sorted(asked) == sorted((box.pk, folder) for folder in folders)
        assert tcp_connections(os.getpid(), dovecot.port) == len(folders)
    finally:
        watcher.close()
    # The sockets the IDLE lines took over from imaplib are closed with their watches.
    assert tcp_connections(os.getpid(), dovecot.port) == 0
