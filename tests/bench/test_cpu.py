"""CPU seconds of a process tree from /proc (proving.bench.cpu): live descendants and reaped children count."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from proving.bench.cpu import ServerCpu, _stat, machine_busy_seconds, tree_cpu_seconds

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {seconds}: pass\n"


def test_a_child_that_ran_and_was_reaped_still_counts():
    with ServerCpu(me=os.getpid()) as cpu:
        subprocess.run([sys.executable, "-c", BURN.format(seconds=0.3)], check=True)
    assert cpu.spent["me"] >= 0.25


def test_a_live_descendant_counts_and_an_idle_tree_spends_nothing():
    child = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=0.3) + "print('burnt', flush=True)\n"
                              "time.sleep(30)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "burnt"  # it sleeps from now on
        assert tree_cpu_seconds(child.pid) >= 0.25
        # Our tree holds the live child: beyond this process's own time (and its reaped children's).
        assert tree_cpu_seconds(os.getpid()) - _stat(os.getpid())[1] >= 0.25
        with ServerCpu(child=child.pid) as cpu:
            time.sleep(0.3)
        assert cpu.spent["child"] < 0.05
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_gone_reads_as_unknown():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert tree_cpu_seconds(child.pid) is None
    with ServerCpu(gone=child.pid) as cpu:
        pass
    assert cpu.spent["gone"] is None


def test_the_machine_reading_counts_what_any_process_burnt():
    before = machine_busy_seconds()
    subprocess.run([sys.executable, "-c", BURN.format(seconds=0.3)], check=True)
    assert machine_busy_seconds() - before >= 0.25
