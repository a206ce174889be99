"""`manage.py bench ingest` end to end on a tiny backlog: the fields it reports, never its timings.

The command runs in a subprocess, as an operator runs it: it creates and drops its own database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = 100


@pytest.mark.slow
def test_bench_ingest_reports_the_product_next_to_the_bare_fetch_and_the_unrelated_only_path(tmp_path):
    out = tmp_path / "ingest.json"
    proc = subprocess.run(
        [sys.executable, "manage.py", "bench", "ingest", "--quick", "--messages", str(MESSAGES), "--json", str(out)],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "unrelated only: mailbox_poll" in proc.stdout

    ingest = json.loads(out.read_text())["results"]["ingest"]
    assert {
        "messages",
        "mix",
        "bytes",
        "bare_fetch",
        "fetch_parse",
        "ingest",
        "recorded_by_kind",
        "enrollments_stopped",
        "suppressions",
    } <= ingest.keys()  # the fields it always had
    assert ingest["ingest"]["messages"] == ingest["bare_fetch"]["messages"] == MESSAGES
    assert ingest["ingest"]["bodies_fetched"] == MESSAGES - ingest["mix"]["unrelated"]
    assert ingest["stored_metadata_only"] == ingest["mix"]["unrelated"]
    assert ingest["stored_full"] == MESSAGES - ingest["mix"]["unrelated"]
    assert (
        ingest["enrollments_stopped"]
        == ingest["mix"]["reply"] + ingest["mix"]["unsubscribe"] + ingest["mix"]["hard_bounce"]
    )
    assert 0 < ingest["product_fraction_of_bare"]
    quiet = ingest["unrelated_only"]
    assert quiet["ingest"]["messages"] == quiet["bare_fetch"]["messages"] == quiet["messages"] > 0
