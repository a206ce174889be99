"""The IDLE watcher: one thread for every folder; a push triggers a poll; it survives a server restart,
sees a folder's new UIDVALIDITY, and picks up mailboxes configured after it started."""

from __future__ import annotations

import threading
import time

import pytest

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from inbound.ingest.view import folder_unread_mark
from inbound.models import InboundMessage
from inbound.watcher import Watcher, key, openers, run
from mailboxes.imap.errors import ImapError
from mailboxes.models import ImapCursor, Mailbox
from proving.harness import mails
from tests.races.helpers import Worker

pytestmark = pytest.mark.django_db(transaction=True)


class Watching:
    """`run` in a thread; every poll it asks for is done here and counted."""

    def __init__(self, *, idle_seconds: float = 5, refresh: float = 0.2, keeper=None):
        self.stop = threading.Event()
        self.polled = threading.Semaphore(0)
        self.said: list[str] = []
        self.looked = threading.Event()
        self.thread = Worker(lambda: run(self.stop, name=None, on_new=self._poll, refresh=refresh,
                                         idle_seconds=idle_seconds, say=self._say, keeper=keeper))

    def _poll(self, mailbox_id: int, folder: str) -> None:
        try:
            mailbox_poll(mailbox_id=mailbox_id, folders=[folder])
        except ImapError:  # recorded on the mailbox by the poll; the watcher goes on, as with enqueued polls
            pass
        finally:
            self.polled.release()

    def _say(self, text: str) -> None:
        self.said.append(text)
        self.looked.set()

    def __enter__(self) -> Watching:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(15)
        assert not self.thread.is_alive()
        assert self.thread.error is None, f"the watcher stopped: {self.thread.error!r}"


def test_idle_push_triggers_a_poll_and_reconnects_after_a_drop(imap_mailbox, dovecot):
    with Watching() as w:
        assert w.polled.acquire(timeout=10)  # the catch-up poll on connect
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
        assert w.polled.acquire(timeout=10), "IDLE did not trigger a poll"
        assert InboundMessage.objects.count() == 1

        dovecot.kill()
        dovecot.start()
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<z@y>", sender="other@example.org"))
        # Reconnect (with backoff) catches up on what arrived while the connection was down.
        caught_up = any(w.polled.acquire(timeout=10) and InboundMessage.objects.count() == 2 for _ in range(3))
        assert caught_up, "the watcher did not reconnect and catch up"


def test_a_new_uidvalidity_without_a_push_triggers_a_poll(imap_mailbox, dovecot):
    with Watching(idle_seconds=1) as w:
        assert w.polled.acquire(timeout=10)
        dovecot.reset_uidvalidity("alice", "INBOX")  # as when a folder is deleted and created again
        assert w.polled.acquire(timeout=10), "the re-select after IDLE did not see the new UIDVALIDITY"


def test_one_thread_watches_every_folder(imap_mailbox, dovecot):
    for folder in ("Bounces", "Replies"):
        dovecot.create_folder("alice", folder)
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_folders=["INBOX", "Bounces", "Replies"])
    threads_before = threading.active_count()
    with Watching() as w:
        for _ in range(3):
            assert w.polled.acquire(timeout=10)  # one catch-up poll per folder
        # The watcher and its bounded pool of openers; nothing per folder.
        assert threading.active_count() <= threads_before + 1 + openers()
        dovecot.append("alice", "Replies", mails.reply(to_message_id="<r@y>", sender="someone@example.org"))
        assert w.polled.acquire(timeout=10), "a push on the third folder did not trigger a poll"
        assert "watching 3 folders with IDLE" in w.said


def test_the_watcher_picks_up_a_mailbox_configured_after_it_started(imap_mailbox, dovecot):
    host = imap_mailbox.imap_host
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_host="")  # not an IMAP mailbox yet
    with Watching() as w:
        assert w.looked.wait(10)  # it has looked once and found nothing to watch
        Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_host=host)
        assert w.polled.acquire(timeout=10), "the new mailbox was not watched"
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
        assert w.polled.acquire(timeout=10), "IDLE on the new mailbox did not trigger a poll"
        assert w.said[0].startswith("no IMAP mailbox configured yet") and "watching 1 folder with IDLE" in w.said


