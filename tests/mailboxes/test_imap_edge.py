"""mailboxes.imap against a real Dovecot (proving/harness/dovecot.py).

No database: plain pytest functions. Dovecot missing is a failure, not a
skip -- CI installs it, and a silently skipped IMAP suite proves nothing.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mailboxes.imap.connection import ImapConfig
from mailboxes.imap.errors import ImapAuthError, ImapConnectionError, ImapError, ImapUidValidityError
from mailboxes.imap.fetch import FetchedMessage
from mailboxes.imap.session import ImapSession
from proving.harness.dovecot import DEFAULT_USERS, Dovecot, dovecot_available
from proving.harness.stack import free_port


@pytest.fixture
def server():
    """A fresh Dovecot per test (~50 ms to start, ~10 ms to kill), alice and bob."""
    with Dovecot(DEFAULT_USERS) as d:
        yield d


def msg(subject: str, body: str = "hello") -> bytes:
    return (
        f"From: Prospect <p@example.org>\r\nTo: alice@example.com\r\n"
        f"Subject: {subject}\r\nMessage-ID: <{subject.replace(' ', '.')}@example.org>\r\n"
        f"\r\n{body}\r\n"
    ).encode()


def config(server: Dovecot, user: str = "alice", password: str | None = None, **kw) -> ImapConfig:
    return ImapConfig(
        host=server.host,
        port=server.port,
        username=user,
        password=server.users[user] if password is None else password,
        timeout=kw.pop("timeout", 10.0),
        **kw,
    )


def test_dovecot_is_installed():
    assert dovecot_available(), "dovecot is not installed: apt-get install -y dovecot-imapd"


def test_select_reports_uidvalidity_uidnext_modseq_exists(server):
    server.append("alice", "INBOX", msg("one"))
    server.append("alice", "INBOX", msg("two"))
    with ImapSession(config(server)) as s:
        status = s.select("INBOX")
    assert status.uidvalidity > 0
    assert status.uidnext == 3
    assert status.exists == 2
    assert status.highestmodseq is not None  # CONDSTORE enabled before SELECT
    assert s.status == status


def test_select_missing_folder_is_imap_error_not_connection_error(server):
    with ImapSession(config(server)) as s:
        with pytest.raises(ImapError) as exc:
            s.select("NoSuchFolder")
        assert not isinstance(exc.value, ImapConnectionError)
        with pytest.raises(ImapError, match="no folder selected"):
            s.uids_after(0)
        s.select("INBOX")  # the session is still usable


def test_uids_after_is_strictly_greater_including_star_edge(server):
    uids = [server.append("alice", "INBOX", msg(f"m{i}")) for i in range(3)]
    assert uids == [1, 2, 3]
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        assert s.uids_after(0) == [1, 2, 3]
        assert s.uids_after(1) == [2, 3]
        # "UID 4:*" matches UID 3 (the highest) on the wire; it must not leak out.
        assert s.uids_after(3) == []
        assert s.uids_after(100) == []


def test_uids_after_on_empty_folder(server):
    server.create_folder("alice", "Replies")
    with ImapSession(config(server)) as s:
        status = s.select("Replies")
        assert status.exists == 0
        assert s.uids_after(0) == []
        assert s.fetch([]) == []


def test_fetch_returns_raw_size_flags_and_never_sets_seen(server):
    raw = msg("peek me", body="x" * 500)
    uid = server.append("alice", "INBOX", raw)
    flagged = server.append("alice", "INBOX", msg("flagged"), flags=[r"\Flagged"])
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        fetched = s.fetch([flagged, uid])  # any order in, UID order out
    assert [m.uid for m in fetched] == [uid, flagged]
    first = fetched[0]
    assert isinstance(first, FetchedMessage)
    assert first.raw == raw
    assert first.size == len(raw)
    assert r"\Seen" not in first.flags
    assert r"\Flagged" in fetched[1].flags
    # Checked from a second, independent session: the server really did not
    # mark it read (a cached flag in our own session would prove nothing).
    assert r"\Seen" not in server.flags("alice", "INBOX", uid)
    assert r"\Seen" not in server.flags("alice", "INBOX", flagged)


def test_fetch_splits_long_uid_lists_into_several_commands(server, monkeypatch):
    for i in range(5):
        server.append("alice", "INBOX", msg(f"c{i}"))
    monkeypatch.setattr("mailboxes.imap.fetch.FETCH_CHUNK", 2)  # a tuning knob, not behaviour
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        assert [m.uid for m in s.fetch([5, 3, 1, 2, 4])] == [1, 2, 3, 4, 5]


def test_fetch_skips_uid_expunged_since_listing(server):
    keep = server.append("alice", "INBOX", msg("keep"))
    gone = server.append("alice", "INBOX", msg("gone"))
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        listed = s.uids_after(0)
        with server.client("alice") as other:
            other.select_folder("INBOX")
            other.delete_messages([gone])
            other.expunge()
        fetched = s.fetch(listed)
    assert [m.uid for m in fetched] == [keep]


def test_internaldate_from_append_is_preserved_as_utc(server):
    when = datetime(2024, 3, 1, 14, 30, 5, tzinfo=timezone(timedelta(hours=2)))
    with ImapSession(config(server)) as s:
        uid = s.append("INBOX", msg("dated"), when=when)
        assert uid == 1  # APPENDUID
        s.select("INBOX")
        (fetched,) = s.fetch([uid])
    assert fetched.internaldate == when
    assert fetched.internaldate.utcoffset() == timedelta(0)
    assert fetched.internaldate == datetime(2024, 3, 1, 12, 30, 5, tzinfo=UTC)


def test_iter_new_yields_uid_ordered_batches_after_cursor(server):
    for i in range(5):
        server.append("alice", "INBOX", msg(f"b{i}"))
    with ImapSession(config(server)) as s:
        batches = list(s.iter_new("INBOX", last_uid=1, batch_size=2))
        assert [[m.uid for m in b] for b in batches] == [[2, 3], [4, 5]]
        assert [m.raw for m in batches[0]] == [msg("b1"), msg("b2")]
        assert s.status is not None and s.status.uidnext == 6
        assert list(s.iter_new("INBOX", last_uid=5)) == []


def test_iter_new_refuses_a_cursor_from_another_uidvalidity(server):
    server.append("alice", "INBOX", msg("one"))
    with ImapSession(config(server)) as s:
        current = s.select("INBOX").uidvalidity
        with pytest.raises(ImapUidValidityError) as exc:
            next(s.iter_new("INBOX", last_uid=0, uidvalidity=current - 1))
        assert exc.value.actual == current
        assert [m.uid for b in s.iter_new("INBOX", 0, uidvalidity=current) for m in b] == [1]


def test_wrong_password_raises_auth_error(server):
    with pytest.raises(ImapAuthError, match="alice"):
        with ImapSession(config(server, password="wrong")):
            pass
    with pytest.raises(ImapAuthError):
        with ImapSession(config(server, user="alice", password="")):
            pass


def test_unknown_user_raises_auth_error(server):
    server.users["mallory"] = "x"  # known to the test, not to the server
    with pytest.raises(ImapAuthError):
        ImapSession(config(server, user="mallory")).open()


def test_connection_refused_raises_connection_error():
    port = free_port()  # nothing listens there
    cfg = ImapConfig(host="127.0.0.1", port=port, username="a", password="b", timeout=5)
    with pytest.raises(ImapConnectionError, match=f"127.0.0.1:{port}"):
        with ImapSession(cfg):
            pass


def test_tls_against_plain_port_is_connection_error(server):
    with pytest.raises(ImapConnectionError):
        with ImapSession(config(server, security="tls", timeout=5)):
            pass


def test_starttls_required_but_not_offered_never_sends_password(server):
    with pytest.raises(ImapError):
        with ImapSession(config(server, security="starttls")):
            pass
    assert "Login: user=<alice>" not in server.log()


def test_config_rejects_unknown_security_and_hides_password():
    with pytest.raises(ValueError):
        ImapConfig(host="h", port=1, username="u", password="p", security="ssl")
    assert "secret" not in repr(ImapConfig(host="h", port=1, username="u", password="secret"))


def test_idle_wait_true_when_another_connection_appends(server):
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        timer = threading.Timer(0.3, server.append, args=("alice", "INBOX", msg("pushed")))
        started = time.monotonic()
        timer.start()
        try:
            assert s.idle_wait(timeout=20) is True
        finally:
            timer.join()
        assert time.monotonic() - started < 5
        # The session is usable after IDLE and sees the new message.
        assert s.uids_after(0) == [1]


def test_idle_wait_false_on_timeout(server):
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        started = time.monotonic()
        assert s.idle_wait(timeout=0.5) is False
        elapsed = time.monotonic() - started
        assert 0.4 < elapsed < 3
        assert s.uids_after(0) == []  # still usable


def test_idle_wait_sees_mail_that_arrived_before_idle(server):
    # The lost-wakeup window: mail lands after SELECT/fetch but before IDLE.
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        server.append("alice", "INBOX", msg("early"))
        started = time.monotonic()
        # Dovecot itself would only say so at DONE, i.e. after the full timeout.
        assert s.idle_wait(timeout=10) is True
        assert time.monotonic() - started < 5
    with ImapSession(config(server)) as s:
        s.select("INBOX")
        server.append("alice", "INBOX", msg("early2"))
        s.uids_after(0)  # EXISTS piggybacks on this command's response
        started = time.monotonic()
        assert s.idle_wait(timeout=10) is True
        assert time.monotonic() - started < 5
        # ... and is not reported twice.
        assert s.idle_wait(timeout=0.3) is False


def test_idle_wait_without_idle_capability_raises():
    with Dovecot({"alice": "alicepw"}, extra_config="imap_capability = IMAP4rev1 UIDPLUS") as server:
        with ImapSession(config(server)) as s:
            s.select("INBOX")
            with pytest.raises(ImapError, match="IDLE"):
                s.idle_wait(timeout=1)


def test_reset_uidvalidity_changes_uidvalidity_keeps_messages(server):
    server.append("alice", "INBOX", msg("one"))
    server.append("alice", "INBOX", msg("two"))
    with ImapSession(config(server)) as s:
        before = s.select("INBOX").uidvalidity
    new = server.reset_uidvalidity("alice", "INBOX")
    with ImapSession(config(server)) as s:
        after = s.select("INBOX")
        assert after.uidvalidity == new != before
        assert [m.raw for b in s.iter_new("INBOX", 0) for m in b] == [msg("one"), msg("two")]


def test_uidvalidity_change_under_an_open_session_shows_on_next_select(server):
    server.append("alice", "INBOX", msg("one"))
    with ImapSession(config(server)) as s:
        before = s.select("INBOX").uidvalidity
        new = server.reset_uidvalidity("alice", "INBOX")
        after = s.select("INBOX")
        assert after.uidvalidity == new != before
        with pytest.raises(ImapUidValidityError):
            next(s.iter_new("INBOX", 0, uidvalidity=before))


def test_reset_uidvalidity_on_subfolder(server):
    server.create_folder("alice", "Archive/2024")
    server.append("alice", "Archive/2024", msg("old"))
    with ImapSession(config(server)) as s:
        before = s.select("Archive/2024").uidvalidity
        inbox_before = s.select("INBOX").uidvalidity
    server.reset_uidvalidity("alice", "Archive/2024")
    with ImapSession(config(server)) as s:
        assert s.select("Archive/2024").uidvalidity != before
        assert s.select("INBOX").uidvalidity == inbox_before


def test_users_are_isolated(server):
    server.append("alice", "INBOX", msg("for alice"))
    with ImapSession(config(server, user="bob")) as s:
        assert s.select("INBOX").exists == 0


def test_server_killed_mid_session_raises_connection_error(server):
    uid = server.append("alice", "INBOX", msg("doomed"))
    session = ImapSession(config(server, timeout=5))
    with session as s:
        s.select("INBOX")
        assert s.uids_after(0) == [uid]
        server.kill()
        with pytest.raises(ImapConnectionError):
            s.fetch([uid])
        with pytest.raises(ImapConnectionError):  # stays broken, says so
            s.uids_after(0)
    # __exit__ did not raise; the same config works once the server is back.
    server.start()
    with ImapSession(config(server)) as s:
        assert s.select("INBOX").exists == 1
        assert s.uids_after(0) == [uid]


def test_server_killed_during_idle_raises_connection_error(server):
    with ImapSession(config(server, timeout=5)) as s:
        s.select("INBOX")
        threading.Timer(0.3, server.kill).start()
        started = time.monotonic()
        with pytest.raises(ImapConnectionError):
            s.idle_wait(timeout=20)
        assert time.monotonic() - started < 5


def test_restart_keeps_mail_and_uidvalidity(server):
    server.append("alice", "INBOX", msg("survivor"))
    with ImapSession(config(server)) as s:
        before = s.select("INBOX")
    server.restart()
    with ImapSession(config(server)) as s:
        after = s.select("INBOX")
        assert (after.uidvalidity, after.uidnext, after.exists) == (
            before.uidvalidity,
            before.uidnext,
            before.exists,
        )
