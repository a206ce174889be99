"""A push polls the folder it was heard in, and only that folder: its cursor and reply view move, the other
folders' stay. Asks merge per mailbox and folder; a poll of every folder is asked for on its own and reads them
all; a job enqueued without a folder reads every folder."""

from __future__ import annotations

import threading
import time

import django_rq
import pytest
from django.db import close_old_connections, connection, transaction
from rq import SimpleWorker

from inbound.ingest.poll import mailbox_poll
from inbound.models import InboundMessage
from inbound.tasks import poll_ask, poll_folders_key, poll_lock, poll_mailbox
from inbound.watcher import Watcher, enqueue_poll_merged, key
from mailboxes.models import ImapCursor, Mailbox
from proving.harness import mails
from sequences.models import SendJob
from tests.inbound.test_replies import sent as first_step_sent
from tests.races.helpers import Worker

pytestmark = pytest.mark.django_db(transaction=True)
FOLDERS = ["INBOX", "Replies"]


@pytest.fixture
def two_folders(imap_mailbox, dovecot, redis_conn) -> Mailbox:
    """alice's INBOX and Replies, both read for replies; each folder's cursor starts here."""
    dovecot.create_folder("alice", "Replies")
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_folders=FOLDERS)
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    return Mailbox.objects.get(pk=imap_mailbox.pk)


def read_through(mailbox: Mailbox) -> dict:
    return dict(ImapCursor.objects.filter(mailbox=mailbox).values_list("folder", "read_through"))


def polls_waiting() -> list[tuple]:
    return [job.args for job in django_rq.get_queue("ingest").jobs]


def polls_run() -> list[dict]:
    """Run the polls waiting, here; what each returned."""
    queue = django_rq.get_queue("ingest")
    ids = list(queue.job_ids)
    SimpleWorker([queue], connection=queue.connection).work(burst=True)
    return [queue.fetch_job(job_id).return_value() for job_id in ids]


def test_a_push_in_one_folder_polls_that_folder_only_and_stops_the_person(two_folders, dovecot):
    enrollment, job = first_step_sent(two_folders)
    asked: list[tuple[int, str]] = []

    def on_new(mailbox_id: int, folder: str) -> None:  # as `watch_mailboxes` asks, seen on the way
        asked.append((mailbox_id, folder))
        enqueue_poll_merged(mailbox_id, folder)

    watcher = Watcher(on_new=on_new, idle_seconds=3600, heartbeat_seconds=3600)  # no heartbeat moves a view
    try:
        watcher.reconcile({key(two_folders, folder): (two_folders, folder) for folder in FOLDERS})
        deadline = time.monotonic() + 20
        while not all(watch.line is not None for watch in watcher.watches.values()):
            assert time.monotonic() < deadline, "the folders were not all opened"
            watcher.step(timeout=0.2)
        polls_run()  # the catch-up polls of folders never read before
        before = read_through(two_folders)
        asked.clear()

        dovecot.append("alice", "Replies", mails.reply(to_message_id=job.message_id))
        deadline = time.monotonic() + 10
        while not asked:
            assert time.monotonic() < deadline, "IDLE did not ask for a poll"
            watcher.step(timeout=0.2)
        assert asked == [(two_folders.pk, "Replies")]
        marked = ImapCursor.objects.get(mailbox=two_folders, folder="Replies").unread_since
        assert marked is not None  # marked unread before the poll was asked for
        assert polls_waiting() == [(two_folders.pk, "Replies")]
        (done,) = polls_run()
    finally:
        watcher.close()

    assert set(done["folders"]) == {"Replies"} and done["fetched"] == 1, done
    after = read_through(two_folders)
    assert after["INBOX"] == before["INBOX"]  # INBOX was not read: its view stays where its last pass left it
    assert after["Replies"] >= marked > before["Replies"]
    assert ImapCursor.objects.get(mailbox=two_folders, folder="Replies").unread_since is None
    inbound = InboundMessage.objects.get()
    assert (inbound.folder, inbound.kind, inbound.job_id) == ("Replies", "human_reply", job.pk)
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "replied")
    assert enrollment.jobs.exclude(pk=job.pk).get().state == SendJob.State.CANCELED


