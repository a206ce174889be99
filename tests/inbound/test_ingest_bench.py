"""`manage.py bench ingest` end to end on a tiny backlog: the fields it reports, never its timings.

The command runs in a subprocess, as an operator runs it: it creates and drops its own database.
"""

from __future__ import annotations

import pytest

from tests.bench.helpers import run_bench

MESSAGES = 100


@pytest.mark.slow
@pytest.mark.own_postgresql
def test_bench_ingest_reports_the_product_next_to_the_bare_fetch_and_the_unrelated_only_path(tmp_path):
    stdout, report = run_bench("ingest", "--quick", "--messages", str(MESSAGES), tmp_path=tmp_path)
    assert "unrelated only: mailbox_poll" in stdout

    ingest = report["results"]["ingest"]
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
