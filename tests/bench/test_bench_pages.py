"""`manage.py bench pages` on tiny sizes: every page answers 200 on both databases and the JSON has the table.

Functional only, never timings (BENCHMARKS.md holds those).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_pages_measures_every_page_on_both_sizes(tmp_path):
    out = tmp_path / "pages.json"
    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "bench",
            "pages",
            "--quick",
            "--page-jobs",
            "3000",
            "--page-enrollments",
            "600",
            "--page-small-jobs",
            "500",
            "--page-requests",
            "2",
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
    assert "pages: server time per page, 3,000 jobs / 600 enrollments next to 500 jobs / 100 enrollments" in (
        proc.stdout
    )
    result = json.loads(out.read_text())["results"]["pages"]
    assert (result["big"]["data"]["jobs"], result["big"]["data"]["enrollments"]) == (3000, 600)
    assert result["small"]["data"]["jobs"] == 500
    names = {
        "dashboard",
        "sequences list",
        "sequence detail",
        "contacts search: name",
        "contacts search: address",
        "contacts search: @domain",
        "enrollment detail",
    }
    for size in ("small", "big"):
        assert set(result[size]["pages"]) == names
        assert all(page["n"] == 2 and page["p95_ms"] > 0 for page in result[size]["pages"].values())
