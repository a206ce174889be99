"""`manage.py bench watcher-shards` end to end on toy sizes: the sharding invariants and the JSON, never timings.

The command runs in a subprocess, as an operator runs it, with its own database, Redis and Dovecot: real
`watch_mailboxes` processes share 20 folders, one of them is killed and the other takes its folders over.
"""

from __future__ import annotations

import pytest

from tests.bench.helpers import run_bench

FOLDERS = 20
REPLIES = 3
LEASE = 10.0  # rounds every 3.3 s: a pause of a few seconds on a loaded machine (the whole suite on two cores)
# does not expire a lease, which another process would then take and watch too


@pytest.mark.slow
@pytest.mark.own_postgresql
def test_bench_watcher_shards_watch_each_folder_once_and_take_a_killed_ones_over(tmp_path):
    stdout, report = run_bench(
        "watcher-shards", "--quick", "--folders", str(FOLDERS), "--processes", "1,2", "--replies", str(REPLIES),
        "--watch-reply-rate", "20", "--watch-lease-seconds", str(LEASE), tmp_path=tmp_path,
    )
    assert f"watcher shards: {FOLDERS} folders over several watch_mailboxes processes" in stdout
    assert report["errors"] == {}
    runs = {r["processes"]: r for r in report["results"]["watcher-shards"]["runs"]}
    assert set(runs) == {1, 2}
    for processes, run in runs.items():
        assert (run["folders"], run["mailboxes"], run["folders_per_mailbox"]) == (FOLDERS, FOLDERS // 2, 2)
        # One connection per folder in total, however many processes: no folder watched twice.
        assert run["connections_held"] == FOLDERS
        assert run["folders_per_process"] == [FOLDERS // processes] * processes
        assert run["max_connections_while_replies"] == FOLDERS and run["watched_twice"] == 0, run
        assert run["all_watched_s"] > 0 and run["catch_up_drained"] is True
        # Every folder's lease was taken at least once; leases seen expired under a live process are reported.
        assert run["lease_takes_to_shard"] >= FOLDERS and set(run["late_leases"]) == {"start", "sharded",
                                                                                      "take-over"}
        assert run["stopped"] == REPLIES and run["latency"]["n"] == REPLIES
        # Where a stop's time went: the poll each push enqueued, its wait in the queue and its run.
        pushes = run["push_to_enqueue"]["n"]
        assert pushes + run["pushes_merged"] == REPLIES, run
        assert 0 < run["poll_run"]["n"] <= run["poll_queue_wait"]["n"] <= pushes, run
        assert len(run["loadavg_1m"]) == 2
    assert runs[1]["takeover"] is None  # nobody to take over from one process

    takeover = runs[2]["takeover"]
    assert takeover["killed_folders"] == FOLDERS // 2 and takeover["lease_takes"] >= FOLDERS // 2
    # The survivor holds every folder again, one connection each, never more than one per folder meanwhile.
    assert 0 < takeover["leases_taken_s"] <= takeover["watched_again_s"] < 4 * LEASE + 30
    assert takeover["connections_after"] == FOLDERS and takeover["folders_per_survivor"] == [FOLDERS]
    assert takeover["max_connections"] <= FOLDERS
    # A reply into each of (up to ten of) the killed process's mailboxes stopped its person.
    assert takeover["replies_after_kill"] >= 1
    assert takeover["stopped"] == takeover["replies_after_kill"] == takeover["reply_to_stop"]["n"]
