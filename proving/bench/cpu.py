"""CPU seconds of the servers a measured run talks to (PostgreSQL, Dovecot), read from /proc (Linux).

A server is a tree of processes under one master (the postmaster, Dovecot's
master). Its CPU so far is, over every live process of the tree, its own user
and system time plus that of the children it has reaped (`cutime`, `cstime`
in /proc/PID/stat): a backend or an IMAP session that exited was reaped by
its parent, so its time is still counted, once. The difference of two
readings is what the tree spent between them, whoever in it spent it.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children), or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": state is field 3 of stat(5)
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return ppid, (utime + stime + cutime + cstime) / TICKS


def tree_cpu_seconds(root: int | None) -> float | None:
    """CPU seconds spent so far by the process `root`, its live descendants and every child they reaped."""
    if root is None:
        return None
    children: dict[int, list[int]] = defaultdict(list)
    seconds: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        found = _stat(int(entry.name))
        if found is not None:
            children[found[0]].append(int(entry.name))
            seconds[int(entry.name)] = found[1]
    if root not in seconds:  # gone
        return None
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += seconds.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total


def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy so far, over all its CPUs (/proc/stat: user, nice, system,
    irq and softirq time; idle, I/O wait and time stolen by the hypervisor are not busy). The difference of
    two readings is what every process together spent between them, whoever spent it."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in first[1:8])
    return (user + nice + system + irq + softirq) / TICKS


def postmaster_pid(connection) -> int | None:
    """The pid of the PostgreSQL server behind `connection` (a Django connection on this machine), from its
    postmaster.pid; None when that file cannot be read (another machine, no permission)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('data_directory')")
        (data_directory,) = cursor.fetchone()
    try:
        return int((Path(data_directory) / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class ServerCpu:
    """Readings of several servers' CPU around a measured run: `with ServerCpu(postgres=pid, ...) as cpu:` (or
    `start()` and `stop()`), then `cpu.spent` maps each name to its seconds in the run (None where it could not
    be read)."""

    def __init__(self, **roots: int | None):
        self.roots = roots
        self.spent: dict[str, float | None] = {}
        self._before: dict[str, float | None] = {}

    def start(self) -> ServerCpu:
        self._before = {name: tree_cpu_seconds(pid) for name, pid in self.roots.items()}
        return self

    def stop(self) -> dict[str, float | None]:
        for name, pid in self.roots.items():
            after, before = tree_cpu_seconds(pid), self._before.get(name)
            self.spent[name] = round(after - before, 2) if after is not None and before is not None else None
        return self.spent

    def __enter__(self) -> ServerCpu:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
