"""`manage.py bench watcher --quick` end to end on tiny sizes: functional checks only, never timings.

The command runs in a subprocess, as an operator runs it, with its own database, Redis and Dovecot.
"""

from __future__ import annotations

import pytest

from tests.bench.helpers import run_bench

REPLIES = 3


@pytest.mark.slow
@pytest.mark.own_postgresql
def test_bench_watcher_quick_stops_every_reply_in_both_designs_and_writes_json(tmp_path):
    stdout, report = run_bench(
        "watcher", "--quick", "--folders", "6", "--folders-per-mailbox", "3", "--replies", str(REPLIES),
        # Fewer openers than folders, as with a thousand folders: the product's threads do not grow with them.
        tmp_path=tmp_path, env={"OUTREACH_WATCHER_OPENERS": "2"},
    )
    assert "watcher: 6 watched folders in one process, reply -> stop" in stdout
    assert "watcher: 6 watched folders, the reply view the final check reads" in stdout

    assert report["errors"] == {}
    runs = report["results"]["watcher"]["runs"]
    assert set(runs) == {"multiplexed", "thread per folder"}
    for run in runs.values():
        assert (run["folders"], run["mailboxes"], run["folders_per_mailbox"]) == (6, 2, 3)
        assert run["stopped"] == REPLIES and run["latency"]["n"] == REPLIES
        # Where a stop's time went: the poll each push enqueued, its wait in the queue and its run.
        pushes = run["push_to_enqueue"]["n"]
        assert pushes + run["pushes_merged"] == REPLIES, run
        assert 0 < run["poll_run"]["n"] <= run["poll_queue_wait"]["n"] <= pushes, run
        assert run["catch_up_drained"] is True
        assert run["watcher_peak_rss_mib"] > 0 and run["connect_all_s"] > 0
        # The reply view: sampled while idle and while replies arrived; one follow-up per mailbox went through
        # the final check on these healthy mailboxes and none was held.
        assert run["read_through_lag_idle"]["n"] > 0 and run["read_through_lag_replies"]["n"] > 0
        assert run["final_check_healthy"]["checked"] == 2
        assert run["follow_ups_held_healthy"] == 0 and run["final_check_healthy"]["outcomes"] == {"authorized": 2}
        assert run["final_check_healthy"]["view_age_at_check"]["n"] == 2
        # Every sample says what the final check would read of each mailbox: a view per mailbox, and a lag for
        # each mailbox with a read-through time.
        views = run["reply_views_idle"]
        assert sum(views.values()) % 2 == 0 and sum(views.values()) - views.get("never_read", 0) <= run[
            "read_through_lag_idle"]["n"] <= sum(views.values())
    # One thread per folder in the baseline, a few in all for the product's watcher.
    assert runs["thread per folder"]["watcher_threads"] >= 6
    assert runs["multiplexed"]["watcher_threads"] < runs["thread per folder"]["watcher_threads"]
