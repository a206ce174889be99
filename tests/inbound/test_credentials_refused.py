"""Credentials refused at the IMAP server show at once, on every surface, whatever else the mailbox knows.

Real Dovecot, its passwd file rewritten as an administrator changes a password, and the real IDLE watcher: Dovecot
keeps a session that logged in before the change, so the watcher's connection still reads and its quiet re-checks
still advance the folder's read-through time, while every new login is refused. A refused login on any connection
(the poll, a new IDLE connection, an operator's check) makes the mailbox's credentials refused: the dashboard and
the mailboxes page say so with the server's words, the webhook `mailbox.credentials_refused` is delivered, the
reply view is not trusted (follow-ups held, with that reason) and no "reply view restored" is announced until a
login is accepted again. A refusal wins over mail heard of and not read yet: the poll that would read it cannot log in.
"""

from __future__ import annotations

import json
import threading
import time

import django_rq
import pytest
from django.core.management import call_command
from rq.worker import SimpleWorker

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from inbound.watcher import _connect, run
from mailboxes.imap.errors import ImapAuthError, ImapError
from mailboxes.models import ImapCursor, Mailbox
from proving.harness import mails
from sequences.mailbox_checks import mailbox_check_now
from sequences.models import SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.reply_view_episodes import reply_view_episodes_sweep
from sequences.services.sending import dispatch_due
from sequences.webhooks_out.events import WebhookEvent
from sequences.webhooks_out.models import WebhookEndpoint
from tests.api.receiver import Receiver
from tests.factories import enroll, make_sequence
from tests.races.helpers import Worker

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
SECRET_ENV, SECRET = "OUTREACH_SECRET_TEST_WEBHOOK", "whsec-test-0123456789"
REFUSED, STALE, RESTORED = "mailbox.credentials_refused", "mailbox.reply_view_stale", "mailbox.reply_view_restored"
SERVER_WORDS = "[AUTHENTICATIONFAILED] Authentication failed."  # what Dovecot answers a refused LOGIN


