"""The limits the guarded rate is read against, measured in the same run with the same W.

- pgbench -N (TPC-B-like without the contended branch/teller updates: one
  UPDATE, one SELECT, one INSERT per transaction) on the bench database;
  divided by the 3 write transactions a send commits (claim, authorize,
  record submitted) it is the database-bound send rate.
- the same shape from Python: W processes of psycopg doing 3 short write
  transactions (UPDATE + INSERT) per pseudo-send -- what pgbench cannot show,
  the client's own cost.
- RQ's own rate: W `manage.py rqworker` processes running a no-op job.
- SMTP: W processes submitting with smtplib, one connection per message as
  SmtpTransport does, to the same sink.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from typing import Any

from django.conf import settings
from django.db import connection
from django_rq import get_connection, get_queue
from rq import Queue
from rq.registry import FinishedJobRegistry

from proving.bench.procs import WorkerPool, reap, spawn
from proving.bench.stats import summary_ms, table
from proving.harness.smtp import SmtpServer

WRITE_TXNS_PER_SEND = 3  # send_job_claim, send_job_authorize, send_job_record_submitted


def _pgbench() -> str | None:
    return shutil.which("pgbench") or next(
        (p for p in ("/usr/lib/postgresql/15/bin/pgbench",) if os.path.exists(p)), None)


def _pg_args() -> tuple[list[str], dict[str, str]]:
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = db["PASSWORD"]
    return ["-h", db["HOST"] or "127.0.0.1", "-p", str(db["PORT"] or 5432), "-U", db["USER"]], env


def pgbench_runs(workers: list[int], seconds: float, scale: int) -> dict[str, Any]:
    binary = _pgbench()
    if binary is None:
        return {"error": "pgbench not found"}
    args, env = _pg_args()
    name = settings.DATABASES["default"]["NAME"]
    subprocess.run([binary, "-i", "-q", "-s", str(scale), *args, name], env=env, check=True, capture_output=True,
                   timeout=600)
    out: dict[str, Any] = {"scale": scale, "seconds": seconds}
    try:
        for w in workers:
            proc = subprocess.run(
                [binary, "-N", "-n", "-c", str(w), "-j", str(min(w, os.cpu_count() or 1)), "-T", str(int(seconds)),
                 *args, name], env=env, capture_output=True, text=True, timeout=seconds + 120)
            tps = re.search(r"tps = ([\d.]+) \(without initial connection time\)", proc.stdout)
            lat = re.search(r"latency average = ([\d.]+) ms", proc.stdout)
            if not tps:
                out[str(w)] = {"error": (proc.stdout + proc.stderr)[-500:]}
                continue
            out[str(w)] = {"tps": round(float(tps.group(1)), 1), "latency_ms": float(lat.group(1)) if lat else None,
                           "sends_per_s_bound": round(float(tps.group(1)) / WRITE_TXNS_PER_SEND, 1)}
    finally:
        subprocess.run([binary, "-i", "-I", "d", *args, name], env=env, capture_output=True, timeout=120)
    return out


def parallel_children(kind: str, workers: int, seconds: float, extra: list[str]) -> dict[str, Any]:
    """W `proving.bench.child KIND` processes running for the same wall-clock window; summed rate."""
    start_at = time.time() + 1.5  # every child is imported and connected before the window opens
    children = [spawn(f"{kind}-{workers}-{i}", ["-m", "proving.bench.child", kind, "--start-at", str(start_at),
                                                "--seconds", str(seconds), "--index", str(i), *extra])
                for i in range(workers)]
    import json

    done = 0
    durations: list[float] = []
    for child in children:
        reap(child.proc, seconds + 60)
        lines = [ln for ln in child.log_path.read_text().splitlines() if ln.startswith("{")]
        if child.proc.returncode != 0 or not lines:
            raise RuntimeError(f"{kind} child failed: {child.log_tail()}")
        answer = json.loads(lines[-1])
        done += answer["done"]
        durations += answer.get("transaction_s", [])
    return {"done": done, "per_s": round(done / seconds, 1), "transaction": summary_ms(durations)}


def writeloop_runs(workers: list[int], seconds: float) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_counter, bench_log")
        cursor.execute("CREATE TABLE bench_counter (id int PRIMARY KEY, n bigint NOT NULL)")
        cursor.execute("INSERT INTO bench_counter SELECT g, 0 FROM generate_series(0, 63) g")
        cursor.execute("CREATE TABLE bench_log (id bigserial PRIMARY KEY, at timestamptz NOT NULL, w int NOT NULL)")
    out: dict[str, Any] = {}
    try:
        for w in workers:
            result = parallel_children("writeloop", w, seconds, [])
            out[str(w)] = {"sends_per_s_bound": result["per_s"],
                           "transactions_per_s": round(result["per_s"] * WRITE_TXNS_PER_SEND, 1),
                           "transaction": result["transaction"]}
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS bench_counter, bench_log")
    return out


def rq_noop_runs(workers: list[int], worker_classes: list[str], jobs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    redis = get_connection("default")
    for worker_class in worker_classes:
        n = jobs if worker_class == "simple" else max(50, jobs // 10)
        for w in workers:
            redis.flushdb()
            queue = get_queue("default")
            with WorkerPool(w, "default", worker_class) as pool:
                pipe = redis.pipeline()
                queue.enqueue_many([Queue.prepare_data("proving.bench.tasks.noop", (i,), result_ttl=600)
                                    for i in range(n)], pipeline=pipe)
                pipe.execute()
                started = time.perf_counter()
                registry = FinishedJobRegistry(queue=queue)
                deadline = time.monotonic() + 60 + n * 0.1
                while registry.count < n and time.monotonic() < deadline:
                    time.sleep(0.005)
                elapsed = time.perf_counter() - started
                finished = registry.count
                pool.stop()
            out[f"{worker_class}:{w}"] = {"jobs": n, "finished": finished,
                                          "jobs_per_s": round(finished / elapsed, 1)}
    return out


def smtp_runs(workers: list[int], seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with SmtpServer(keep_messages=False) as sink:
        for w in workers:
            result = parallel_children("smtploop", w, seconds, ["--port", str(sink.port)])
            out[str(w)] = {"messages_per_s": result["per_s"]}
    return out


def run(ctx, include_tables: bool = True) -> dict[str, Any]:
    o = ctx.options
    ctx.reset()
    workers = o["workers"]
    seconds = o["seconds"]
    ctx.say(f"ceiling: pgbench -N, {seconds:.0f}s per W")
    pgbench = pgbench_runs(workers, seconds, scale=1 if ctx.quick else 10)
    ctx.say("ceiling: psycopg write loop")
    loop = writeloop_runs(workers, seconds)
    ctx.say("ceiling: RQ no-op jobs")
    noop = rq_noop_runs(workers, o["worker_classes"], o["noop_jobs"])
    ctx.say("ceiling: bare smtplib")
    smtp = smtp_runs(workers, seconds)
    rows = []
    for w in workers:
        p = pgbench.get(str(w), {})
        txn = loop.get(str(w), {}).get("transaction", {})
        rows.append((w, p.get("tps"), p.get("latency_ms"), p.get("sends_per_s_bound"),
                     loop.get(str(w), {}).get("sends_per_s_bound"), txn.get("p50_ms"), txn.get("p99_ms"),
                     *[noop.get(f"{c}:{w}", {}).get("jobs_per_s") for c in o["worker_classes"]],
                     smtp.get(str(w), {}).get("messages_per_s")))
    text = table(
        "ceiling: the limits, same W, same run",
        ["W", "pgbench -N tps", "pgbench lat ms", "DB-bound sends/s (tps/3)", "psycopg loop sends/s",
         "loop txn p50 ms", "loop txn p99 ms",
         *[f"RQ no-op jobs/s ({c})" for c in o["worker_classes"]], "smtplib msgs/s"],
        rows,
        [f"pgbench scale {pgbench.get('scale')}, {seconds:.0f}s per W, -j min(W, nproc); "
         f"a guarded send commits {WRITE_TXNS_PER_SEND} write transactions (claim, authorize, record).",
         "psycopg loop: W processes, each pseudo-send = 3 transactions of UPDATE one row + INSERT one row; "
         "loop txn = one such transaction, BEGIN to durable COMMIT: 4 round trips, where the final check's "
         "transaction takes 5 (BEGIN, 3 statements, COMMIT); the floor under the authorize p99.",
         "smtplib: W processes, one SMTP connection per message (as SmtpTransport), to the aiosmtpd sink."])
    result = {"pgbench": pgbench, "psycopg_loop": loop, "rq_noop": noop, "smtplib": smtp, "tables": [text]}
    return result
