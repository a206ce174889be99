"""`manage.py bench api` on tiny sizes: functional checks only, never timings (run as an operator runs it)."""

from __future__ import annotations

import pytest

from tests.bench.helpers import run_bench


@pytest.mark.slow
@pytest.mark.own_postgresql
def test_bench_api_enrolls_through_both_paths_and_writes_the_outbox(tmp_path):
    stdout, report = run_bench("api", "--api-calls", "5", tmp_path=tmp_path)
    result = report["results"]["api"]
    assert result["enroll_api"]["statuses"] == {"201": 5} and result["enroll_api"]["enrolled"] == 5
    assert result["stops_three_endpoints"]["outbox_rows"] == 15
    assert "API ÷ service time per enrollment" in stdout
