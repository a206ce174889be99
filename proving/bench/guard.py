"""Guard cost: guarded sends/s next to the same pipeline without its final check.

For each worker count W and each variant, on a freshly emptied database:
N follow-up jobs (step 2 of a 2-step sequence, step 1 sent an hour ago,
spread over M mailboxes) are queued, W real `manage.py rqworker send`
processes are started and registered, each sends a few messages untimed
(`WARM_UP_PER_WORKER`: a worker's first job imports the pipeline), then N RQ
jobs are enqueued at once. The rate is N / (time from the enqueue until the
last job is recorded `submitted` in the database): the steady state's, as is
RQ's paired no-op rate, measured right after on the same warm workers. Both
variants run `sequences.pipeline.send_job_process`; only the authorize step
differs:

- guarded:   send_job_authorize (the product)
- unchecked: proving.variants.send_job_authorize_unchecked (no final check)

The authorize call is timed inside the workers: p50/p99 of that transaction.
Commits and rows written per send come from pg_stat_database.

A third run per W, "mixed", puts both variants in one queue, alternating, so
they share the same moments of background load: the per-send time in the
worker (the whole send_job_process call) of each variant, side by side, is
the load-robust figure of the guard's cost (the separate runs' rates move
with whatever else the machine is doing).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import Any

from django.db import connection
from django_rq import get_connection, get_queue
from rq import Queue
from rq.registry import FinishedJobRegistry

from proving.bench import ceiling
from proving.bench.cpu import ServerCpu, machine_busy_seconds, postmaster_pid
from proving.bench.procs import WorkerPool
from proving.bench.stats import StatementCounter, ratio, redis_summary_ms, table
from proving.bench.tasks import AUTHORIZE, PHASES, keys_of, phase_key, samples_key, send_key
from proving.harness import data
from proving.harness.smtp import SmtpServer
from sequences.models import SendJob

VARIANTS = ("guarded", "unchecked")
RUNS = (*VARIANTS, "mixed")


def pg_counters() -> dict[str, int]:
    """Transactions and rows of this database so far (pg_stat_database), and the server's WAL position in bytes
    (the whole server's: during a run, the bench's database is the only one written)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, "
            "pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint FROM pg_stat_database "
            "WHERE datname = current_database()")
        commits, inserted, updated, deleted, wal = cursor.fetchone()
    return {"commits": commits, "rows_written": inserted + updated + deleted, "wal_bytes": wal}


