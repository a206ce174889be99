"""The fault drills' SMTP server: tests.servers.smtp.SmtpServer, plus what a drill must see and hold.

One copy of the server: this wraps the test suite's aiosmtpd server (its
Behaviour: 451/550 at RCPT, DATA rejected, delayed or dropped) and adds only
(1) the Message-IDs whose DATA has arrived, before the server answers;
(2) a hold that keeps DATA unanswered until released -- so a drill can kill a
worker while it is inside DATA, then let the server keep the message;
(3) a reply for the first RCPT of each address only (a greylisting server:
451 once, then accepted), so a retry meets a server that has recovered.
"""

from __future__ import annotations

import asyncio
import threading
from email.parser import BytesHeaderParser

from aiosmtpd.controller import Controller

try:
    from tests.servers.smtp import Behaviour, SmtpServer
except ImportError as exc:  # a deployment without the test suite
    raise ImportError("`drill faults` needs the repository's tests package (tests.servers.smtp); "
                      "run it from a checkout with `scripts/setup --test`") from exc

__all__ = ["Behaviour", "DrillSmtp"]
HOLD_LIMIT = 120.0  # seconds: a held DATA is answered anyway after this


class _Observer:
    def __init__(self, inner, server: DrillSmtp):
        self.inner = inner
        self.server = server

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        first_reply = self.server.first_rcpt_reply
        if first_reply:
            with self.server._lock:
                first = address not in self.server.rcpt_seen
                self.server.rcpt_seen.add(address)
            if first:
                return first_reply
        return await self.inner.handle_RCPT(server, session, envelope, address, rcpt_options)

    async def handle_DATA(self, server, session, envelope):
        message_id = str(BytesHeaderParser().parsebytes(envelope.content).get("Message-ID", "")).strip()
        holding = self.server.holding
        with self.server._lock:
            self.server.arrived.append(message_id)
        if holding:
            waited = 0.0
            while not self.server._released.is_set() and waited < HOLD_LIMIT:
                await asyncio.sleep(0.02)
                waited += 0.02
        return await self.inner.handle_DATA(server, session, envelope)


class DrillSmtp(SmtpServer):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.arrived: list[str] = []
        self.first_rcpt_reply: str | None = None
        self.rcpt_seen: set[str] = set()
        self.holding = False
        self._released = threading.Event()
        self._controller = Controller(_Observer(self._controller.handler, self), hostname=self.host, port=self.port)

    def hold(self) -> None:
        """From now on, DATA that arrives stays unanswered until release()."""
        self._released.clear()
        self.holding = True

    def release(self) -> None:
        self.holding = False
        self._released.set()

    def arrived_ids(self) -> list[str]:
        with self._lock:
            return list(self.arrived)
