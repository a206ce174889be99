"""The one SMTP server of the tests, drills, benchmarks and `manage.py capture_smtp` (aiosmtpd, loopback).

It accepts, delays, rejects or drops as its Behaviour says, and keeps what the
caller asks for: every message (tests, drills), only a count (benchmarks: a
million sends must not be held in memory), or files in a folder (the capture
server). For the drills it also notes the Message-ID of each DATA before it
answers, and can hold DATA unanswered until released -- so a drill can kill a
worker while it is inside DATA, then let the server keep the message.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import ssl
import threading
import time
from dataclasses import dataclass
from email import message_from_bytes
from email.message import Message
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import TextIO

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from proving.harness.oauth import introspect
from proving.harness.stack import free_port

HOLD_LIMIT = 120.0  # seconds: a held DATA is answered anyway after this
# Given to aiosmtpd so that it does not look up the machine's FQDN (DNS) for every connection.
SERVER_HOSTNAME = "smtp.proving.localhost"


@dataclass
class Received:
    sender: str
    recipients: list[str]
    data: bytes

    @property
    def message(self) -> Message:
        return message_from_bytes(self.data)

    @property
    def message_id(self) -> str:
        return self.message["Message-ID"]


@dataclass
class Behaviour:
    rcpt_reply: str | None = None  # e.g. "550 5.1.1 no such user" or "451 4.3.0 try later"
    # A reply for the first RCPT of each address only (a greylisting server: 451 once, then accepted),
    # so a retry meets a server that has recovered.
    first_rcpt_reply: str | None = None
    mail_reply: str | None = None  # e.g. "553 5.7.1 <x>: Sender address rejected: not owned by user y"
    data_reply: str | None = None  # e.g. "554 5.6.0 rejected"
    data_delay: float = 0.0  # seconds to stall before answering DATA (async; never blocks the loop)
    drop_in_data: bool = False  # close the connection after the data arrived, before answering
    record_when_dropped: bool = True  # a dropped or stalled message may still have been delivered


class _Handler:
    def __init__(self, server: SmtpServer):
        self.server = server

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        session.host_name = hostname  # what aiosmtpd does itself when no handler answers EHLO
        if self.server.pipelining:
            responses.insert(-1, "250-PIPELINING")
        return responses

    async def handle_MAIL(self, server, session, envelope, address, mail_options):
        if not getattr(session, "outreach_counted", False):
            session.outreach_counted = True  # the first MAIL FROM of this connection
            with self.server._lock:
                self.server.connections += 1
        if self.server.behaviour.mail_reply:
            return self.server.behaviour.mail_reply
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        behaviour = self.server.behaviour
        if behaviour.first_rcpt_reply:
            with self.server._lock:
                first = address not in self.server.rcpt_seen
                self.server.rcpt_seen.add(address)
            if first:
                return behaviour.first_rcpt_reply
        if behaviour.rcpt_reply:
            return behaviour.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_RSET(self, server, session, envelope):
        with self.server._lock:
            self.server.rsets += 1
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        keeper = self.server
        if keeper.keep_messages:
            message_id = str(BytesHeaderParser().parsebytes(envelope.content).get("Message-ID", "")).strip()
            with keeper._lock:
                keeper.arrived.append(message_id)
        if keeper.holding:
            waited = 0.0
            while not keeper._released.is_set() and waited < HOLD_LIMIT:
                await asyncio.sleep(0.02)
                waited += 0.02
        behaviour = keeper.behaviour
        if behaviour.data_reply:
            return behaviour.data_reply
        if behaviour.data_delay:
            await asyncio.sleep(behaviour.data_delay)
        if behaviour.drop_in_data:
            if behaviour.record_when_dropped:
                keeper._record(envelope)
            server.transport.close()
            return "421 closing"
        keeper._record(envelope)
        return "250 2.0.0 captured" if keeper.capture_dir else "250 2.0.0 Ok: queued"


class _OAuthHandler(_Handler):
    """AUTH XOAUTH2 and OAUTHBEARER, each token validated at the OAuth server's introspection endpoint.

    A refused token is answered as Gmail does: a 334 with a JSON error, then 535 after the client's empty line.
    """

    async def auth_XOAUTH2(self, server, args):  # noqa: N802 - aiosmtpd finds mechanisms by this name
        return await self._bearer(server, args, "XOAUTH2")

    async def auth_OAUTHBEARER(self, server, args):  # noqa: N802
        return await self._bearer(server, args, "OAUTHBEARER")

    async def _bearer(self, server, args, mechanism: str) -> AuthResult:
        keeper = self.server
        with keeper._lock:
            keeper.auth_attempts += 1
            keeper.auth_mechanisms.append(mechanism)
        blob = base64.b64decode(args[1]) if len(args) > 1 else await server.challenge_auth("")
        if not isinstance(blob, bytes):
            return AuthResult(success=False, handled=True)
        user, token = _bearer_fields(blob.decode("utf-8", "replace"), mechanism)
        named = await asyncio.get_running_loop().run_in_executor(None, introspect, keeper.oauth_url, token)
        if user and named == user:
            return AuthResult(success=True, auth_data=LoginPassword(user.encode(), b""))
        await server.challenge_auth(json.dumps({"status": "401", "schemes": "bearer",
                                                "scope": "https://mail.google.com/"}))
        return AuthResult(success=False, handled=False)


def _bearer_fields(text: str, mechanism: str) -> tuple[str, str]:
    """(user, token) of an XOAUTH2 or OAUTHBEARER initial response."""
    parts = text.split("\x01")
    user = ""
    if mechanism == "OAUTHBEARER":
        header = parts[0].split(",")
        user = next((p[2:] for p in header if p.startswith("a=")), "").replace("=2C", ",").replace("=3D", "=")
    values = dict(p.split("=", 1) for p in parts if "=" in p and not p.startswith("n,"))
    user = values.get("user", user)
    auth = values.get("auth", "")
    return user, auth[7:] if auth.lower().startswith("bearer ") else ""


def _last_capture(directory: Path | None) -> int:
    """The highest number among the NNNNNN.eml files already captured into *directory* (0 for none)."""
    if directory is None or not directory.is_dir():
        return 0
    return max((int(p.stem) for p in directory.glob("*.eml") if p.stem.isdigit()), default=0)


class SmtpServer:
    """Start with start() / stop() or as a context manager; `port` is free on loopback unless given."""

    def __init__(self, *, port: int | None = None, host: str = "127.0.0.1", behaviour: Behaviour | None = None,
                 keep_messages: bool = True, capture_dir: Path | None = None, log: TextIO | None = None,
                 credentials: dict[str, str] | None = None, starttls: ssl.SSLContext | None = None,
                 oauth_introspection_url: str = "", mechanisms: tuple[str, ...] = ("XOAUTH2", "OAUTHBEARER"),
                 pipelining: bool = True):
        """`credentials` (user -> password): AUTH PLAIN/LOGIN required before MAIL, each attempt counted in
        `auth_attempts`. `starttls`: a server TLS context; STARTTLS is then required.
        `oauth_introspection_url` (proving.harness.oauth.OAuthServer): AUTH XOAUTH2 / OAUTHBEARER required
        instead, offering only `mechanisms` (Microsoft 365 offers XOAUTH2 alone).
        `pipelining`: EHLO offers PIPELINING (RFC 2920), as Postfix, Exim, Gmail and Microsoft 365 do
        (aiosmtpd reads pipelined commands in order, but does not say so itself)."""
        self.pipelining = pipelining
        self.port = port or free_port()
        self.host = host
        self.behaviour = behaviour or Behaviour()
        self.keep_messages = keep_messages
        self.capture_dir = capture_dir
        self._captured_before = _last_capture(capture_dir)
        self.log = log  # one line per captured message
        self.count = 0
        self.received: list[Received] = []
        self.arrived: list[str] = []  # Message-IDs whose DATA arrived, answered or not
        self.rcpt_seen: set[str] = set()
        self.connections = 0  # connections that sent at least one MAIL FROM
        self.rsets = 0
        self.holding = False
        self._released = threading.Event()
        self._lock = threading.Lock()
        self.credentials = credentials
        self.auth_attempts = 0
        self.auth_mechanisms: list[str] = []  # the mechanism of each OAuth2 attempt
        self.oauth_url = oauth_introspection_url
        options: dict = {}
        if credentials is not None or oauth_introspection_url:
            options.update(authenticator=self._authenticate, auth_required=True, auth_require_tls=starttls is not None)
        if oauth_introspection_url:
            offered = {"PLAIN", "LOGIN", "XOAUTH2", "OAUTHBEARER"} - set(mechanisms)
            options["auth_exclude_mechanism"] = sorted(offered - ({"PLAIN", "LOGIN"} if credentials else set()))
        if starttls is not None:
            options.update(tls_context=starttls, require_starttls=True)
            # A client that refuses the certificate is what TLS tests expect; aiosmtpd logs each as a traceback.
            logging.getLogger("mail.log").setLevel(logging.CRITICAL)
        handler = _OAuthHandler(self) if oauth_introspection_url else _Handler(self)
        self._controller = Controller(handler, hostname=host, port=self.port, server_hostname=SERVER_HOSTNAME,
                                      **options)

    def _authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        with self._lock:
            self.auth_attempts += 1
        ok = (isinstance(auth_data, LoginPassword) and self.credentials is not None
              and self.credentials.get(auth_data.login.decode()) == auth_data.password.decode())
        # handled=False: aiosmtpd answers 235 or 535 itself (handled=True would leave the client waiting).
        return AuthResult(success=ok, handled=False)

    def _record(self, envelope) -> None:
        with self._lock:
            self.count += 1
            count = self.count
            if self.keep_messages:
                self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.content)))
        if self.capture_dir:
            self._capture(count, envelope)

    def _capture(self, count: int, envelope) -> None:
        # Numbered after the captures already in the folder (a restarted server keeps the earlier ones), and
        # created exclusively: a file that exists is never overwritten.
        number = self._captured_before + count
        while True:
            path = self.capture_dir / f"{number:06d}.eml"
            try:
                with path.open("xb") as out:
                    out.write(envelope.content)
                break
            except FileExistsError:
                number += 1
                self._captured_before += 1
        if self.log is None:
            return
        subject = next(
            (line[9:].strip() for line in envelope.content.decode("utf-8", "replace").splitlines()
             if line.lower().startswith("subject: ")),
            "",
        )
        self.log.write(f"captured {envelope.mail_from} -> {', '.join(envelope.rcpt_tos)}: {subject!r} ({path})\n")
        self.log.flush()

    def start(self) -> SmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        # Close the connections still open first: a client that keeps an idle connection for the next message
        # (mailboxes.transports.smtp.ConnectionPool, 30 s) would otherwise hold the stop that long, since the
        # server waits for every connection to end (asyncio, Python 3.12+; close_clients is 3.13's).
        server, loop = self._controller.server, self._controller.loop
        close_clients = getattr(server, "close_clients", None)
        if close_clients is not None and not loop.is_closed():
            loop.call_soon_threadsafe(close_clients)
        self._controller.stop()

    def __enter__(self) -> SmtpServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def reset(self, *, data_delay: float | None = None) -> None:
        """Forget what was received (between measured runs); optionally stall DATA from now on."""
        with self._lock:
            self.count = 0
            self.received = []
            self.arrived = []
        if data_delay is not None:
            self.behaviour.data_delay = data_delay

    def wait_for(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.count < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def message_ids(self) -> list[str]:
        with self._lock:
            return [r.message_id for r in self.received]

    def arrived_ids(self) -> list[str]:
        with self._lock:
            return list(self.arrived)

    def hold(self) -> None:
        """From now on, DATA that arrives stays unanswered until release()."""
        self._released.clear()
        self.holding = True

    def release(self) -> None:
        self.holding = False
        self._released.set()
