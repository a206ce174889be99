"""`bench watcher --load`: a background load, so the busy case is measured on purpose rather than by chance.

- `cpu:N`: N processes that keep a CPU each busy (a Python busy loop), from before the first design connects
  until the last one is measured: the "two CPU-bound processes, load 7-8" of issue #47, on demand;
- `send:N`: per design, N follow-ups of a sending mailbox of their own (no IMAP), queued before the watcher
  starts and sent through the product's pipeline (claim, final check, SMTP hand-off) by one `rqworker send` to
  a local SMTP sink while the watcher is measured: the database, Redis and a worker busy as in production.
  What is left unsent when the design's measurement ends is left.

Both: `--load cpu:2,send:3000`. What each design ran under is in its JSON (`load`: the figures asked for, the
1-minute load average seen, the sends done).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

BURN = "import signal, sys; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\nwhile True: pass"


@dataclass(frozen=True)
class Load:
    cpu: int = 0
    send: int = 0

    def __bool__(self) -> bool:
        return bool(self.cpu or self.send)

    def words(self) -> str:
        parts = [f"{self.cpu} CPU burner process{'es' if self.cpu != 1 else ''}"] if self.cpu else []
        if self.send:
            parts.append(f"a send backlog of {self.send} follow-ups (one send worker, local SMTP sink)")
        return " and ".join(parts) or "none"


def parse_load(text: str | None) -> Load:
    """`cpu:N`, `send:N` or both, comma-separated; '' or None: no load."""
    values = {"cpu": 0, "send": 0}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        kind, _, number = part.partition(":")
        if kind not in values or not number.isdigit():
            raise ValueError(f"--load: {part!r} is not cpu:N or send:N (e.g. --load cpu:2,send:3000)")
        values[kind] = int(number)
    return Load(**values)


@dataclass
class LoadSeen:
    """The 1-minute load average, sampled while a design is measured."""

    samples: list[float] = field(default_factory=list)

    def sample(self) -> None:
        self.samples.append(os.getloadavg()[0])

    def report(self) -> dict[str, float | None]:
        if not self.samples:
            return {"min": None, "max": None}
        return {"min": round(min(self.samples), 2), "max": round(max(self.samples), 2)}


@contextmanager
def cpu_burners(count: int) -> Iterator[list[subprocess.Popen]]:
    """`count` busy-loop processes (children of this one: the outer bench stops them with it)."""
    procs = [subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass
class SendBacklog:
    """The send backlog of one design: how many follow-ups were queued and how many the sink has received."""

    queued: int
    sink: object
    started: float

    def report(self) -> dict[str, float | int]:
        seconds = time.monotonic() - self.started
        return {"queued": self.queued, "sent": self.sink.count, "seconds": round(seconds, 1),
                "sends_per_s": round(self.sink.count / seconds, 1) if seconds > 0 else 0.0}


@contextmanager
def send_backlog(count: int, *, tag: str) -> Iterator[SendBacklog | None]:
    """`count` follow-ups of a mailbox of their own, queued now and sent by one `rqworker send` to a local SMTP
    sink until the block ends (what is left is left queued). None when `count` is 0."""
    if not count:
        yield None
        return
    from django.conf import settings

    from proving.bench.procs import WorkerPool
    from proving.harness import backlog, data
    from proving.harness.smtp import SmtpServer

    sink = SmtpServer(keep_messages=False).start()
    try:
        mailbox = data.mailbox_create(name=f"{tag}-load", address=f"load@{tag}.load.outreach.test",
                                      smtp_port=sink.port, display_name="Load", daily_cap=10**9)
        jobs = backlog.followups_waiting(mailbox=mailbox, count=count, tag=f"{tag}load")
        with WorkerPool(1, "send"):
            # Queued before the watcher starts, a dispatcher pass per batch it queues (OUTREACH_DISPATCH_BATCH, 500);
            # no pass runs later: the bench's own follow-ups go through the final check by its hand, never to the
            # send worker.
            batch = settings.OUTREACH_DISPATCH_BATCH
            for first in range(0, len(jobs), batch):
                backlog.release(jobs[first:first + batch])
            yield SendBacklog(queued=len(jobs), sink=sink, started=time.monotonic())
    finally:
        sink.stop()
