"""The drills' and benches' subprocesses (proving.harness.stack.Process): what a failure report shows of one,
and stopping several side by side."""

from __future__ import annotations

import os

from proving.harness.stack import Process, stop_all, wait_for


def test_a_process_that_exits_shows_its_last_log_lines(tmp_path):
    env = dict(os.environ, DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "processes-test-key"))
    process = Process("gone", ["no_such_command"], env=env, log_dir=tmp_path)
    wait_for(lambda: not process.alive(), timeout=60, what="the command to exit")
    assert "Unknown command: 'no_such_command'" in process.log_tail()
    assert process.log_tail(1) == process.log_tail().splitlines()[-1]


def test_stop_all_stops_every_process(tmp_path):
    env = dict(os.environ, DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "processes-test-key"))
    sleepers = [Process(f"sleeper{i}", ["shell", "-c", "import time; time.sleep(120)"], env=env, log_dir=tmp_path)
                for i in range(2)]
    stop_all(sleepers, grace=5)
    assert not any(process.alive() for process in sleepers)
