"""`manage.py bench watcher --quick` end to end on tiny sizes: functional checks only, never timings.

The command runs in a subprocess, as an operator runs it, with its own database, Redis and Dovecot.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPLIES = 3


@pytest.mark.slow
def test_bench_watcher_quick_stops_every_reply_in_both_designs_and_writes_json(tmp_path):
    out = tmp_path / "watcher.json"
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "bench",
            "watcher",
            "--quick",
            "--folders",
            "6",
            "--folders-per-mailbox",
            "3",
            "--replies",
            str(REPLIES),
            "--json",
            str(out),
        ],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "watcher: 6 watched folders in one process, reply -> stop" in proc.stdout

    report = json.loads(out.read_text())
    assert report["errors"] == {}
    runs = report["results"]["watcher"]["runs"]
    assert set(runs) == {"multiplexed", "thread per folder"}
    for run in runs.values():
        assert (run["folders"], run["mailboxes"], run["folders_per_mailbox"]) == (6, 2, 3)
        assert run["stopped"] == REPLIES and run["latency"]["n"] == REPLIES
        assert run["catch_up_drained"] is True
        assert run["watcher_peak_rss_mib"] > 0 and run["connect_all_s"] > 0
    # One thread per folder in the baseline, a few in all for the product's watcher.
    assert runs["thread per folder"]["watcher_threads"] >= 6
    assert runs["multiplexed"]["watcher_threads"] < runs["thread per folder"]["watcher_threads"]
