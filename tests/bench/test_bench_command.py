"""`manage.py bench guard --quick` end to end on tiny sizes: functional checks only, never timings.

The command runs in a subprocess, as an operator runs it: it creates and drops
its own database and Redis, so this test needs no test database of its own.
"""

from __future__ import annotations

import pytest

from tests.bench.helpers import run_bench

SENDS = 12
# One worker count (each costs a run per variant, with a worker pool of its own): two, so that workers share
# the queue, the mailboxes and the ceiling's loops.
WORKERS = 2


@pytest.mark.slow
@pytest.mark.own_postgresql
def test_bench_guard_quick_sends_everything_in_both_variants_and_writes_json(tmp_path):
    stdout, report = run_bench(
        "guard", "--quick", "--workers", str(WORKERS), "--sends", str(SENDS), "--mailboxes", "2", "--seconds", "1",
        "--noop-jobs", "20", tmp_path=tmp_path,
    )
    assert "guard: guarded vs unchecked sends" in stdout
    assert "guard, interleaved" in stdout
    assert "ceiling: the limits" in stdout

    assert {"suite", "quick", "machine", "options", "results", "errors", "setup_notes"} <= report.keys()
    assert report["errors"] == {}
    assert {"nproc", "cpu_model", "memory_gib", "postgresql", "loadavg_at_start", "loadavg_at_end"} <= (
        report["machine"].keys())

    guard = report["results"]["guard"]
    runs = {(r["variant"], r["workers"]): r for r in guard["runs"]}
    assert set(runs) == {(v, w) for v in ("guarded", "unchecked", "mixed") for w in (WORKERS,)}
    for run in runs.values():
        assert run["jobs"] == SENDS
        assert run["submitted"] == SENDS, run["states"]
        assert run["smtp_received"] == SENDS
        assert run["rq_failed"] == 0
        assert {"sends_per_s", "seconds", "db_commits_per_send", "worker_maxrss_mib",
                "db_cpu_ms_per_send"} <= run.keys()
        assert run["db_wal_bytes_per_send"] > 0  # every send writes its moves and events
        assert {"p50_ms", "p99_ms", "max_ms"} <= run["authorize"].keys()
        # Every send was timed, under the variant that sent it.
        timed = {v: s["send"]["n"] for v, s in run["per_variant"].items()}
        if run["variant"] == "mixed":
            assert timed == {"guarded": SENDS // 2, "unchecked": SENDS // 2}
        else:
            assert timed == {run["variant"]: SENDS}
            assert run["per_variant"][run["variant"]]["authorize"]["n"] == SENDS
        # Each phase of each send, timed in the worker between the pipeline's checkpoints.
        for variant, timings in run["per_variant"].items():
            assert {phase: p["n"] for phase, p in timings["phases"].items()} == {
                phase: timed[variant] for phase in ("claim", "prepare", "authorize", "hand-off", "record")}
    assert "where a send's time goes in the worker" in stdout

    ceiling = guard["ceiling"]
    assert {"pgbench", "psycopg_loop", "rq_noop", "smtplib"} <= ceiling.keys()
    for workers in (str(WORKERS),):
        assert ceiling["pgbench"][workers]["tps"] > 0
        assert ceiling["psycopg_loop"][workers]["sends_per_s_bound"] > 0
        loop_txn = ceiling["psycopg_loop"][workers]["transaction"]
        assert loop_txn["n"] > 0 and 0 < loop_txn["p50_ms"] <= loop_txn["p99_ms"]
        assert ceiling["smtplib"][workers]["messages_per_s"] > 0
        assert ceiling["rq_noop"][f"simple:{workers}"]["finished"] == 20
