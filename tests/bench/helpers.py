"""Running `manage.py bench` from a test, as an operator runs it: a subprocess with its own database and Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(suite: str, *args: str, tmp_path: Path, env: dict[str, str] | None = None) -> tuple[str, dict]:
    """`manage.py bench SUITE ARGS --json OUT`, with `env` added to this process' environment: (what it printed,
    the JSON it wrote). Fails on a non-zero exit, showing the end of its output."""
    out = tmp_path / f"{suite}.json"
    proc = subprocess.run(
        [sys.executable, "manage.py", "bench", suite, *args, "--json", str(out)],
        cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout, json.loads(out.read_text())
