"""What every fault drill uses: its result row, its context, drill data, and the workers and dispatcher that recover."""


from __future__ import annotations

import secrets
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from django.db import InterfaceError, OperationalError, connection

from mailboxes.models import Mailbox
from proving.drills.audit import Audit
from proving.harness import data
from proving.harness.stack import Database, DrillError, PrivateRedis, Process, start_worker, subprocess_env
from sequences.models import SendJob, Sequence
from sequences.queues import enqueue_sends
from sequences.services.sending import dispatch_due
from sequences.tasks import dispatch

S = SendJob.State
DRILLS = ("kill", "smtp", "mailbox", "redis", "postgres", "imap", "fuzz", "bigheader")
CHECKPOINTS = ("claimed", "prepared", "authorized", "data", "submitted")
FINAL = (S.SUBMITTED, S.ACCEPTED, S.CANCELED, S.FAILED, S.UNKNOWN)
# Seconds after which the dispatcher re-enqueues a queued job (production: 600, passes every 10 s). Short
# here so the drills stay short, but not shorter than a busy worker's backlog: every pass re-enqueues
# *every* queued job older than this again (queued_at does not move), flooding the queue with duplicates.
STALE_AFTER = 10
IMAP_PASSWORD_ENV = "OUTREACH_SECRET_DRILL_IMAP"



@dataclass
class Row:
    drill: str
    runs: int
    status: str = "PASS"  # PASS | FAIL | SKIP
    audit: Audit | None = None
    problems: list[str] = field(default_factory=list)  # expectations not met (beyond the audit's)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def settle(self) -> Row:
        if self.status != "SKIP":
            clean = self.audit.clean if self.audit else True
            self.status = "PASS" if clean and not self.problems else "FAIL"
        return self

    def as_dict(self) -> dict[str, Any]:
        data = {"drill": self.drill, "runs": self.runs, "status": self.status, "seconds": round(self.seconds, 1),
                "problems": self.problems, "notes": self.notes, **self.extra}
        if self.audit:
            data["audit"] = self.audit.as_dict()
        return data


@dataclass
class Ctx:
    out: TextIO
    tmpdir: Path
    database: Database
    redis: PrivateRedis
    seed: int
    quick: bool
    procs: list[Process] = field(default_factory=list)

    def env(self, **extra: Any) -> dict[str, str]:
        return subprocess_env(database=self.database, redis_url=self.redis.url, **extra)

    def worker(self, name: str, *, env: dict[str, str], burst: bool = False) -> Process:
        proc = start_worker(name, env=env, log_dir=self.tmpdir, burst=burst)
        self.procs.append(proc)
        return proc

    def say(self, text: str) -> None:
        self.out.write(f"  .. {text}\n")
        self.out.flush()


# --- building drill data through the real services ----------------------------------------


def make_mailbox(label: str, *, port: int, **fields: Any) -> Mailbox:
    return data.mailbox_create(name=f"drill-{label}-{secrets.token_hex(3)}", address=f"{label}@drill.invalid",
                               display_name="Outreach drill", smtp_port=port, daily_cap=10_000_000,
                               is_drill_target=True, **fields)


def make_sequence(mailbox: Mailbox, *, waits: tuple[int, ...] = (0,)) -> Sequence:
    return data.sequence_create(mailbox=mailbox, name=f"{mailbox.name} sequence", waits=waits,
                                subject="Drill {{ first_name }}",
                                body="Fault drill step {position}. Nobody reads this (drill.invalid).")


def enroll_many(sequence: Sequence, n: int, prefix: str) -> list[int]:
    """Enroll n throwaway contacts through the services (4 threads for big runs); returns their step-1 job ids."""
    from concurrent.futures import ThreadPoolExecutor

    token = secrets.token_hex(3)

    def one(i: int) -> int:
        try:
            return data.enroll(sequence, f"{prefix}-{i}-{token}@drill.invalid", first_name="Drill", company="Drill",
                               actor="drill").pk
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()

    if n < 50:
        enrollment_ids = [one(i) for i in range(n)]
    else:
        with ThreadPoolExecutor(4) as pool:
            enrollment_ids = list(pool.map(one, range(n)))
    return list(SendJob.objects.filter(enrollment_id__in=enrollment_ids).order_by("pk").values_list("pk", flat=True))


def dispatch_without_sweep() -> list[int]:
    """The dispatcher's "queue due jobs" half. The kill drill holds the sweep back until every round
    has been killed, so that a job requeued from one round is not taken by the next round's victims."""
    ids = dispatch_due()
    enqueue_sends(ids)
    return ids


def send_step_one_in_process(job_ids: list[int]) -> None:
    """For drills about ingestion: send step 1 through the real pipeline, in this process."""
    from sequences.pipeline import send_job_process

    for job_id in dispatch_due():
        send_job_process(job_id=job_id, worker_id="drill")
    states = set(SendJob.objects.filter(pk__in=job_ids).values_list("state", flat=True))
    if states != {S.SUBMITTED}:
        raise DrillError(f"setup: step 1 did not go out ({states})")


def db_safe(predicate: Callable[[], Any]) -> Callable[[], Any]:
    """A predicate that survives a database restart (the connection is reopened next time)."""

    def wrapped():
        try:
            return predicate()
        except (OperationalError, InterfaceError):
            connection.close()
            return False

    return wrapped


def all_final(job_ids: list[int]) -> bool:
    """Every job in a final state (a retry scheduled for later is still pending)."""
    return not SendJob.objects.filter(pk__in=job_ids).exclude(state__in=FINAL).exists()


class Recovery:
    """What production runs: healthy `rqworker send` processes and the periodic dispatcher (a thread here)."""

    def __init__(self, ctx: Ctx, *, workers: int = 1, name: str = "healthy", interval: float = 0.3,
                 stale_after: int = STALE_AFTER, **env_extra: Any):
        self.ctx, self.count, self.name, self.interval = ctx, workers, name, interval
        self.stale_after = stale_after
        self.env = ctx.env(**env_extra)
        self.procs: list[Process] = []
        self.restarts = 0
        self.passes = 0
        self.totals: Counter = Counter()
        self.errors = 0
        self.last_error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="drill-dispatcher")

    def __enter__(self) -> Recovery:
        self.procs = [self.ctx.worker(f"{self.name}-{i}", env=self.env) for i in range(self.count)]
        self._thread.start()
        return self

    def supervise(self) -> None:
        """Replace a worker that exited (as a process supervisor would)."""
        for i, proc in enumerate(self.procs):
            if not proc.alive():
                self.restarts += 1
                self.procs[i] = self.ctx.worker(f"{self.name}-{i}-r{self.restarts}", env=self.env)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.totals.update(dispatch(stale_after_seconds=self.stale_after))
                    self.passes += 1
                except Exception as exc:  # noqa: BLE001 - Redis or PostgreSQL down mid-drill: next pass
                    self.errors += 1
                    self.last_error = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
                    connection.close()
                self._stop.wait(self.interval)
        finally:
            connection.close()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)
        for proc in self.procs:
            proc.stop(grace=3)

    def note(self) -> str:
        return (f"dispatcher (every {self.interval}s, stale after {self.stale_after}s): {self.passes} passes, "
                f"{self.totals['queued']} queued, "
                f"{self.totals['re_enqueued']} re-enqueued, {self.totals['marked_unknown']} marked unknown"
                + (f", {self.errors} passes failed ({self.last_error})" if self.errors else "")
                + (f"; {self.restarts} worker restarts" if self.restarts else ""))