def send_run(ctx, sink: SmtpServer, *, variant: str, workers: int, sends: int, mailboxes: int,
             worker_class: str) -> dict[str, Any]:
    """One measured run: W workers send N queued follow-ups with one authorize variant (or both, alternating)."""
    ctx.reset()
    boxes = data.mailboxes_create(mailboxes, smtp_port=sink.port)
    warm = workers * WARM_UP_PER_WORKER
    jobs = data.followups_create(warm + sends, sequences=data.sequences_create(boxes), tag=f"g{workers}")
    warm_up, jobs = jobs[:warm], jobs[warm:]
    ctx.analyze()
    sink.reset(data_delay=0)
    queue = get_queue("send")
    redis = get_connection("send")
    timeout = 120 + sends * 0.2
    with WorkerPool(workers, "send", worker_class) as pool:
        # Untimed, a few messages per worker first: a worker's first job imports the pipeline, and the rate
        # measured is the steady state's, as RQ's paired no-op rate below (on these same workers) is.
        _send_all(queue, redis, sink, warm_up, variant, timeout)
        redis.delete(*[key for v in VARIANTS for key in keys_of(v)])
        sink.reset()
        time.sleep(0.5)  # let the workers' startup queries settle out of the counters
        before = pg_counters()
        server_cpu = ServerCpu(postgres=postmaster_pid(connection)).start()
        busy = machine_busy_seconds()
        variant_of, elapsed = _send_all(queue, redis, sink, jobs, variant, timeout)
        busy = _minus(machine_busy_seconds(), busy)
        server_cpu.stop()
        # RQ's own rate with these very workers, seconds after the sends: the baseline the guarded rate is read
        # against, under the same background load (the ceiling suite's no-op runs come minutes later).
        paired_noop, noop_busy = noop_rate(queue, redis, sends) if variant == "guarded" else (None, None)
        maxrss = pool.stop()
    time.sleep(0.2)
    after = pg_counters()
    states = Counter(SendJob.objects.filter(pk__in=[j.pk for j in jobs]).values_list("state", flat=True))
    per_variant = {
        v: {"authorize": redis_summary_ms(redis, samples_key(v)), "send": redis_summary_ms(redis, send_key(v)),
            "phases": {phase: redis_summary_ms(redis, phase_key(v, phase)) for phase in PHASES},
            "phases_cpu": {phase: redis_summary_ms(redis, phase_key(v, phase, cpu=True)) for phase in PHASES}}
        for v in sorted(set(variant_of))
    }
    failed = len(queue.failed_job_registry)
    return {
        "variant": variant,
        "workers": workers,
        "worker_class": worker_class,
        "mailboxes": mailboxes,
        "jobs": sends,
        "smtp_received": sink.count,
        "submitted": states.get(SendJob.State.SUBMITTED, 0),
        "states": dict(states),
        "rq_failed": failed,
        "seconds": round(elapsed, 3),
        "sends_per_s": round(states.get(SendJob.State.SUBMITTED, 0) / elapsed, 1),
        "authorize": per_variant[variant if variant != "mixed" else "guarded"]["authorize"],
        "per_variant": per_variant,
        "db_commits_per_send": round((after["commits"] - before["commits"]) / sends, 2),
        "db_rows_written_per_send": round((after["rows_written"] - before["rows_written"]) / sends, 2),
        "db_wal_bytes_per_send": round((after["wal_bytes"] - before["wal_bytes"]) / sends),
        # PostgreSQL's CPU (every process of the server, /proc) from the enqueue to the last record, per send.
        "db_cpu_ms_per_send": (round(server_cpu.spent["postgres"] / sends * 1000, 2)
                               if server_cpu.spent["postgres"] is not None else None),
        "worker_maxrss_mib": round(max(maxrss) / 1024, 1) if maxrss else None,
        "rq_noop_paired_jobs_per_s": paired_noop,
        # The whole machine's busy CPU (every process: workers, PostgreSQL, Redis, this process and its SMTP
        # sink) per send, and per paired no-op job: what the rate can be at most where every CPU is busy.
        "machine_cpu_ms_per_send": round(busy / sends * 1000, 2) if busy is not None else None,
        "rq_noop_paired_machine_cpu_ms_per_job": round(noop_busy / sends * 1000, 2) if noop_busy else None,
    }


WARM_UP_PER_WORKER = 5


def _send_all(queue, redis, sink: SmtpServer, jobs: list[SendJob], variant: str,
              timeout: float) -> tuple[list[str], float]:
    """Enqueue the jobs (the variant's authorize, or both alternating) and return once every one is recorded
    submitted (or the time is up): the variant of each job, and the seconds from the enqueue until then."""
    variant_of = [VARIANTS[i % 2] if variant == "mixed" else variant for i in range(len(jobs))]
    payload = [Queue.prepare_data("proving.bench.tasks.send_timed", (job.pk, v), result_ttl=60,
                                  failure_ttl=3600) for job, v in zip(jobs, variant_of, strict=True)]
    timed_keys = [send_key(v) for v in set(variant_of)]
    samples_before = sum(redis.llen(key) for key in timed_keys)
    pipe = redis.pipeline()
    queue.enqueue_many(payload, pipeline=pipe)
    pipe.execute()
    started = time.perf_counter()
    sink.wait_for(sink.count + len(jobs), timeout)
    deadline = time.monotonic() + 30
    pending = SendJob.objects.filter(pk__in=[j.pk for j in jobs]).exclude(state=SendJob.State.SUBMITTED)
    while pending.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    # A worker pushes its samples after the send's record committed: wait for the last ones, so that none of
    # these jobs' samples lands after the caller cleared or read them.
    while sum(redis.llen(key) for key in timed_keys) < samples_before + len(jobs) and time.monotonic() < deadline:
        time.sleep(0.01)
    return variant_of, elapsed


def _minus(after: float | None, before: float | None) -> float | None:
    return after - before if after is not None and before is not None else None


