"""The IDLE watcher triggers a poll when the server pushes new mail, and survives a server restart."""

from __future__ import annotations

import threading

import pytest

from mailboxes.ingest.poll import mailbox_poll
from mailboxes.management.commands.watch_mailboxes import watch
from mailboxes.models import InboundMessage
from proving.harness import mails
from tests.races.helpers import Worker

pytestmark = pytest.mark.django_db(transaction=True)


def test_idle_push_triggers_a_poll_and_reconnects_after_a_drop(imap_mailbox, dovecot):
    stop = threading.Event()
    polled = threading.Semaphore(0)

    def on_new(mailbox_id: int) -> None:
        mailbox_poll(mailbox_id=mailbox_id)
        polled.release()

    watcher = Worker(lambda: watch(imap_mailbox, "INBOX", stop, on_new, idle_seconds=5))
    watcher.start()
    try:
        assert polled.acquire(timeout=10)  # the catch-up poll on connect
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
        assert polled.acquire(timeout=10), "IDLE did not trigger a poll"
        assert InboundMessage.objects.count() == 1

        dovecot.kill()
        dovecot.start()
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<z@y>", sender="other@example.org"))
        # Reconnect (with backoff) catches up on what arrived while the connection was down.
        deadline_ok = any(polled.acquire(timeout=10) and InboundMessage.objects.count() == 2 for _ in range(3))
        assert deadline_ok, "the watcher did not reconnect and catch up"
    finally:
        stop.set()
        dovecot.kill()  # wake the IDLE connection so the thread ends
        watcher.join(15)


def test_the_watcher_picks_up_a_mailbox_configured_after_it_started(imap_mailbox, dovecot):
    from mailboxes.management.commands.watch_mailboxes import run
    from mailboxes.models import Mailbox

    host = imap_mailbox.imap_host
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_host="")  # not an IMAP mailbox yet
    stop = threading.Event()
    polled = threading.Semaphore(0)
    said: list[str] = []
    looked = threading.Event()

    def say(text: str) -> None:
        said.append(text)
        looked.set()

    def on_new(mailbox_id: int) -> None:
        mailbox_poll(mailbox_id=mailbox_id)
        polled.release()

    runner = Worker(lambda: run(stop, name=None, on_new=on_new, refresh=0.2, idle_seconds=5, say=say))
    runner.start()
    try:
        assert looked.wait(10)  # it has looked once and found nothing to watch
        Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_host=host)
        assert polled.acquire(timeout=10), "the new mailbox was not watched"
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
        assert polled.acquire(timeout=10), "IDLE on the new mailbox did not trigger a poll"
        assert said[0].startswith("no IMAP mailbox configured yet") and "watching 1 folders with IDLE" in said
    finally:
        stop.set()
        dovecot.kill()
        runner.join(15)
