"""`drill faults`: break the stack on purpose, then audit the database and the SMTP server's log.

Every drill runs real processes on loopback (`manage.py rqworker send`
subprocesses, a private redis-server, PostgreSQL, Dovecot, aiosmtpd), is
bounded in time, and ends with the same audit (proving.drills.audit) plus
its own expectations:

kill       SIGKILL a worker (its whole process group) at `claimed`, `prepared`,
           `authorized`, inside SMTP DATA (the server holds DATA unanswered) and
           at `submitted` (sent, not yet recorded); then the sweeper (short
           leases) and a healthy worker. Killed before authorization: sent
           exactly once. After: `unknown`, labelled, never resent.
smtp       451 then accepted; 451 every time; 550 at RCPT; 554 at DATA; the
           connection closed mid-DATA; DATA stalled past the client timeout.
redis      a run of N sends: the private Redis is flushed at 1/3, killed and
           restarted empty at 2/3; the dispatcher's stale re-enqueue recovers.
postgres   a run of N/2 sends against a private cluster, restarted
           (immediate shutdown) halfway; never the machine's cluster.
imap       Dovecot killed mid-fetch, UIDVALIDITY changed, the same reply
           delivered twice and copied to another folder.
fuzz       N mutated inbound messages through mailboxes.ingest.inbound_record:
           no crash, each recorded or quarantined.
bigheader  ingestion time of messages with one long header (6-100 KB), each
           in a child process with a time budget.

The sweeper and the dispatcher's stale re-enqueue run as the product's
`sequences.tasks.dispatch`, with a stale threshold of seconds instead of
minutes so the drills stay short.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, connections
from django.test.utils import override_settings

from mailboxes.models import InboundMessage, Mailbox
from proving.drills.audit import Audit, audit
from proving.harness import data, mails
from proving.harness.stack import (
    Database,
    DrillError,
    PrivatePostgres,
    PrivateRedis,
    Process,
    dedicated_database,
    make_tempdir,
    start_worker,
    subprocess_env,
    wait_for,
)
from sequences import services
from sequences.dbclock import db_now
from sequences.models import Enrollment, SendJob, Sequence, Suppression, TimelineEvent
from sequences.tasks import dispatch, enqueue_sends

S = SendJob.State
DRILLS = ("kill", "smtp", "redis", "postgres", "imap", "fuzz", "bigheader")
CHECKPOINTS = ("claimed", "prepared", "authorized", "data", "submitted")
FINAL = (S.SUBMITTED, S.ACCEPTED, S.CANCELED, S.FAILED, S.UNKNOWN)
# Seconds after which the dispatcher re-enqueues a queued job (production: 600, passes every 10 s). Short
# here so the drills stay short, but not shorter than a busy worker's backlog: every pass re-enqueues
# *every* queued job older than this again (queued_at does not move), flooding the queue with duplicates.
STALE_AFTER = 10
IMAP_PASSWORD_ENV = "OUTREACH_DRILL_IMAP_PASSWORD"


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
    ids = services.dispatch_due()
    enqueue_sends(ids)
    return ids


def send_step_one_in_process(job_ids: list[int]) -> None:
    """For drills about ingestion: send step 1 through the real pipeline, in this process."""
    from sequences.pipeline import send_job_process

    for job_id in services.dispatch_due():
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


# --- kill ---------------------------------------------------------------------------------


def drill_kill(ctx: Ctx, *, kills: int) -> list[Row]:
    from proving.harness.smtp import SmtpServer

    with contextlib.ExitStack() as stack:
        smtp = SmtpServer().start()
        stack.callback(smtp.stop)
        sequence = make_sequence(make_mailbox("kill", port=smtp.port))
        rounds: dict[str, list[int]] = {}
        seconds: dict[str, float] = {}
        for point in CHECKPOINTS:
            t0 = time.monotonic()
            job_ids = enroll_many(sequence, kills, f"kill-{point}")
            message_ids = set(SendJob.objects.filter(pk__in=job_ids).values_list("message_id", flat=True))
            pause_dir = ctx.tmpdir / f"pause-{point}"
            # Victims hold short leases so the sweeper can take their jobs back soon after the kill.
            extra: dict[str, Any] = {"OUTREACH_LEASE_SECONDS": 2, "OUTREACH_SMTP_TIMEOUT": 150}
            if point == "data":
                smtp.hold()
            else:
                extra |= {"OUTREACH_PAUSE_AT": point, "OUTREACH_PAUSE_DIR": str(pause_dir)}
            dispatch_without_sweep()
            env = ctx.env(**extra)
            victims = [ctx.worker(f"victim-{point}-{i}", env=env) for i in range(kills)]

            def arrived(job_ids=job_ids, message_ids=message_ids, point=point, pause_dir=pause_dir, victims=victims):
                if point == "data":
                    return message_ids <= set(smtp.arrived_ids())
                dead = [v for v in victims if not v.alive()]
                if dead:
                    raise DrillError(f"victim {dead[0].name} exited before the kill:\n{dead[0].log_tail()}")
                return all((pause_dir / f"{j}.{point}.paused").exists() for j in job_ids)

            wait_for(arrived, timeout=60 + 3 * kills, what=f"{kills} workers to reach {point!r}")
            for victim in victims:
                victim.kill()
            if point == "data":
                smtp.release()  # the server now answers DATA to clients that are gone (and may keep the mail)
            rounds[point] = job_ids
            seconds[point] = time.monotonic() - t0
            ctx.say(f"kill: {kills} workers SIGKILLed at {point!r} ({seconds[point]:.1f}s)")

        every = [j for ids in rounds.values() for j in ids]
        wait_for(lambda: not SendJob.objects.filter(pk__in=every, state__in=(S.CLAIMED, S.AUTHORIZED),
                                                    lease_until__gte=db_now()).exists(),
                 timeout=30, what="the killed workers' leases to expire")
        t0 = time.monotonic()
        with Recovery(ctx, workers=1) as recovery:
            wait_for(lambda: (recovery.supervise(), all_final(every))[1], timeout=120,
                     what="the sweeper and a healthy worker to finish every killed job")
        recovery_seconds = time.monotonic() - t0
        time.sleep(0.2)  # a DATA answered to a dead client is recorded by the server's own thread
        received = smtp.message_ids()

    rows = []
    for point, job_ids in rounds.items():
        row = Row(f"kill at {point if point != 'data' else 'SMTP DATA'}", runs=len(job_ids))
        row.audit = audit(SendJob.objects.filter(pk__in=job_ids), received)
        for job in SendJob.objects.filter(pk__in=job_ids):
            got = received.count(job.message_id)
            if point in ("claimed", "prepared"):
                if job.state != S.SUBMITTED or got != 1:
                    row.problems.append(f"job {job.pk} killed before authorization ended {job.state}, "
                                        f"received {got}x (expected submitted, once)")
            else:
                if job.state != S.UNKNOWN:
                    row.problems.append(f"job {job.pk} killed after authorization ended {job.state} "
                                        "(expected unknown, never resent)")
                expected = {"authorized": (0,), "data": (0, 1), "submitted": (1,)}[point]
                if got not in expected:
                    row.problems.append(f"job {job.pk} killed at {point} received {got}x (expected {expected})")
        row.notes.append({"claimed": "requeued by the sweeper, then sent once",
                          "prepared": "requeued by the sweeper, then sent once",
                          "authorized": "unknown: never reached the server, never resent",
                          "data": "unknown: killed while the server held DATA unanswered; it may or may not keep it",
                          "submitted": "unknown: the server has it, the worker died before recording"}[point])
        row.seconds = seconds[point] + recovery_seconds / len(rounds)
        rows.append(row.settle())
    rows[-1].notes.append(recovery.note())
    return rows


# --- SMTP ------------------------------------------------------------------------------------


def drill_smtp(ctx: Ctx, *, n: int) -> list[Row]:
    from proving.harness.smtp import Behaviour, SmtpServer

    timeout = 1  # OUTREACH_SMTP_TIMEOUT of these workers: a local server answers in milliseconds
    cases = [
        ("smtp 451, then accepted", Behaviour()),  # 451 to each address's first RCPT only: see below
        ("smtp 451 every time", Behaviour(rcpt_reply="451 4.3.0 try later")),
        ("smtp 550 at RCPT", Behaviour(rcpt_reply="550 5.1.1 no such user")),
        ("smtp 554 at DATA", Behaviour(data_reply="554 5.6.0 message rejected")),
        ("smtp closed mid-DATA", Behaviour(drop_in_data=True)),
        ("smtp DATA stalled past timeout", Behaviour(data_delay=timeout + 1.5)),
    ]
    started = time.monotonic()
    servers, jobs = {}, {}
    with contextlib.ExitStack() as stack:
        for name, behaviour in cases:
            server = SmtpServer(behaviour=behaviour).start()
            stack.callback(server.stop)
            if name == "smtp 451, then accepted":
                server.behaviour.first_rcpt_reply = "451 4.7.1 greylisted, try again later"
            servers[name] = server
            jobs[name] = enroll_many(make_sequence(make_mailbox("smtp", port=server.port)), n, "smtp")
        with Recovery(ctx, workers=2, OUTREACH_SMTP_TIMEOUT=timeout, OUTREACH_MAX_ATTEMPTS=2,
                      OUTREACH_RETRY_BASE_SECONDS=2) as recovery:
            every = [j for ids in jobs.values() for j in ids]
            wait_for(lambda: (recovery.supervise(), all_final(every))[1], timeout=90,
                     what="every SMTP-fault job to reach a final state")
        time.sleep(2)  # let the stalled server finish its answer (it may keep the message)
        received = {name: server.message_ids() for name, server in servers.items()}
    elapsed = time.monotonic() - started

    rows = []
    for name, _ in cases:
        row = Row(name, runs=len(jobs[name]), seconds=elapsed / len(cases))
        row.audit = audit(SendJob.objects.filter(pk__in=jobs[name]), received[name])
        for job in SendJob.objects.filter(pk__in=jobs[name]).select_related("enrollment__contact"):
            got = received[name].count(job.message_id)
            want = {
                "smtp 451, then accepted": (S.SUBMITTED, (1,)),
                "smtp 451 every time": (S.FAILED, (0,)),
                "smtp 550 at RCPT": (S.FAILED, (0,)),
                "smtp 554 at DATA": (S.FAILED, (0,)),
                "smtp closed mid-DATA": (S.UNKNOWN, (0, 1)),
                "smtp DATA stalled past timeout": (S.UNKNOWN, (0, 1)),
            }[name]
            if job.state != want[0] or got not in want[1]:
                row.problems.append(f"job {job.pk} ended {job.state}, received {got}x; expected {want[0]}, "
                                    f"received {' or '.join(map(str, want[1]))}")
            if name == "smtp 550 at RCPT":
                entry = Suppression.objects.filter(value=job.enrollment.contact.email).order_by("-id").first()
                if entry is None or entry.reason != Suppression.Reason.HARD_BOUNCE:
                    row.problems.append(f"{job.enrollment.contact.email} not suppressed as a hard bounce")
            if name == "smtp 451, then accepted" and job.attempts != 2:
                row.problems.append(f"job {job.pk}: {job.attempts} attempts, expected 2")
        row.notes.append({
            "smtp 451, then accepted": "retried through the guard after backoff, sent once",
            "smtp 451 every time": "failed after OUTREACH_MAX_ATTEMPTS=2, never sent",
            "smtp 550 at RCPT": "failed; the address is suppressed (hard bounce) and its enrollment stopped",
            "smtp 554 at DATA": "failed, never sent",
            "smtp closed mid-DATA": "unknown (the server had the data): never resent",
            "smtp DATA stalled past timeout": f"unknown after the {timeout}s client timeout: never resent",
        }[name])
        rows.append(row.settle())
    rows[-1].notes.append(recovery.note())
    return rows


# --- Redis and PostgreSQL under a run of sends -------------------------------------------------


WINDOW = 20  # live jobs at most in a run of sends: drained well within the stale threshold (_run_of_sends)
CHUNK = 10


def _run_of_sends(ctx: Ctx, *, n: int, label: str, fault_at: tuple[float, ...], fault: Callable[[int], str],
                  ready: Callable[[Any], bool], workers: int, timeout: float, lease: int) -> Row:
    """n one-step enrollments sent by `workers` healthy workers; `fault(i)` fires once fault_at[i] of n
    arrived and `ready(jobs)` says there is something for it to hit (jobs waiting in Redis, jobs in flight).

    Contacts are enrolled while the run goes on, CHUNK at a time, keeping at most WINDOW jobs live: as
    production sees jobs fall due over time. Enrolling all n at once would leave a backlog older than the
    stale threshold, and the dispatcher re-enqueues every such job again on every pass (queued_at does not
    move), so the queue fills with duplicates faster than workers can discard them.
    """
    from proving.harness.smtp import SmtpServer

    row = Row(label, runs=n)
    prefix = label.split()[0]
    with contextlib.ExitStack() as stack:
        smtp = SmtpServer().start()
        stack.callback(smtp.stop)
        sequence = make_sequence(make_mailbox(prefix, port=smtp.port))
        jobs = SendJob.objects.filter(enrollment__sequence=sequence)
        fired: list[str] = []
        started = time.monotonic()
        with Recovery(ctx, workers=workers, interval=1.0, OUTREACH_LEASE_SECONDS=lease) as recovery:

            def progress():
                recovery.supervise()
                got = len(smtp.received)
                if len(fired) < len(fault_at) and got >= fault_at[len(fired)] * n and ready(jobs):
                    fired.append(f"{fault(len(fired))} after {got} of {n} received "
                                 f"({time.monotonic() - started:.1f}s)")
                    ctx.say(f"{label}: {fired[-1]}")
                created = Enrollment.objects.filter(sequence=sequence).count()
                if created < n and jobs.exclude(state__in=FINAL).count() < WINDOW:
                    enroll_many(sequence, min(CHUNK, n - created), prefix)
                    return False
                return (created == n and len(fired) == len(fault_at)
                        and all_final(list(jobs.values_list("pk", flat=True))))

            wait_for(db_safe(progress), timeout=timeout, what=f"{label}: every job final", interval=0.1)
        row.seconds = time.monotonic() - started
        received = smtp.message_ids()
    row.audit = audit(jobs, received)
    states = Counter(jobs.values_list("state", flat=True))
    row.notes += fired + [recovery.note(), "final states: " + ", ".join(f"{k} {v}" for k, v in sorted(states.items())),
                          f"{n / row.seconds:.1f} sends/s with {workers} workers, enrolling and faults included"]
    unaccounted = n - states.get(S.SUBMITTED, 0) - states.get(S.UNKNOWN, 0)
    if unaccounted:
        row.problems.append(f"{unaccounted} jobs neither submitted nor unknown")
    row.extra["states"] = dict(states)
    return row.settle()


def drill_redis(ctx: Ctx, *, n: int) -> list[Row]:
    def waiting() -> int:
        return ctx.redis.client().llen("rq:queue:send")

    def fault(i: int) -> str:
        lost = waiting()
        if i == 0:
            ctx.redis.flushall()
            return f"FLUSHALL ({lost} RQ jobs waiting in Redis lost)"
        ctx.redis.restart()
        return f"redis-server killed and restarted empty ({lost} RQ jobs waiting lost)"

    return [_run_of_sends(ctx, n=n, label="redis flushed + restarted", fault_at=(1 / 3, 2 / 3), fault=fault,
                          ready=lambda jobs: waiting() >= 3, workers=4, timeout=120 + n * 1.0, lease=30)]


def drill_postgres(ctx: Ctx, *, n: int, schema: str) -> list[Row]:
    if not shutil.which("runuser") and os.geteuid() == 0:
        return [Row("postgres restarted", 0, status="SKIP", notes=["runuser not found"])]
    try:
        pg = PrivatePostgres(ctx.tmpdir).start()
    except DrillError as exc:
        return [Row("postgres restarted", 0, status="SKIP",
                    notes=[f"no private cluster ({exc}); the machine's cluster is never restarted"])]
    try:
        database = pg.database()
        with database.active():
            database.migrate(schema=schema)
            sub = Ctx(ctx.out, ctx.tmpdir, database, ctx.redis, ctx.seed, ctx.quick, ctx.procs)

            hit: list[int] = []

            def in_flight(jobs) -> bool:
                hit[:] = jobs.filter(state__in=(S.CLAIMED, S.AUTHORIZED)).values_list("pk", flat=True)
                return bool(hit)

            def fault(i: int) -> str:
                pg.restart(mode="immediate")
                return "PostgreSQL stopped (immediate: no checkpoint, like a crash) and started, with jobs in flight"

            # Short leases: claims orphaned by the restart come back to the queue quickly.
            row = _run_of_sends(sub, n=n, label="postgres restarted", fault_at=(0.5,), fault=fault, ready=in_flight,
                                workers=4, timeout=120 + n * 1.0, lease=5)
            after = Counter(SendJob.objects.filter(pk__in=hit).values_list("state", flat=True))
            row.notes.insert(0, f"private cluster 127.0.0.1:{pg.port}, not the machine's")
            row.notes.insert(2, f"{len(hit)} jobs claimed or authorized just before the restart ended: "
                             + ", ".join(f"{k} {v}" for k, v in sorted(after.items())))
            return [row]
    finally:
        pg.stop()


# --- IMAP --------------------------------------------------------------------------------------


def drill_imap(ctx: Ctx, *, n: int, kills: int) -> list[Row]:
    from mailboxes.imap import ImapError
    from mailboxes.ingest import mailbox_poll
    from proving.harness.dovecot import Dovecot, dovecot_available
    from proving.harness.smtp import SmtpServer

    row = Row("imap kill/uidvalidity/dups", runs=n)
    if not dovecot_available():
        row.status = "SKIP"
        row.notes.append("dovecot is not installed (apt-get install -y dovecot-imapd)")
        return [row]
    started = time.monotonic()
    saved_env = os.environ.get(IMAP_PASSWORD_ENV)
    with contextlib.ExitStack() as stack:
        dovecot = Dovecot({"drill": "drillpw"})
        stack.callback(dovecot.cleanup)
        dovecot.start()
        dovecot.create_folder("drill", "Archive")
        os.environ[IMAP_PASSWORD_ENV] = "drillpw"
        stack.callback(lambda: os.environ.pop(IMAP_PASSWORD_ENV, None) if saved_env is None
                       else os.environ.__setitem__(IMAP_PASSWORD_ENV, saved_env))
        smtp = SmtpServer().start()
        stack.callback(smtp.stop)
        mailbox = make_mailbox("imap", port=smtp.port, imap_host=dovecot.host, imap_port=dovecot.port,
                               imap_username="drill", imap_password_env=IMAP_PASSWORD_ENV,
                               imap_folders=["INBOX", "Archive"])
        step1 = enroll_many(make_sequence(mailbox, waits=(0, 86400)), n, "imap")
        send_step_one_in_process(step1)
        jobs = list(SendJob.objects.filter(pk__in=step1).select_related("enrollment__contact"))
        replies = {job.enrollment_id: mails.drill_reply(to_message_id=job.message_id,
                                                        sender=job.enrollment.contact.email, to=mailbox.address)
                   for job in jobs}
        with dovecot.client("drill") as client:
            for raw in replies.values():
                client.append("INBOX", raw)
                client.append("INBOX", raw)  # delivered twice
                client.append("Archive", raw)  # and copied to another folder

        killed = 0
        batch = max(2, n // 5)

        def poll_until_done(allow_kills: bool) -> int:
            nonlocal killed
            polls = 0
            while True:
                polls += 1
                if polls > 50:
                    raise DrillError("imap: the poller made no progress in 50 passes")

                def progress(folder, done, total):
                    nonlocal killed
                    if allow_kills and killed < kills and done >= batch:
                        dovecot.kill()  # mid-fetch: between two batches of one pass
                        killed += 1

                try:
                    result = mailbox_poll(mailbox_id=mailbox.pk, batch_size=batch, progress=progress)
                except ImapError:
                    dovecot.start()
                    continue
                if result.fetched == 0:
                    return polls

        poll_until_done(allow_kills=True)
        # Dovecot re-reads dovecot-uidlist only while the maildir looks recently changed (about a second
        # after the last change); the harness's reset_uidvalidity replaces the file and checks at once, so
        # touch cur/ and new/ first or, seconds after the last delivery, the new UIDVALIDITY is not seen.
        for sub in ("cur", "new"):
            os.utime(dovecot.maildir("drill", "INBOX") / sub)
        dovecot.reset_uidvalidity("drill", "INBOX")
        poll_until_done(allow_kills=False)
        redelivered = list(replies.values())[: max(1, n // 4)]
        with dovecot.client("drill") as client:
            for raw in redelivered:
                client.append("INBOX", raw)  # the same reply once more, after everything
            counts = {}
            for folder in ("INBOX", "Archive"):
                client.select_folder(folder, readonly=True)
                counts[folder] = len(client.search("ALL"))
        poll_until_done(allow_kills=False)
        received = smtp.message_ids()

    enrollment_ids = list(replies)
    row.audit = audit(SendJob.objects.filter(enrollment_id__in=enrollment_ids), received)
    reply_ids = {str(mail_id) for mail_id in InboundMessage.objects.filter(mailbox=mailbox).values_list(
        "message_id", flat=True)}
    acting = InboundMessage.objects.filter(mailbox=mailbox, duplicate_of=None).count()
    if acting != n or len(reply_ids) != n:
        row.problems.append(f"{acting} inbound rows acted for {n} distinct replies")
    stops = Counter(TimelineEvent.objects.filter(enrollment_id__in=enrollment_ids, kind="enrollment_stopped")
                    .values_list("enrollment_id", flat=True))
    twice = [e for e, c in stops.items() if c > 1]
    if twice or len(stops) != n:
        row.problems.append(f"{len(stops)} of {n} enrollments stopped; {len(twice)} stopped more than once")
    not_stopped = Enrollment.objects.filter(pk__in=enrollment_ids).exclude(status=Enrollment.Status.STOPPED).count()
    if not_stopped:
        row.problems.append(f"{not_stopped} enrollments not stopped after their reply")
    follow_ups = Counter(SendJob.objects.filter(enrollment_id__in=enrollment_ids, step__position=2)
                         .values_list("state", "cancel_reason"))
    if follow_ups != Counter({(S.CANCELED, "replied"): n}):
        row.problems.append(f"follow-ups: {dict(follow_ups)} (expected {n} canceled, replied)")
    from mailboxes.models import ImapCursor

    rows_now = {}
    for cursor in ImapCursor.objects.filter(mailbox=mailbox):
        rows_now[cursor.folder] = InboundMessage.objects.filter(mailbox=mailbox, folder=cursor.folder,
                                                                uidvalidity=cursor.uidvalidity).count()
    if rows_now != counts:
        row.problems.append(f"messages on the server {counts} but recorded under the current UIDVALIDITY {rows_now}")
    total = InboundMessage.objects.filter(mailbox=mailbox).count()
    rescans = ImapCursor.objects.get(mailbox=mailbox, folder="INBOX").rescans
    row.notes += [f"Dovecot SIGKILLed mid-fetch (between two FETCH batches of a pass) {killed}x; "
                  "the next pass resumed from the cursor",
                  f"UIDVALIDITY changed once (rescans {rescans}): {2 * n} messages seen again, 0 acted",
                  f"{total} inbound rows for {n} replies (twice in INBOX, a copy in Archive, the rescan, "
                  f"{len(redelivered)} redelivered): {acting} acted, every enrollment stopped once"]
    row.seconds = time.monotonic() - started
    return [row.settle()]


# --- fuzz and oversized headers ----------------------------------------------------------------


class _Counting:
    """Counts (and swallows) records of a chatty library logger during the fuzz run."""

    def __init__(self, name: str):
        import logging

        self.logger = logging.getLogger(name)
        self.count = 0
        handler = logging.Handler()
        handler.emit = lambda record: setattr(self, "count", self.count + 1)  # type: ignore[method-assign]
        self.handler = handler

    def __enter__(self):
        self.saved = (self.logger.propagate, list(self.logger.handlers))
        self.logger.propagate = False
        self.logger.handlers = [self.handler]
        return self

    def __exit__(self, *exc):
        self.logger.propagate, self.logger.handlers = self.saved


def _multipart_sample(to_message_id: str, sender: str) -> bytes:
    return (
        f"From: =?utf-8?Q?Ad=C3=A9la?= <{sender}>\r\nTo: fuzz@drill.invalid\r\n"
        "Subject: =?utf-8?B?UmU6IEhlbGxvIOKAlCBzdXBlcg==?=\r\n"
        f"Message-ID: <mp.{secrets.token_hex(6)}@drill.invalid>\r\n"
        f"In-Reply-To: {to_message_id}\r\nReferences: <older@drill.invalid> {to_message_id}\r\nMIME-Version: 1.0\r\n"
        "Content-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n--b1\r\n"
        "Content-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
        "Merci, pas maintenant. D=E9sol=E9e.\r\n--b1\r\nContent-Type: text/html; charset=utf-8\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\nPHA+TWVyY2ksIHBhcyBtYWludGVuYW50LjwvcD4=\r\n--b1--\r\n"
    ).encode()


def drill_fuzz(ctx: Ctx, *, count: int) -> list[Row]:
    from mailboxes.ingest import inbound_record
    from proving.drills.fuzz import mutants
    from proving.harness.smtp import SmtpServer

    row = Row("fuzz inbound", runs=count)
    with contextlib.ExitStack() as stack:
        smtp = SmtpServer().start()
        stack.callback(smtp.stop)
        mailbox = make_mailbox("fuzz", port=smtp.port)
        step1 = enroll_many(make_sequence(mailbox, waits=(0, 86400)), 5, "fuzz")
        send_step_one_in_process(step1)
        received = smtp.message_ids()
    a, b, c, d, e = SendJob.objects.filter(pk__in=step1).order_by("pk").select_related("enrollment__contact")
    samples = [
        mails.reply(to_message_id=a.message_id, sender=a.enrollment.contact.email),
        mails.dsn(original_message_id=b.message_id, recipient=b.enrollment.contact.email),
        mails.arf(original_message_id=c.message_id, recipient=c.enrollment.contact.email),
        mails.out_of_office(to_message_id=d.message_id, sender=d.enrollment.contact.email),
        mails.reply(to_message_id=e.message_id, sender=e.enrollment.contact.email,
                    body="Please unsubscribe me and remove me from your list."),
        _multipart_sample(a.message_id, a.enrollment.contact.email),
    ]
    crashes: list[tuple[int, list[str], str]] = []
    crash_dir = Path(settings.VAR_DIR) / "drill-crashes" / time.strftime("%Y%m%d-%H%M%S")
    not_recorded = 0
    timings: list[tuple[float, list[str], int]] = []
    started = time.monotonic()
    with _Counting("flufl.bounce") as library_noise:
        for i, (names, raw) in enumerate(mutants(samples, count=count, seed=ctx.seed)):
            t0 = time.monotonic()
            try:
                result = inbound_record(mailbox_id=mailbox.pk, folder="FUZZ", uidvalidity=1,
                                        fetched=mails.fetched(raw, uid=i + 1))
                not_recorded += result.inbound_id is None
            except Exception as exc:  # noqa: BLE001 - the finding this drill exists for
                crashes.append((i + 1, names, f"{type(exc).__name__}: {exc}"[:300]))
                connection.close()
                crash_dir.mkdir(parents=True, exist_ok=True)
                (crash_dir / f"{i + 1:05d}-{'+'.join(names)}.eml").write_bytes(raw)
            timings.append((time.monotonic() - t0, names, len(raw)))
            if (i + 1) % 1000 == 0 and i + 1 < count:
                ctx.say(f"fuzz: {i + 1:,} of {count:,} inbound mails through ingestion, {len(crashes)} crashed")
    row.seconds = time.monotonic() - started
    rows = InboundMessage.objects.filter(mailbox=mailbox, folder="FUZZ")
    recorded = rows.count()
    kinds = Counter(rows.values_list("kind", flat=True))
    parse_errors = rows.exclude(parse_error="").count()
    row.audit = audit(SendJob.objects.filter(enrollment__sequence__mailbox=mailbox), received)
    if crashes:
        row.problems.append(f"{len(crashes)} messages crashed inbound_record (inputs saved in {crash_dir}); "
                            f"first: uid {crashes[0][0]} {'+'.join(crashes[0][1])}: {crashes[0][2]}")
    if recorded + len(crashes) != count or not_recorded:
        row.problems.append(f"{count} messages, {recorded} recorded, {len(crashes)} crashed, "
                            f"{not_recorded} answered 'already recorded'")
    durations = sorted(t for t, _, _ in timings)
    slow = sorted(timings, key=lambda t: -t[0])[:3]
    row.notes += [
        f"{recorded} recorded: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common())
        + f"; {parse_errors} with a parse error",
        f"per message p50 {statistics.median(durations) * 1000:.0f} ms, p99 "
        f"{durations[int(len(durations) * 0.99) - 1] * 1000:.0f} ms, max {durations[-1] * 1000:.0f} ms "
        f"({'+'.join(slow[0][1])}, {slow[0][2]} bytes)",
        f"flufl.bounce logged {library_noise.count} detector exceptions (caught by the classifier)",
    ]
    row.extra.update(kinds=dict(kinds), crashes=len(crashes), recorded=recorded, parse_errors=parse_errors,
                     p50_ms=round(statistics.median(durations) * 1000, 1), max_ms=round(durations[-1] * 1000, 1))
    return [row.settle()]


def _timed_parse(raw: bytes, *, budget: float) -> float | None:
    """Seconds mailboxes.ingest.parse takes on `raw` in a forked child, or None past `budget` (child killed)."""
    from mailboxes.ingest import parse

    connections.close_all()
    pid = os.fork()
    if pid == 0:  # the child: CPU only, no database
        try:
            parse(raw)
        finally:
            os._exit(0)
    started = time.monotonic()
    while time.monotonic() - started < budget:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return time.monotonic() - started
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def drill_big_headers(ctx: Ctx, *, budget: float = 5.0) -> list[Row]:
    """One long header per message. A poller that spends minutes on one mail delays every reply behind it."""
    from mailboxes.ingest import parse

    base = mails.drill_reply(to_message_id="<x@drill.invalid>", sender="big@drill.invalid", to="big@drill.invalid")
    parse(base)  # warm imports outside the timings
    row = Row("bigheader ingest time", runs=0)
    started = time.monotonic()
    figures = []
    for header in ("Content-Type", "From", "References", "Subject"):
        line = []
        for size in (6_000, 24_000, 100_000):
            value = (b"<a@b> " * (size // 6)) if header != "Subject" else (b"word " * (size // 5))
            took = _timed_parse(header.encode() + b": " + value + b"\r\n" + base, budget=budget)
            row.runs += 1
            line.append(f"{size // 1000} KB {'>' + str(budget) if took is None else f'{took:.2f}'}s")
            figures.append({"header": header, "bytes": size, "seconds": took})
            if took is None:
                row.problems.append(f"a {size // 1000} KB {header} header: parse did not finish in {budget:.0f}s")
                break  # larger ones only take longer
        row.notes.append(f"{header}: " + ", ".join(line))
    row.seconds = time.monotonic() - started
    row.extra["figures"] = figures
    if row.problems:
        row.notes.append("header parsing grows faster than linearly with the header's length: one crafted mail "
                         "can hold the poller (and every reply behind it) for minutes; mailboxes.ingest should "
                         "cap header lengths before parsing")
    return [row.settle()]


# --- the run and its table ----------------------------------------------------------------------


def run(*, quick: bool, only: tuple[str, ...] | None, kills: int | None, sends: int | None, fuzz: int | None,
        seed: int, json_path: str | None, out: TextIO, keep: bool = False, schema: str = "migrate") -> bool:
    selected = only or DRILLS
    unknown = [name for name in selected if name not in DRILLS]
    if unknown:
        raise DrillError(f"unknown drill(s) {', '.join(unknown)}; choose from {', '.join(DRILLS)}")
    kills = kills or (5 if quick else 20)
    sends = sends or (300 if quick else 2000)
    fuzz = fuzz or (1000 if quick else 10_000)
    imap_replies = 20 if quick else 100
    rows: list[Row] = []
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    tmpdir = make_tempdir("outreach-faults-")
    ctx = None
    with contextlib.ExitStack() as cleanup:
        if not keep:
            cleanup.callback(shutil.rmtree, tmpdir, ignore_errors=True)
        redis = PrivateRedis(tmpdir).start()
        cleanup.callback(redis.stop)
        if connections["default"].vendor == "postgresql":
            database = dedicated_database(tmpdir=tmpdir)
            if not keep:
                cleanup.callback(database.drop)
        else:  # SQLite configured: the drills need PostgreSQL, so they bring their own cluster
            pg = PrivatePostgres(tmpdir).start()
            cleanup.callback(pg.stop)
            database = pg.database()
        ctx = Ctx(out, tmpdir, database, redis, seed, quick)
        cleanup.callback(lambda: [p.kill() for p in ctx.procs])
        queues = {name: dict(cfg, URL=redis.url) for name, cfg in settings.RQ_QUEUES.items()}
        out.write(f"drill faults{' --quick' if quick else ''}: {', '.join(selected)}\n")
        out.write(f"  database  {database.label}\n  redis     private redis-server {redis.url}\n")
        out.flush()
        with override_settings(RQ_QUEUES=queues, REDIS_URL=redis.url):
            with database.active():
                out.write(f"  migrated the drill database in {database.migrate(schema=schema):.1f}s\n")
                plan: list[tuple[str, Callable[[], list[Row]]]] = [
                    ("kill", lambda: drill_kill(ctx, kills=kills)),
                    ("smtp", lambda: drill_smtp(ctx, n=min(kills, 5))),
                    ("redis", lambda: drill_redis(ctx, n=sends)),
                    ("imap", lambda: drill_imap(ctx, n=imap_replies, kills=1 if quick else 3)),
                    ("fuzz", lambda: drill_fuzz(ctx, count=fuzz)),
                    ("bigheader", lambda: drill_big_headers(ctx)),
                ]
                for name, drill in plan:
                    if name in selected:
                        rows += _guarded(name, drill, ctx)
                        redis.flushall()  # the next drill starts with an empty queue
            if "postgres" in selected:
                rows += _guarded("postgres", lambda: drill_postgres(ctx, n=max(50, sends // 2), schema=schema), ctx)
        connections["default"].close()
    total = time.monotonic() - started
    machine = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
               "platform": platform.platform(), "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    _print_table(out, rows, total, machine)
    passed = all(r.status in ("PASS", "SKIP") for r in rows)
    if json_path:
        Path(json_path).write_text(json.dumps({
            "command": "manage.py drill faults" + (" --quick" if quick else ""),
            "machine": machine,
            "database": database.label, "seconds": round(total, 1), "passed": passed,
            "parameters": {"kills": kills, "sends": sends, "fuzz": fuzz, "imap_replies": imap_replies, "seed": seed},
            "drills": [r.as_dict() for r in rows]}, indent=2, default=str))
        out.write(f"results written to {json_path}\n")
    return passed


def _guarded(name: str, drill: Callable[[], list[Row]], ctx: Ctx) -> list[Row]:
    """A drill that breaks down (a timeout, a crash) is a FAIL row, and the next drill still runs."""
    t0 = time.monotonic()
    try:
        return drill()
    except Exception as exc:  # noqa: BLE001
        connection.close()
        logs = [p for p in ctx.procs if p.log_tail()]
        tail = f"; last worker log ({logs[-1].name}): {logs[-1].log_tail(5)}" if logs else ""
        return [Row(name, 0, status="FAIL", problems=[f"{type(exc).__name__}: {exc}{tail}"],
                    seconds=time.monotonic() - t0)]
    finally:
        for proc in ctx.procs:
            if proc.alive():
                proc.kill()


def _print_table(out: TextIO, rows: list[Row], total: float, machine: dict[str, Any]) -> None:
    head = ("drill", "runs", "submitted", "received", "lost", "dup", "reopened", "after-stop", "non-final",
            "unknown (labelled)", "result", "s")
    table = []
    for r in rows:
        a = r.audit or Audit()
        table.append((r.drill, str(r.runs), str(a.submitted), str(a.received), str(a.lost), str(a.duplicated),
                      str(a.reopened), str(a.sent_after_stop), str(a.non_final),
                      f"{a.unknown} ({a.unknown_labelled})", r.status, f"{r.seconds:.0f}"))
    widths = [max(len(x[i]) for x in [head, *table]) for i in range(len(head))]
    line = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out.write("\n" + line.format(*head) + "\n" + "  ".join("-" * w for w in widths) + "\n")
    for values in table:
        out.write(line.format(*values) + "\n")
    out.write("\n")
    for r in rows:
        for note in r.notes:
            out.write(f"  {r.drill}: {note}\n")
        for problem in r.problems + (r.audit.problems[:10] if r.audit else []):
            out.write(f"  {r.drill}: FAIL {problem}\n")
    before, after = machine["load_average"]
    out.write(f"\nmachine: {machine['cpus']} CPUs, 1-minute load average {before} at the start and {after} at the "
              "end (other work on the machine slows the figures, not the verdicts)\n")
    failed = [r.drill for r in rows if r.status == "FAIL"]
    skipped = [r.drill for r in rows if r.status == "SKIP"]
    out.write(f"drill faults: {'FAIL' if failed else 'PASS'} in {total:.0f}s"
              + (f" (failed: {', '.join(failed)})" if failed else "")
              + (f" (skipped: {', '.join(skipped)})" if skipped else "") + "\n")
    out.flush()