def test_asks_merge_per_folder_and_a_poll_of_every_folder_waiting_covers_them(two_folders):
    pk = two_folders.pk
    for _ in range(3):
        enqueue_poll_merged(pk, "Replies")
    assert polls_waiting() == [(pk, "Replies")]  # one poll of the folder waits, however often it asks
    enqueue_poll_merged(pk, "INBOX")  # another folder: a poll of its own
    assert polls_waiting() == [(pk, "Replies"), (pk, "INBOX")]
    polls_run()

    enqueue_poll_merged(pk)  # every folder
    enqueue_poll_merged(pk, "Replies")  # covered by the poll of every folder waiting
    enqueue_poll_merged(pk)
    assert polls_waiting() == [(pk,)]


def test_a_poll_of_every_folder_asked_after_a_folders_reads_every_folder(two_folders, dovecot):
    pk = two_folders.pk
    dovecot.append("alice", "INBOX", mails.reply(to_message_id="<a@y>", sender="one@example.org"))
    dovecot.append("alice", "Replies", mails.reply(to_message_id="<b@y>", sender="two@example.org"))
    enqueue_poll_merged(pk, "Replies")
    enqueue_poll_merged(pk)  # not merged into the folder's poll: that one reads Replies only
    assert polls_waiting() == [(pk, "Replies"), (pk,)]
    before = read_through(two_folders)

    _, every = polls_run()

    assert set(every["folders"]) == set(FOLDERS)
    assert sorted(InboundMessage.objects.values_list("folder", flat=True)) == sorted(FOLDERS)
    after = read_through(two_folders)
    assert all(after[folder] > before[folder] for folder in FOLDERS)


def test_a_job_enqueued_without_a_folder_reads_every_folder(two_folders, dovecot):
    """A job left in the queue by a version that passed no folder: a poll of every folder."""
    dovecot.append("alice", "Replies", mails.reply(to_message_id="<b@y>", sender="two@example.org"))
    django_rq.get_queue("ingest").enqueue("inbound.tasks.poll_mailbox", two_folders.pk)
    before = read_through(two_folders)

    (done,) = polls_run()

    assert set(done["folders"]) == set(FOLDERS) and done["fetched"] == 1
    after = read_through(two_folders)
    assert all(after[folder] > before[folder] for folder in FOLDERS)


@pytest.mark.parametrize(("ask", "second_pass"), [("Replies", {"Replies"}), (None, set(FOLDERS))])
def test_an_ask_while_a_folder_is_polled_is_read_by_the_running_poll(two_folders, redis_conn, ask, second_pass):
    """A push of another folder, or an ask for every folder, that finds a poll of INBOX running enqueues nothing:
    the running poll reads what was asked in a second pass."""
    pk = two_folders.pk
    results = {}

    def poll() -> None:
        try:
            results["first"] = poll_mailbox(pk, "INBOX")
        finally:
            close_old_connections()

    poll_ask(pk, "INBOX")  # taken by the poll as its pass begins: then it holds the lock and has taken the asks
    with transaction.atomic():
        # The poll takes the lock and the asks standing, then waits for this transaction: for its lock on the
        # mailbox table on PostgreSQL, for the write lock it took at BEGIN IMMEDIATE on SQLite.
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {Mailbox._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        first = Worker(poll)
        first.start()
        for _ in range(200):
            if not redis_conn.exists(poll_folders_key(pk)):
                break
            threading.Event().wait(0.02)
        assert poll_lock(pk).locked()
        enqueue_poll_merged(pk, ask)
        assert polls_waiting() == []  # left to the running poll
    first.join(15)

    assert results["first"]["rounds"] == 2 and set(results["first"]["folders"]) == second_pass, results
    assert not redis_conn.exists(poll_folders_key(pk)) and not redis_conn.exists(f"outreach:poll:{pk}:again")


def test_a_pass_of_one_folder_keeps_the_other_folders_errors(imap_mailbox, dovecot):
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_folders=["INBOX", "Missing"])
    mailbox_poll(mailbox_id=imap_mailbox.pk)
    said = Mailbox.objects.get(pk=imap_mailbox.pk).last_poll_error
    assert said.startswith("folder Missing: folder Missing not found")

    mailbox_poll(mailbox_id=imap_mailbox.pk, folders=["INBOX"])

    assert Mailbox.objects.get(pk=imap_mailbox.pk).last_poll_error == said
    assert ImapCursor.objects.get(mailbox=imap_mailbox, folder="Missing").failures == 1  # not read again
