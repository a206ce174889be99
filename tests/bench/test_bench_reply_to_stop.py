"""`manage.py bench reply-to-stop` end to end on tiny sizes: functional checks only, never timings.

The idle runs (polling, IDLE) and the runs under a send backlog on the processes `scripts/run` starts, on
the earlier layouts too: every reply stops its person, and what the backlog runs count is what happened.
"""

from __future__ import annotations

import pytest

from tests.bench.helpers import run_bench


@pytest.mark.slow
@pytest.mark.own_postgresql
def test_bench_reply_to_stop_idle_and_under_a_send_backlog(tmp_path):
    stdout, report = run_bench(
        "reply-to-stop", "--replies", "3", "--backlog-followups", "5", "--backlog-replies", "2",
        "--backlog-delay", "1", tmp_path=tmp_path,
        # A held follow-up's next final check after 2 s, not the product's 10 s: the held follow-ups of the
        # one-worker layout are rechecked (and the backlog drained) sooner; what is counted stays the same.
        env={"OUTREACH_REPLY_VIEW_RECHECK_SECONDS": "2"},
    )
    assert "reply-to-stop: IMAP APPEND -> enrollment stop committed" in stdout
    for row in ("| polling every 1s", "| idle", "| backlog, scripts/run", "| backlog, one worker", "| backlog, before"):
        assert row in stdout
    assert report["errors"] == {}
    runs = report["results"]["reply-to-stop"]["runs"]
    assert set(runs) == {"polling", "idle", "backlog", "backlog_one_worker", "backlog_before"}
    for key in ("polling", "idle"):  # the idle runs keep their keys, and gain one
        assert {"mode", "stopped", "followups_canceled", "latency", "poller_maxrss_mib"} <= runs[key].keys()
        assert runs[key]["stopped"] == 3 and runs[key]["followups_after_reply"] == 0
    for key in ("backlog", "backlog_one_worker", "backlog_before"):
        run = runs[key]
        assert run["replies"] == 2 and run["stopped"] == 2, run
        assert run["followups_sent"] + run["followups_canceled"] == 5, run
    # Counted, not judged here (tests/races/test_backlog_processes.py judges): before the reply view the poll
    # waits behind every send, so both repliers' follow-ups were handed off after their replies.
    assert runs["backlog_before"]["followups_after_reply"] == 2
