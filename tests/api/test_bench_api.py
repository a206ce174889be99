"""`manage.py bench api` on tiny sizes: functional checks only, never timings (run as an operator runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_api_enrolls_through_both_paths_and_writes_the_outbox(tmp_path):
    out = tmp_path / "api.json"
    proc = subprocess.run([sys.executable, "manage.py", "bench", "api", "--api-calls", "5", "--json", str(out)],
                          cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    result = json.loads(out.read_text())["results"]["api"]
    assert result["enroll_api"]["statuses"] == {"201": 5} and result["enroll_api"]["enrolled"] == 5
    assert result["stops_three_endpoints"]["outbox_rows"] == 15
    assert "API ÷ service time per enrollment" in proc.stdout