def noop_rate(queue, redis, jobs: int) -> tuple[float | None, float | None]:
    """No-op jobs/s on `queue` with the workers already listening to it, and the machine's busy CPU seconds
    while they ran (None unless every job finished).

    Counts these no-op jobs by id in the finished registry (the send jobs' entries there expire meanwhile:
    a difference of counts would undercount, and on a slow run never reach the total). While it waits it
    asks only for the last one (the queue is first in, first out: once the last is done, at most W - 1
    others still run), then for those still running: asking for every id every few milliseconds took
    enough of Redis's and this process's CPU to slow the workers it measures."""
    registry = FinishedJobRegistry(queue=queue)
    pipe = redis.pipeline()
    enqueued = queue.enqueue_many([Queue.prepare_data("proving.bench.tasks.noop", (i,), result_ttl=600)
                                   for i in range(jobs)], pipeline=pipe)
    pipe.execute()
    running = [job.id for job in enqueued]
    busy = machine_busy_seconds()
    started = time.perf_counter()
    deadline = time.monotonic() + 60 + jobs * 0.1
    while running and time.monotonic() < deadline:
        if redis.zscore(registry.key, running[-1]) is not None:
            running = [i for i, score in zip(running, redis.zmscore(registry.key, running), strict=True)
                       if score is None]
            if not running:
                break
        time.sleep(0.005)
    elapsed, busy = time.perf_counter() - started, _minus(machine_busy_seconds(), busy)
    done = jobs - len(running)
    return (round(done / elapsed, 1) if done else None), (busy if done == jobs else None)


def authorize_statements(ctx, sink: SmtpServer) -> dict[str, Any]:
    """Statements one authorize call sends (COMMIT aside), per variant, counted in this process on a claimed job."""
    from sequences.services.sending import send_job_claim

    ctx.reset()
    (box,) = data.mailboxes_create(1, smtp_port=sink.port)
    jobs = data.followups_create(len(AUTHORIZE), sequences=data.sequences_create([box]), tag="count")
    out: dict[str, Any] = {}
    for (variant, authorize), job in zip(AUTHORIZE.items(), jobs, strict=True):
        claimed = send_job_claim(job_id=job.pk, worker_id="bench-count")
        counter = StatementCounter()
        with connection.execute_wrapper(counter):
            decision = authorize(job_id=job.pk, worker_id="bench-count", version=claimed.version)
        out[variant] = {"statements": len(counter.sql), "outcome": decision.outcome,
                        "sql": [q[:160] for q in counter.sql]}
    return out