@pytest.fixture
def receiver(redis_conn, monkeypatch):
    """A local webhook receiver subscribed to every event."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    with Receiver() as server:
        WebhookEndpoint.objects.create(url=server.url, secret_env=SECRET_ENV,
                                       event_types=[e.value for e in WebhookEvent])
        yield server


@pytest.fixture
def operator(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("boss", "boss@example.com", "pw"))
    return client


def heard(receiver) -> list[tuple[str, dict]]:
    """The mailbox events the receiver got so far (the outbox's jobs run first), in order, with their data."""
    queue = django_rq.get_queue("default")
    SimpleWorker([queue], connection=queue.connection).work(burst=True)
    bodies = [json.loads(r.body) for r in receiver.received]
    return [(b["type"], b["data"]) for b in bodies if b["type"].startswith("mailbox.")]


def pages(client) -> dict[str, str]:
    return {url: client.get(url).content.decode() for url in ("/", "/mailboxes/")}


def password_changed_at_the_server(dovecot) -> None:
    """An administrator sets a new password in Dovecot's passwd file; sessions logged in before stay logged in."""
    dovecot.add_users({"alice": "changed-at-the-server"})


class Watching:
    """The IDLE watcher (`inbound.watcher.run`) in a thread, re-checking every `idle_seconds`. Each poll it asks for
    runs here, as its RQ job would: a refused login fails that poll, never the watcher."""

    def __init__(self, *, idle_seconds: float):
        self.stop = threading.Event()
        self.polls: list[str] = []  # each poll's error ('' when it read)
        self.thread = Worker(lambda: run(self.stop, name=None, on_new=self._poll, refresh=0.2,
                                         idle_seconds=idle_seconds, say=lambda text: None))

    def _poll(self, mailbox_id: int, folder: str) -> None:
        try:
            self.polls.append(mailbox_poll(mailbox_id=mailbox_id, folders=[folder]).error)
        except ImapError as exc:
            self.polls.append(str(exc))

    def __enter__(self) -> Watching:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.outcome(15)


def until(condition, *, timeout: float = 10, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def read_through(mailbox):
    return ImapCursor.objects.get(mailbox=mailbox, folder="INBOX").read_through


def test_a_password_changed_at_the_server_shows_at_once_while_an_old_idle_session_still_reads(
        imap_mailbox, dovecot, dns_server, operator, receiver, settings):
    settings.OUTREACH_PROBE_INTERVALS = [8, 30, 300]  # the login ladder, shortened: one interval is the bound
    probe_interval = settings.OUTREACH_PROBE_INTERVALS[0]
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    polled = read_through(imap_mailbox)
    with Watching(idle_seconds=0.5):
        # Its first quiet exchange: the session is logged in (read through already: no catch-up poll).
        until(lambda: read_through(imap_mailbox) > polled, timeout=20, what="the watcher's first quiet exchange")
        for page in pages(operator).values():
            assert "replies read up to" in page and "credentials refused" not in page

        password_changed_at_the_server(dovecot)
        changed, changed_at = time.monotonic(), db_now()
        # The scheduler's periodic poll (every OUTREACH_POLL_INTERVAL, here half a second) until the dashboard says
        # it, within one interval of the login ladder.
        while "credentials refused" not in pages(operator)["/"]:
            assert time.monotonic() - changed < probe_interval, "no word of the refused credentials"
            try:
                mailbox_poll(mailbox_id=imap_mailbox.pk)
            except ImapAuthError:
                pass
            time.sleep(0.5)
        shown_after = time.monotonic() - changed

        # The watcher's session, logged in before the change, still reads: its quiet re-checks advance the view.
        until(lambda: read_through(imap_mailbox) > changed_at, what="the old session's quiet re-check")
        for url, page in pages(operator).items():
            assert "credentials refused: not reading replies since" in page and "follow-ups held" in page, url
            assert SERVER_WORDS in page, url  # the server's words
            assert "replies read up to" not in page and "changed-at-the-server" not in page, url
        assert reply_view_episodes_sweep()  # blind: announced
        swept = db_now()
        until(lambda: read_through(imap_mailbox) > swept, what="another quiet re-check")
        assert reply_view_episodes_sweep() == []  # and never "restored" while every new login is refused

    events = heard(receiver)
    assert [kind for kind, _ in events] == [REFUSED, STALE]
    refused = events[0][1]
    assert refused["mailbox"] == imap_mailbox.name and refused["connection"] == "poll" and refused["side"] == "imap"
    assert SERVER_WORDS in refused["reason"] and "changed-at-the-server" not in json.dumps(events)
    assert events[1][1]["reason"].startswith("credentials refused since") and SERVER_WORDS in events[1][1]["reason"]
    assert shown_after < probe_interval

    # The password is set back; the operator's "Check connection" logs in with the stored settings: accepted.
    dovecot.add_users({"alice": "alicepw"})
    check = mailbox_check_now(imap_mailbox.pk, "boss")
    assert any(step["step"] == "IMAP login" and step["ok"] for step in check["steps"]), check
    assert "credentials refused" not in pages(operator)["/"]
    assert [change.kind for change in reply_view_episodes_sweep()] == ["mailbox_reply_view_restored"]
    assert [kind for kind, _ in heard(receiver)] == [REFUSED, STALE, RESTORED]


def test_mail_waiting_to_be_read_does_not_hide_a_refused_login(imap_mailbox, dovecot, smtp_server, operator,
                                                                receiver):
    """A reply reaches the INBOX after the password changed: the old IDLE session hears of it and marks the folder,
    every poll that would read it is refused. Every surface says the credentials are refused, not "being read";
    the follow-up waits with that reason and, once the password works again, the reply stops its sender first."""
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    enrollment = enroll(make_sequence(mailbox=imap_mailbox, steps=2, waits=(0, 0)), "ada@example.com")
    (step1,) = dispatch_due()
    assert send_job_process(job_id=step1, worker_id="w1").state == S.SUBMITTED
    polled = read_through(imap_mailbox)
    with Watching(idle_seconds=3600) as watching:
        # Its first quiet heartbeat: the session is logged in (read through already: no catch-up poll).
        until(lambda: read_through(imap_mailbox) > polled, timeout=20, what="the watcher's first quiet heartbeat")
        password_changed_at_the_server(dovecot)
        reply = mails.reply(to_message_id=SendJob.objects.get(pk=step1).message_id, sender="ada@example.com",
                            body="Thanks, but we are not interested.")
        dovecot.append("alice", "INBOX", reply)
        until(lambda: len(watching.polls) == 1, what="the push on the old session and the poll it asked for")
    assert SERVER_WORDS in watching.polls[0]  # that poll's login was refused
    assert ImapCursor.objects.get(mailbox=imap_mailbox, folder="INBOX").unread_since is not None  # mail waits

    for url, page in pages(operator).items():
        assert "credentials refused: not reading replies since" in page and "follow-ups held" in page, url
        assert SERVER_WORDS in page and "waits to be read" in page, url
        assert "is being read" not in page, url

    (step2,) = dispatch_due()
    assert send_job_process(job_id=step2, worker_id="w1").state == "deferred"
    held = TimelineEvent.objects.filter(job_id=step2, kind="job_deferred").last()
    assert held.data["reason"] == "reply_view"
    assert held.data["detail"].startswith("waiting to read replies: credentials refused since")
    assert SERVER_WORDS in held.data["detail"] and "being read" not in held.data["detail"]
    assert [kind for kind, _ in heard(receiver)] == [REFUSED]

    dovecot.add_users({"alice": "alicepw"})  # the password works again ...
    Mailbox.objects.filter(pk=imap_mailbox.pk).update(imap_next_login_at=db_now())  # ... and the interval passed
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == ("stopped", "replied")
    assert SendJob.objects.get(pk=step2).state == S.CANCELED
    assert len(smtp_server.received) == 1  # step 1 only


def test_a_new_idle_connection_refused_shows_the_same(imap_mailbox, dovecot, operator, receiver):
    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    password_changed_at_the_server(dovecot)
    with pytest.raises(ImapAuthError):
        _connect(imap_mailbox, "INBOX")
    page = pages(operator)["/"]
    assert "credentials refused" in page and SERVER_WORDS in page
    ((kind, data),) = heard(receiver)
    assert kind == REFUSED and data["connection"] == "IDLE watcher"


def test_a_check_of_the_stored_settings_refused_shows_the_same_and_a_check_of_other_settings_does_not(
        imap_mailbox, dovecot, dns_server, operator, receiver, capsys):
    from sequences.mailbox_checks import mailbox_form_check

    assert mailbox_poll(mailbox_id=imap_mailbox.pk).error == ""
    password_changed_at_the_server(dovecot)
    fields = {"name": imap_mailbox.name, "imap_username": "bob"}  # another account: says nothing of alice's login
    mailbox_form_check({"mailbox_id": imap_mailbox.pk, "actor": "boss", "action": "check", "sealed": {},
                        "fields": fields})
    assert Mailbox.objects.get(pk=imap_mailbox.pk).imap_login_refused_at is None

    with pytest.raises(Exception, match="1 step failed"):
        call_command("mailbox_check", imap_mailbox.name)
    assert SERVER_WORDS in capsys.readouterr().out
    mailbox = Mailbox.objects.get(pk=imap_mailbox.pk)
    assert mailbox.imap_login_refused_at is not None and SERVER_WORDS in mailbox.imap_login_refused_error
    assert "credentials refused" in pages(operator)["/mailboxes/"]
    ((kind, data),) = heard(receiver)
    assert kind == REFUSED and data["connection"] == "connection check"

    dovecot.add_users({"alice": "alicepw"})
    mailbox_form_check({"mailbox_id": imap_mailbox.pk, "actor": "boss", "action": "check", "sealed": {},
                        "fields": {"name": imap_mailbox.name}})  # the stored settings, unchanged: accepted
    assert Mailbox.objects.get(pk=imap_mailbox.pk).imap_login_refused_at is None