def test_a_poll_asked_for_while_one_runs_is_done_by_the_running_one(imap_mailbox, dovecot, monkeypatch):
    """A push that finds the mailbox being polled is not dropped: the running poll makes a second pass."""
    import django_rq
    from django.db import close_old_connections, connection, transaction

    from inbound import tasks
    from inbound.tasks import poll_mailbox

    # The push comes once the first poll has taken the asks standing when it began (then waits for the database):
    # a push before that is read by the first pass itself, and the test would not see a second one.
    taken = threading.Event()
    asks_take = tasks._asks_take

    def asks_take_then_say(*args):
        try:
            return asks_take(*args)
        finally:
            taken.set()

    monkeypatch.setattr(tasks, "_asks_take", asks_take_then_say)

    mailbox_poll(mailbox_id=imap_mailbox.pk)  # connect: the folder's cursor starts here
    redis = django_rq.get_connection("ingest")
    results = {}

    def poll(name):
        try:
            results[name] = poll_mailbox(imap_mailbox.pk)
        finally:
            close_old_connections()

    with transaction.atomic():
        # The first poll takes the lock, then waits for this transaction: for its lock on the mailbox table on
        # PostgreSQL, for the write lock it took at BEGIN IMMEDIATE on SQLite.
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {Mailbox._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        first = Worker(lambda: poll("first"))
        first.start()
        assert taken.wait(30), "the first poll took the mailbox's lock and its asks"
        assert redis.exists(f"outreach:poll:{imap_mailbox.pk}")
        # The push of a reply that arrived meanwhile asks for a poll: the mailbox is being polled.
        poll("push")
    first.join(15)

    assert results["first"].get("rounds") == 2, results  # the running poll read the mailbox a second time
    assert results["push"] == {"skipped": "another poll of this mailbox is running; it polls again when done"}
    assert not redis.exists(f"outreach:poll:{imap_mailbox.pk}:again")


def test_folders_are_opened_one_of_each_mailbox_in_turn():
    """The logins in flight at once belong to different mailboxes, not to one account's twenty folders."""
    from types import SimpleNamespace

    from inbound.watcher import Watch, _one_of_each_mailbox_in_turn

    boxes = [SimpleNamespace(pk=pk) for pk in (1, 2, 3)]
    watches = [Watch((box.pk, folder), box, folder) for box, folders in zip(boxes, (4, 1, 2), strict=True)
               for folder in [f"F{i}" for i in range(folders)]]
    order = [(w.mailbox.pk, w.folder) for w in _one_of_each_mailbox_in_turn(watches)]
    assert order == [(1, "F0"), (2, "F0"), (3, "F0"), (1, "F1"), (3, "F1"), (1, "F2"), (1, "F3")]


def test_folders_are_handed_to_the_openers_in_batches_that_keep_every_opener_busy(settings, monkeypatch):
    """Four openers: eight folders handed at once (four logging in, four waiting their turn) with their mailboxes
    and cursors read in one round; the next batch when four have opened, not a read per folder opened."""
    import inbound.watcher as watcher_module
    from tests.factories import MailboxFactory

    settings.OUTREACH_WATCHER_OPENERS = 4
    release, started = threading.Semaphore(0), threading.Semaphore(0)

    def connect(mailbox, folder, *, read_at=None):  # the server: a login that waits for the test
        started.release()
        release.acquire()
        raise ImapError("closed by the test")

    def handed() -> int:
        return sum(w.opening is not None for w in watcher.watches.values())

    monkeypatch.setattr(watcher_module, "_connect", connect)
    boxes = [MailboxFactory(imap_host="127.0.0.1", imap_folders=["INBOX"]) for _ in range(20)]
    watcher = Watcher(on_new=lambda _pk, _folder: None)
    reads = []
    real_cursors = watcher_module._cursors
    monkeypatch.setattr(watcher_module, "_cursors", lambda watches: reads.append(len(watches)) or real_cursors(watches))
    try:
        watcher.reconcile({key(box, "INBOX"): (box, "INBOX") for box in boxes})
        watcher.step(timeout=0)
        assert (handed(), reads) == (8, [8])
        for _ in range(4):
            assert started.acquire(timeout=10)  # four logging in at once, no more
        assert not started.acquire(timeout=0.2)
        for done in range(1, 5):  # three done: still a batch waiting, nothing read; the fourth frees a batch
            release.release()
            assert started.acquire(timeout=10)  # a waiting folder's login begins at once
            deadline = time.monotonic() + 10
            while handed() > 8 - done and len(reads) == 1 and time.monotonic() < deadline:
                watcher.step(timeout=0.05)
            if done < 4:
                assert (handed(), reads) == (8 - done, [8])
        assert (handed(), reads) == (8, [8, 4])
    finally:
        for _ in range(20):
            release.release()
        watcher.close()


def test_the_number_of_openers_is_a_setting(settings):
    from inbound.watcher import Watcher

    settings.OUTREACH_WATCHER_OPENERS = 3
    watcher = Watcher(on_new=lambda _pk, _folder: None)
    try:
        assert watcher.openers._max_workers == 3
    finally:
        watcher.close()


# --- the reply view: the watcher marks what it heard of, loses nothing at the re-check, and advances while quiet ---


class Driven:
    """One folder's watch, driven a step at a time in this thread; every poll it asks for is done at once."""

    def __init__(self, mailbox, on_new=None):
        self.mailbox = mailbox
        self.asked: list[int] = []
        self.on_new = on_new or self.poll
        # No heartbeat or re-check of its own: `exchange` sends them.
        self.watcher = Watcher(on_new=self._asked, idle_seconds=3600, heartbeat_seconds=3600)

    def __enter__(self) -> Driven:
        try:
            self.watcher.reconcile({key(self.mailbox, "INBOX"): (self.mailbox, "INBOX")})
            self.watcher.step(timeout=0)  # hands the folder to an opener
            (self.watch,) = self.watcher.watches.values()
            self.watch.opening.result(timeout=10)
            self.watcher.step(timeout=0)  # takes the open connection (and asks for a catch-up poll if one is due)
            assert self.watch.session is not None
        except BaseException:
            self.watcher.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.watcher.close()

    def _asked(self, mailbox_id: int, folder: str) -> None:
        self.asked.append(mailbox_id)
        self.on_new(mailbox_id, folder)

    def poll(self, mailbox_id: int, folder: str) -> None:
        mailbox_poll(mailbox_id=mailbox_id, folders=[folder])

    def exchange(self, *, examine: bool = False, within: float = 10.0) -> None:
        """A heartbeat (DONE, NOOP, IDLE) or, with `examine`, the re-check (DONE, EXAMINE, IDLE), sent now; the
        watcher steps until it is answered, or its connection fails."""
        watch = self.watch
        watch.beat_at = 0.0
        if examine:
            watch.examine_at = 0.0
        self.watcher.next_round = 0.0
        self.watcher.step(timeout=0)
        deadline = time.monotonic() + within
        while watch.line is not None and watch.line.busy:
            assert time.monotonic() < deadline, "the exchange was not answered"
            self.watcher.step(timeout=0.1)

    def recheck(self) -> None:
        self.exchange(examine=True)

    def cursor(self) -> ImapCursor:
        return ImapCursor.objects.get(mailbox=self.mailbox, folder="INBOX")


def test_new_mail_pushed_by_idle_marks_the_folder_before_the_poll_is_asked_for(imap_mailbox, dovecot):
    marks_when_asked = []

    def on_new(mailbox_id: int, folder: str) -> None:
        marks_when_asked.append(ImapCursor.objects.get(mailbox_id=mailbox_id, folder=folder).unread_since)
        mailbox_poll(mailbox_id=mailbox_id, folders=[folder])

    mailbox_poll(mailbox_id=imap_mailbox.pk)  # the folder's cursor starts here: nothing is unread
    with Driven(imap_mailbox, on_new=on_new) as driven:
        assert marks_when_asked == []  # no catch-up poll on connect: the folder was read through
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
        for _ in range(50):  # each step waits for the push on the socket (at most 0.2 s)
            driven.watcher.step(timeout=0.2)
            if marks_when_asked:
                break
        assert len(marks_when_asked) == 1, "IDLE did not trigger a poll"
        assert marks_when_asked[0] is not None, "the poll was asked for before the folder was marked unread"
        cursor = driven.cursor()
        # The poll read the message and lifted the mark; the folder is read through when the pass began.
        assert InboundMessage.objects.count() == 1
        assert cursor.unread_since is None and cursor.read_through >= marks_when_asked[0]


def test_a_connection_asks_for_a_catch_up_poll_only_where_there_is_something_to_read(imap_mailbox, dovecot):
    """A folder read through asks for no poll when its connection opens (no login of a poll on the server); one
    whose SELECT shows mail beyond the cursor, or with an unread mark standing, asks for one."""
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    with Driven(imap_mailbox) as driven:
        assert driven.asked == []
    dovecot.append("alice", "INBOX", mails.reply(to_message_id="<a@y>", sender="someone@example.org"))
    with Driven(imap_mailbox) as driven:  # arrived while nobody watched: UIDNEXT is beyond the cursor
        assert driven.asked == [imap_mailbox.pk]
        assert InboundMessage.objects.count() == 1
    folder_unread_mark(mailbox_id=imap_mailbox.pk, folder="INBOX")  # heard of by a watcher that then died
    with Driven(imap_mailbox) as driven:
        assert driven.asked == [imap_mailbox.pk]
        assert driven.cursor().unread_since is None  # the poll read the folder and lifted the mark


def test_mail_no_push_announced_is_found_by_the_recheck_and_polled(imap_mailbox, dovecot):
    """Mail that arrives between a DONE and the EXAMINE after it is announced by no IDLE: the EXAMINE's UIDNEXT,
    beyond the cursor, shows it (played here by a push the watcher never reads)."""
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    with Driven(imap_mailbox) as driven:
        driven.asked.clear()
        dovecot.append("alice", "INBOX", mails.reply(to_message_id="<r@y>", sender="someone@example.org"))
        deadline = time.monotonic() + 10
        while not driven.watch.line.read().pushed:  # the push, taken away from the watcher
            assert time.monotonic() < deadline, "no push"
            time.sleep(0.05)
        driven.recheck()
        assert driven.asked == [imap_mailbox.pk], "the re-check did not poll the mail beyond the cursor"
        assert InboundMessage.objects.count() == 1
        assert driven.cursor().unread_since is None


def test_a_healthy_quiet_watch_advances_the_read_through_time_and_a_marked_folder_is_not(imap_mailbox, dovecot):
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    with Driven(imap_mailbox) as driven:
        polled = driven.cursor().read_through
        assert polled is not None
        folder_unread_mark(mailbox_id=imap_mailbox.pk, folder="INBOX")  # heard of, not read yet
        for _ in range(3):
            driven.recheck()
        assert driven.cursor().read_through == polled, "a folder with unread mail was advanced"

        mailbox_poll(mailbox_id=imap_mailbox.pk)  # reads it: the mark is lifted
        polled = driven.cursor().read_through
        assert driven.cursor().unread_since is None
        begun = db_now()
        driven.recheck()  # quiet: read through the time read before its EXAMINE was sent
        advanced = driven.cursor().read_through
        assert advanced > polled, "a healthy, quiet watch did not advance the read-through time"
        assert advanced >= begun
        begun = db_now()
        driven.exchange()  # a heartbeat: the same, with a NOOP
        assert driven.cursor().read_through >= begun > advanced
        advanced = driven.cursor().read_through
        assert driven.asked == []  # no poll: nothing new was heard of, and the folder was read on connect

        dovecot.kill()  # the connection breaks: the view stays where it was
        driven.recheck()
        assert driven.watch.session is None
        assert driven.cursor().read_through == advanced


def test_a_folder_whose_newest_mail_left_before_it_was_read_still_advances(imap_mailbox, dovecot):
    """UIDNEXT stays beyond the last ingested UID when the newest mail was moved away unread: what the folder
    holds decides, as it does for a poll."""
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    with dovecot.client("alice") as client:
        client.select_folder("INBOX")
        for n in range(2):
            client.append("INBOX", mails.reply(to_message_id=f"<m{n}@y>", sender="someone@example.org"))
        client.delete_messages(client.search("ALL"))
        client.expunge()
    with Driven(imap_mailbox) as driven:
        cursor = driven.cursor()
        assert cursor.last_uid == 0 and cursor.unread_since is None and cursor.read_through is not None
        polled = cursor.read_through
        for _ in range(3):
            driven.recheck()
        assert driven.cursor().read_through > polled