def send_statements(ctx, sink: SmtpServer) -> dict[str, Any]:
    """Statements one whole guarded send sends (COMMITs aside), per phase of the pipeline, counted in this
    process at its checkpoints (claimed, prepared, authorized, submitted) on a queued follow-up."""
    from sequences import checkpoints
    from sequences.pipeline import send_job_process

    ctx.reset()
    (box,) = data.mailboxes_create(1, smtp_port=sink.port)
    # Two: the first send of a connection also opens the SMTP session; the second is the steady state.
    jobs = data.followups_create(2, sequences=data.sequences_create([box]), tag="phases")
    counter = StatementCounter()
    marks: list[int] = []
    removers = [checkpoints.install(name, lambda _job_id: marks.append(len(counter.sql)))
                for name in checkpoints.NAMES]
    try:
        for job in jobs:
            counter.sql.clear()
            marks.clear()
            with connection.execute_wrapper(counter):
                outcome = send_job_process(job_id=job.pk, worker_id="bench-count")
    finally:
        for remove in removers:
            remove()
    bounds = [0, *marks, len(counter.sql)]
    per_phase = {phase: bounds[i + 1] - bounds[i] for i, phase in enumerate(PHASES)}
    return {"statements": len(counter.sql), "per_phase": per_phase, "outcome": outcome.state,
            "sql": [q[:160] for q in counter.sql]}


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    if len(runs) == 1:
        return runs[0] | {"runs_sends_per_s": [runs[0]["sends_per_s"]]}
    rates = [r["sends_per_s"] for r in runs]
    middle = sorted(runs, key=lambda r: r["sends_per_s"])[len(runs) // 2]
    return middle | {"runs_sends_per_s": rates, "sends_per_s_median": statistics.median(rates)}


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    runs: list[dict[str, Any]] = []
    with SmtpServer(keep_messages=False) as sink:
        statements = authorize_statements(ctx, sink)
        ctx.say("guard: statements per authorize: " + ", ".join(f"{v} {s['statements']}"
                                                                 for v, s in statements.items()))
        whole = send_statements(ctx, sink)
        ctx.say(f"guard: statements per guarded send: {whole['statements']} ({_phases(whole)})")
        for worker_class in o["worker_classes"]:
            for workers in o["workers"]:
                for variant in RUNS:
                    repeats = []
                    for _ in range(o["repeat"]):
                        ctx.say(f"guard: {variant}, {workers} {worker_class} workers, {o['sends']} sends")
                        repeats.append(send_run(ctx, sink, variant=variant, workers=workers, sends=o["sends"],
                                                mailboxes=o["mailboxes"], worker_class=worker_class))
                    result = _median_run(repeats)
                    runs.append(result)
                    ctx.say(f"  -> {result['sends_per_s']} sends/s, authorize p50 "
                            f"{result['authorize']['p50_ms']} ms p99 {result['authorize']['p99_ms']} ms")
    out: dict[str, Any] = {"runs": runs, "tables": [], "authorize_statements": statements,
                           "send_statements": whole}
    if not o.get("no_ceiling"):
        out["ceiling"] = ceiling.run(ctx, include_tables=False)
    out["tables"].append(guard_table(runs, out.get("ceiling"), o, statements, whole))
    out["tables"].append(mixed_table(runs, o))
    out["tables"].append(phases_table(runs))
    if "ceiling" in out:
        out["tables"] += out["ceiling"]["tables"]
    return out


def _phases(whole: dict[str, Any]) -> str:
    return ", ".join(f"{phase} {n}" for phase, n in whole["per_phase"].items())


def guard_table(runs: list[dict[str, Any]], ceil: dict[str, Any] | None, o: dict[str, Any],
                statements: dict[str, Any] | None = None, whole: dict[str, Any] | None = None) -> str:
    by_key = {(r["worker_class"], r["workers"], r["variant"]): r for r in runs}
    rows = []
    for worker_class in o["worker_classes"]:
        for workers in o["workers"]:
            g = by_key.get((worker_class, workers, "guarded"))
            u = by_key.get((worker_class, workers, "unchecked"))
            if not g or not u:
                continue
            noop = pg_sends = None
            if ceil:
                noop = ceil["rq_noop"].get(f"{worker_class}:{workers}", {}).get("jobs_per_s")
                pg_sends = ceil["pgbench"].get(str(workers), {}).get("sends_per_s_bound")
            rows.append((
                f"{workers} {worker_class}",
                f"{g['submitted']}/{g['jobs']}", g["sends_per_s"],
                f"{u['submitted']}/{u['jobs']}", u["sends_per_s"],
                ratio(g["sends_per_s"], u["sends_per_s"]),
                g["authorize"]["p50_ms"], g["authorize"]["p99_ms"],
                u["authorize"]["p50_ms"], u["authorize"]["p99_ms"],
                g["db_commits_per_send"], u["db_commits_per_send"],
                ratio(g["sends_per_s"], noop, 3), ratio(g["sends_per_s"], pg_sends, 3),
                g.get("rq_noop_paired_jobs_per_s"), ratio(g["sends_per_s"], g.get("rq_noop_paired_jobs_per_s"), 3),
                g.get("machine_cpu_ms_per_send"), g.get("rq_noop_paired_machine_cpu_ms_per_job"),
                ratio(g.get("rq_noop_paired_machine_cpu_ms_per_job"), g.get("machine_cpu_ms_per_send"), 3),
            ))
    notes = [
        f"{o['sends']} follow-ups per run over {o['mailboxes']} mailboxes; workers are real `manage.py rqworker` "
        "processes (simple = rq SimpleWorker, jobs in the worker process; fork = the product's worker, as "
        "scripts/run starts it: rq's forking Worker, a work-horse and a new DB connection per job).",
        "rate = jobs / (enqueue -> last job recorded submitted), SMTP to an aiosmtpd sink in the bench process.",
        "authorize = the authorize transaction timed in the worker (guarded: send_job_authorize; unchecked: "
        "send_job_authorize_unchecked, the same transaction shape without the final check).",
        "commits/send from pg_stat_database (every autocommit read counts). 'of RQ no-op' and 'of DB bound' "
        "divide the guarded rate by RQ's no-op job rate and by pgbench -N tps / 3 write transactions per send "
        "(claim, authorize, record), both with the same W, measured in the same run.",
    ]
    notes.append("paired: RQ no-op jobs/s with the same W workers, run right after each guarded run (same "
                 "processes, same moment's load); 'of RQ no-op paired' = guarded/s ÷ that rate.")
    notes.append("machine CPU: every process's busy CPU time (/proc/stat) per guarded send and per paired no-op "
                 "job; 'of RQ no-op by CPU' = no-op CPU ÷ send CPU, the share of RQ's no-op rate a send's CPU "
                 "allows where every CPU is busy (the rates above also depend on how much of the time they are; "
                 "this does much less).")
    if statements:
        notes.append("statements per authorize call, COMMIT aside (counted with execute_wrapper on a claimed job): "
                     + ", ".join(f"{v} {s['statements']}" for v, s in statements.items()))
    if whole:
        notes.append(f"statements per guarded send, COMMITs aside (a follow-up, counted at the pipeline's "
                     f"checkpoints): {whole['statements']} ({_phases(whole)})")
    if o["repeat"] > 1:
        notes.append(f"median of {o['repeat']} runs per cell")
    return table(
        "guard: guarded vs unchecked sends",
        ["workers", "guarded sent", "guarded/s", "unchecked sent", "unchecked/s", "guarded÷unchecked",
         "auth p50 ms", "auth p99 ms", "unchk p50 ms", "unchk p99 ms", "commits/send g", "commits/send u",
         "of RQ no-op", "of DB bound", "RQ no-op/s paired", "of RQ no-op paired", "machine CPU ms/send",
         "machine CPU ms/no-op", "of RQ no-op by CPU"],
        rows, notes)


def mixed_table(runs: list[dict[str, Any]], o: dict[str, Any]) -> str:
    rows = []
    for r in runs:
        if r["variant"] != "mixed":
            continue
        g, u = r["per_variant"]["guarded"], r["per_variant"]["unchecked"]
        rows.append((f"{r['workers']} {r['worker_class']}", f"{r['submitted']}/{r['jobs']}", r["sends_per_s"],
                     g["send"]["p50_ms"], g["send"]["mean_ms"], u["send"]["p50_ms"], u["send"]["mean_ms"],
                     ratio(u["send"]["mean_ms"], g["send"]["mean_ms"]),
                     g["authorize"]["p50_ms"], g["authorize"]["p99_ms"], u["authorize"]["p50_ms"],
                     u["authorize"]["p99_ms"]))
    return table(
        "guard, interleaved: both variants in one queue (load-robust)",
        ["workers", "sent", "sends/s (both)", "guarded send p50 ms", "guarded send mean ms", "unchecked send p50 ms",
         "unchecked send mean ms", "unchecked÷guarded mean", "auth p50 g", "auth p99 g", "auth p50 u", "auth p99 u"],
        rows,
        ["send = one whole send_job_process call in the worker (claim, prepare, authorize, SMTP, record); jobs "
         "alternate guarded/unchecked in one queue, so both see the same background load.",
         "unchecked÷guarded mean = the guarded pipeline's throughput as a fraction of the unchecked one's, "
         "per worker."])


def phases_table(runs: list[dict[str, Any]]) -> str:
    """Where a send's time goes in the worker: each phase of the pipeline, p50 and mean, per run and variant."""
    rows = []
    for r in runs:
        for variant, timings in r["per_variant"].items():
            phases = timings.get("phases", {})
            if not any(p["n"] for p in phases.values()):
                continue
            cpu = timings.get("phases_cpu", {})
            worker_cpu = round(sum(cpu[phase]["mean_ms"] or 0 for phase in PHASES), 2) if cpu else None
            rows.append((f"{r['workers']} {r['worker_class']}", r["variant"], variant, timings["send"]["p50_ms"],
                         *(f"{phases[phase]['p50_ms']} / {phases[phase]['mean_ms']}" for phase in PHASES),
                         worker_cpu, r.get("db_cpu_ms_per_send") if r["variant"] != "mixed" else None,
                         r.get("db_wal_bytes_per_send") if r["variant"] != "mixed" else None))
    return table(
        "guard: where a send's time goes in the worker (p50 / mean ms per phase)",
        ["workers", "run", "variant", "send p50 ms", *PHASES, "worker CPU ms/send", "PostgreSQL CPU ms/send",
         "WAL bytes/send"],
        rows,
        ["phases end at the pipeline's checkpoints (sequences.checkpoints): claim (read and move the job), "
         "prepare (render and build the message), authorize (the final check, or the unchecked variant's "
         "transaction), hand-off (the SMTP conversation), record (the outcome and the next step); timed in "
         "the worker for every send that went the whole way.",
         "worker CPU = the worker process's CPU time in those phases (mean per send); PostgreSQL CPU = every "
         "process of the server (/proc), from the enqueue to the last record, per send; WAL bytes the same way "
         "(pg_current_wal_insert_lsn; both not shown for a mixed run, whose variants share them)."])
