"""Fault drills on the send path: workers killed at each checkpoint, SMTP failures, Redis and PostgreSQL lost."""


from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from db.clock import db_now
from proving.drills.audit import audit
from proving.drills.faults.base import (
    CHECKPOINTS,
    FINAL,
    Ctx,
    Recovery,
    Row,
    S,
    all_final,
    db_safe,
    dispatch_without_sweep,
    enroll_many,
    make_mailbox,
    make_sequence,
)
from proving.harness.stack import DrillError, PrivatePostgres, wait_for
from sequences.models import Enrollment, SendJob, Suppression

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
