"""SMTP command pipelining (RFC 2920): fewer round trips, and never any content after a refusal.

A real aiosmtpd server on loopback (offering PIPELINING or not), and for the one answer aiosmtpd never gives
(354 after a refused recipient) a scripted server on a socket.
"""

from __future__ import annotations

import smtplib
import socket
import threading

import pytest

from mailboxes.transports.base import MailboxRefused, RecipientRefused
from mailboxes.transports.smtp import POOL, SmtpConfig, SmtpTransport
from proving.harness.smtp import Behaviour, SmtpServer
from proving.harness.stack import free_port

MESSAGE = b"Subject: hello\r\nMessage-ID: <m@example.com>\r\n\r\nHello.\r\n"


@pytest.fixture
def writes(monkeypatch):
    """Every write the SMTP client makes, as bytes."""
    seen: list[bytes] = []
    send = smtplib.SMTP.send

    def counted(self, s):
        seen.append(s if isinstance(s, bytes) else s.encode(self.command_encoding))
        return send(self, s)

    monkeypatch.setattr(smtplib.SMTP, "send", counted)
    return seen


def transport(port: int) -> SmtpTransport:
    return SmtpTransport(SmtpConfig(host="127.0.0.1", port=port, timeout=5))


@pytest.mark.parametrize(("pipelining", "writes_per_message"), [(True, 2), (False, 5)])
def test_a_reused_connection_sends_a_message_in_two_writes_where_the_server_pipelines(pipelining, writes_per_message,
                                                                                       writes):
    with SmtpServer(pipelining=pipelining) as server:
        smtp = transport(server.port)
        smtp.send(sender="me@example.com", recipient="a@example.com", message=MESSAGE)
        writes.clear()
        smtp.send(sender="me@example.com", recipient="b@example.com", message=MESSAGE)
        second = list(writes)
        POOL.close_all()
    assert len(second) == writes_per_message
    if pipelining:
        assert second[0] == b"RSET\r\nMAIL FROM:<me@example.com>\r\nRCPT TO:<b@example.com>\r\nDATA\r\n"
    assert [r.recipients for r in server.received] == [["a@example.com"], ["b@example.com"]]
    assert (server.connections, server.rsets) == (1, 1)


@pytest.mark.parametrize("pipelining", [True, False])
def test_a_refused_recipient_sends_no_content_and_the_connection_is_not_reused(pipelining, writes):
    with SmtpServer(pipelining=pipelining, behaviour=Behaviour(rcpt_reply="550 5.1.1 no such user")) as server:
        smtp = transport(server.port)
        with pytest.raises(RecipientRefused) as refused:
            smtp.send(sender="me@example.com", recipient="nobody@example.com", message=MESSAGE)
        assert refused.value.hard
        assert not any(b"Hello." in w for w in writes)
        server.behaviour.rcpt_reply = None
        smtp.send(sender="me@example.com", recipient="b@example.com", message=MESSAGE)
        POOL.close_all()
    assert [r.recipients for r in server.received] == [["b@example.com"]]
    assert (server.connections, server.rsets) == (2, 0)


def test_a_refused_sender_is_the_mailbox_s_failure_with_pipelining():
    with SmtpServer(behaviour=Behaviour(mail_reply="553 5.7.1 <me@example.com>: Sender address rejected")) as server:
        with pytest.raises(MailboxRefused, match="at MAIL FROM"):
            transport(server.port).send(sender="me@example.com", recipient="a@example.com", message=MESSAGE)
    assert server.count == 0


class ScriptedServer:
    """One connection: offers PIPELINING, refuses the recipient, and still answers DATA with 354 (RFC 2920
    lets a server do so); records every byte the client sends."""

    def __init__(self):
        self.port = free_port()
        self.received = b""
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        conn, _ = self._listener.accept()
        with conn:
            conn.settimeout(5)
            conn.sendall(b"220 scripted ESMTP\r\n")
            answers = {b"EHLO": b"250-scripted\r\n250-PIPELINING\r\n250 8BITMIME\r\n", b"MAIL": b"250 ok\r\n",
                       b"RCPT": b"550 5.1.1 no such user\r\n", b"DATA": b"354 go ahead\r\n",
                       b"RSET": b"250 ok\r\n", b"QUIT": b"221 bye\r\n"}
            buffer = b""
            in_data = False  # after the 354: content lines, unanswered until the lone dot
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.received += chunk
                buffer += chunk
                while b"\r\n" in buffer:
                    line, buffer = buffer.split(b"\r\n", 1)
                    if in_data:
                        if line == b".":
                            in_data = False
                            conn.sendall(b"554 no valid recipients\r\n")
                        continue
                    answer = answers.get(line[:4].upper())
                    if answer:
                        conn.sendall(answer)
                        in_data = answer.startswith(b"354")

    def join(self):
        self._thread.join(timeout=5)
        self._listener.close()


def test_a_go_ahead_after_a_refused_recipient_gets_no_content():
    server = ScriptedServer()
    with pytest.raises(RecipientRefused):
        transport(server.port).send(sender="me@example.com", recipient="nobody@example.com", message=MESSAGE)
    server.join()
    # The group went out in one piece; after the 354, not a byte: no content, and no QUIT the server would
    # take for a line of content.
    assert server.received.endswith(b"MAIL FROM:<me@example.com>\r\nRCPT TO:<nobody@example.com>\r\nDATA\r\n")


@pytest.mark.parametrize("pipelining", [True, False])
def test_a_reused_connection_the_server_closed_is_replaced_before_anything_is_sent(pipelining):
    with SmtpServer(pipelining=pipelining) as server:
        transport(server.port).send(sender="me@example.com", recipient="a@example.com", message=MESSAGE)
    # The server went away with the idle connection; another one answers on the same port.
    with SmtpServer(port=server.port, pipelining=pipelining) as again:
        submission = transport(again.port).send(sender="me@example.com", recipient="b@example.com", message=MESSAGE)
        POOL.close_all()
    assert submission.reply.startswith("250")
    assert [r.recipients for r in again.received] == [["b@example.com"]]
    assert again.connections == 1
