"""`manage.py bench pages` on tiny sizes: every page answers 200 on both databases and the JSON has the table; the
rows dealt among three workspaces, the pages those of the first (a page of another's object would answer 404).

Functional only, never timings (BENCHMARKS.md holds those).
"""

from __future__ import annotations

import pytest

from tests.bench.helpers import run_bench


@pytest.mark.slow
@pytest.mark.own_postgresql
def test_bench_pages_measures_every_page_on_both_sizes(tmp_path):
    stdout, report = run_bench(
        "pages", "--quick", "--page-jobs", "3000", "--page-enrollments", "600", "--page-small-jobs", "500",
        "--page-requests", "2", "--page-workspaces", "3", tmp_path=tmp_path,
    )
    assert "pages: server time per page, 3,000 jobs / 600 enrollments next to 500 jobs / 100 enrollments" in (
        stdout
    )
    result = report["results"]["pages"]
    assert (result["big"]["data"]["jobs"], result["big"]["data"]["enrollments"]) == (3000, 600)
    assert result["small"]["data"]["jobs"] == 500
    assert result["big"]["data"]["workspaces"] == 3 and "600 contacts in 3 workspaces" in stdout
    names = {
        "dashboard",
        "sequences list",
        "sequence detail",
        "contacts search: name",
        "contacts search: address",
        "contacts search: @domain",
        "enrollment detail",
        "replies: unhandled",
        "replies: by category",
        "replies: older page",
        "replies: search",
        "conversation",
        "reports: by step",
        "reports: by week",
        "reports: by domain, 30 days",
    }
    for size in ("small", "big"):
        assert set(result[size]["pages"]) == names
        assert all(page["n"] == 2 and page["p95_ms"] > 0 for page in result[size]["pages"].values())
        assert result[size]["dashboard_count_ms"] > 0
        assert result[size]["rollup"]["first_run_ms"] > 0
    assert "dashboard: its numbers over all time are counted once a minute in the background" in stdout
