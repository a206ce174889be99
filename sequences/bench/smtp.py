"""A counting SMTP sink on loopback (aiosmtpd, in a thread of the bench process).

It accepts every message, keeps only a count and the recipients, and can stall
DATA (asyncio.sleep: other connections go on) to play a slow provider.
"""

from __future__ import annotations

import asyncio
import threading
import time

from aiosmtpd.controller import Controller

from ..drills.stack import free_port


class _Handler:
    def __init__(self, sink: SmtpSink):
        self.sink = sink

    async def handle_DATA(self, server, session, envelope):
        if self.sink.data_delay:
            await asyncio.sleep(self.sink.data_delay)
        self.sink._record(envelope.rcpt_tos)
        return "250 2.0.0 Ok: queued by bench sink"


class SmtpSink:
    def __init__(self, *, data_delay: float = 0.0):
        self.port = free_port()
        self.data_delay = data_delay
        self._lock = threading.Lock()
        self.count = 0
        self.recipients: list[str] = []
        # server_hostname: no getfqdn() (a DNS lookup) per connection.
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port,
                                      server_hostname="bench-sink.localhost")

    def _record(self, rcpt_tos: list[str]) -> None:
        with self._lock:
            self.count += 1
            self.recipients.extend(rcpt_tos)

    def reset(self, *, data_delay: float | None = None) -> None:
        with self._lock:
            self.count = 0
            self.recipients = []
        if data_delay is not None:
            self.data_delay = data_delay

    def wait_for(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.count < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def __enter__(self) -> SmtpSink:
        self._controller.start()
        return self

    def __exit__(self, *exc) -> None:
        self._controller.stop()
