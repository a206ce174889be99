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
mailbox    a wrong password and an untrusted certificate: the mailbox is
           blocked, nothing fails, a probe after the fix unblocks it and every
           message goes out once.
redis      a run of N sends: the private Redis is flushed at 1/3, killed and
           restarted empty at 2/3; the dispatcher's stale re-enqueue recovers.
postgres   a run of N/2 sends against a private cluster, restarted
           (immediate shutdown) halfway; never the machine's cluster.
imap       Dovecot killed mid-fetch, UIDVALIDITY changed, the same reply
           delivered twice and copied to another folder.
fuzz       N mutated inbound messages through inbound.ingest.inbound_record:
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
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.db import connection, connections
from django.test.utils import override_settings

from proving.drills.audit import Audit
from proving.drills.faults.base import DRILLS, Ctx, Row
from proving.drills.faults.inbound import drill_big_headers, drill_fuzz, drill_imap
from proving.drills.faults.mailbox import drill_mailbox
from proving.drills.faults.workers import drill_kill, drill_postgres, drill_redis, drill_smtp
from proving.harness.stack import DrillError, PrivatePostgres, PrivateRedis, dedicated_database, make_tempdir

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
                    ("mailbox", lambda: drill_mailbox(ctx, n=10 if quick else 50)),
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
