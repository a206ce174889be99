"""A real SMTP server on loopback (aiosmtpd) that can accept, delay, reject or drop."""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
    data_reply: str | None = None  # e.g. "554 5.6.0 rejected"
    data_delay: float = 0.0  # seconds to stall before answering DATA (async; never blocks the loop)
    drop_in_data: bool = False  # close the connection after the data arrived, before answering
    record_when_dropped: bool = True  # a dropped or stalled message may still have been delivered


@dataclass
class _Handler:
    server: "SmtpServer"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        behaviour = self.server.behaviour
        if behaviour.rcpt_reply:
            return behaviour.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        behaviour = self.server.behaviour
        if behaviour.data_reply:
            return behaviour.data_reply
        if behaviour.data_delay:
            await asyncio.sleep(behaviour.data_delay)
        if behaviour.drop_in_data:
            if behaviour.record_when_dropped:
                self.server._record(envelope)
            server.transport.close()
            return "421 closing"
        self.server._record(envelope)
        return "250 2.0.0 Ok: queued"


@dataclass
class SmtpServer:
    port: int = field(default_factory=free_port)
    host: str = "127.0.0.1"
    behaviour: Behaviour = field(default_factory=Behaviour)
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._controller = Controller(_Handler(self), hostname=self.host, port=self.port)

    def _record(self, envelope) -> None:
        with self._lock:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), bytes(envelope.content)))

    def start(self) -> "SmtpServer":
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def message_ids(self) -> list[str]:
        with self._lock:
            return [r.message_id for r in self.received]
