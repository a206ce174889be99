"""A mailbox with more folders than its IMAP server lets one account hold connections: the watchers hold all but
two of them, the folders beyond are read by the periodic poll on a connection left for it, and the mailbox page
says which folders are watched with IDLE and which are read by polling only."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from inbound.ingest.poll import mailbox_poll
from inbound.leases import LeaseKeeper, connection_limit
from inbound.models import InboundMessage, WatchLease
from mailboxes.imap.errors import ImapConnectionError
from proving.bench.watcher import tcp_connections
from proving.harness import mails
from proving.harness.dovecot import DEFAULT_USERS, Dovecot
from tests.inbound.test_watch import Watching

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 4  # Dovecot's mail_max_userip_connections here (10 by default)
FOLDERS = ["INBOX", "Bounces", "Replies", "Archive"]


@pytest.fixture
def small_dovecot():
    with Dovecot(DEFAULT_USERS, f"mail_max_userip_connections = {LIMIT}") as server:
        for folder in FOLDERS[1:]:
            server.create_folder("alice", folder)
        yield server


@pytest.fixture
def crowded(mailbox, small_dovecot, monkeypatch, settings):
    """Four reply folders on an account of a server that allows four connections."""
    settings.OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT = LIMIT
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")
    mailbox.imap_host, mailbox.imap_port = small_dovecot.host, small_dovecot.port
    mailbox.imap_username, mailbox.imap_password_env = "alice", "OUTREACH_SECRET_TEST_IMAP"
    mailbox.imap_folders = FOLDERS
    mailbox.save()
    return mailbox


def deliver(server, folder: str, raw: bytes) -> None:
    """Deliver as a local MTA does, into the folder's Maildir (no IMAP login: the account has none left)."""
    new = server.maildir("alice", folder) / "new"
    path = new / f"{time.time():.6f}.test.{os.getpid()}"
    path.write_bytes(raw)
    shutil.chown(path, "nobody", "nogroup")


def watched_folders() -> set[str]:
    return set(WatchLease.objects.exclude(holder="").values_list("folder", flat=True))


def test_folders_over_the_connection_limit_are_polled_and_the_page_says_so(crowded, small_dovecot, client,
                                                                          django_user_model):
    assert connection_limit(small_dovecot.host).idle == LIMIT - 2
    mailbox_poll(mailbox_id=crowded.pk)  # every folder's cursor starts here (the watcher's polls read its own)
    with Watching():
        deadline = time.monotonic() + 15
        while tcp_connections(os.getpid(), small_dovecot.port) < LIMIT - 2:  # the watcher's, in IDLE
            assert time.monotonic() < deadline, "the watcher did not open its connections"
            time.sleep(0.1)
        watched = watched_folders()
        assert len(watched) == LIMIT - 2, watched
        polled_only = [f for f in FOLDERS if f not in watched]

        small_dovecot.append("alice", polled_only[-1], mails.reply(to_message_id="<x@y>",
                                                                    sender="someone@example.org"))
        result = mailbox_poll(mailbox_id=crowded.pk)  # the periodic poll, beside the watcher's connections
        assert result.error == "", result.error
        assert InboundMessage.objects.filter(mailbox=crowded, folder=polled_only[-1]).count() == 1

        client.force_login(django_user_model.objects.create_superuser("admin", password="pw"))
        page = client.get("/mailboxes/").content.decode()
    for folder in watched:
        assert f'data-folder="{folder}" data-watching="idle">{folder}: watched with IDLE' in page
    for folder in polled_only:
        assert f'data-folder="{folder}" data-watching="over_limit">{folder}: read by polling only' in page
    assert (f"over the connection limit: {small_dovecot.host} allows {LIMIT} connections per account, "
            f"{LIMIT - 2} for IDLE (all in use) and 2 for polls") in page


def test_without_room_for_the_polls_an_account_at_its_limit_is_not_read(crowded, small_dovecot):
    """Why two connections stay free: watchers holding all four leave the poll refused by the server (as a
    connection refused, never as credentials refused)."""
    with Watching(keeper=LeaseKeeper(per_account=LIMIT)):
        held = 0
        deadline = time.monotonic() + 30
        while held < 10:  # the watcher's connections, all four, for 2 s: its catch-up polls are refused by now
            assert time.monotonic() < deadline, "the watcher did not hold four connections"
            held = held + 1 if tcp_connections(os.getpid(), small_dovecot.port) == LIMIT else 0
            time.sleep(0.2)
        deliver(small_dovecot, "Archive", mails.reply(to_message_id="<x@y>", sender="someone@example.org"))
        with pytest.raises(ImapConnectionError, match="as many connections as the server allows"):
            mailbox_poll(mailbox_id=crowded.pk)
    assert not InboundMessage.objects.filter(folder="Archive").exists()
    crowded.refresh_from_db()
    assert crowded.imap_login_refused_at is None


def test_a_login_the_server_drops_is_a_lost_connection_not_a_refused_password(mailbox, monkeypatch):
    """Dovecot at its imap process limit takes the LOGIN, then closes the connection: the next poll may log in,
    the mailbox's credentials are not marked refused."""
    with Dovecot(DEFAULT_USERS, "service imap {\n  process_limit = 1\n}") as server:
        monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "alicepw")
        mailbox.imap_host, mailbox.imap_port = server.host, server.port
        mailbox.imap_username, mailbox.imap_password_env = "alice", "OUTREACH_SECRET_TEST_IMAP"
        mailbox.imap_folders = ["INBOX"]
        mailbox.save()
        with server.client("alice") as holder:  # the one imap process
            holder.select_folder("INBOX")
            with pytest.raises(ImapConnectionError, match="closed the connection before answering"):
                mailbox_poll(mailbox_id=mailbox.pk)
    mailbox.refresh_from_db()
    assert mailbox.imap_login_refused_at is None
