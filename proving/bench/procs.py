"""Processes the bench starts: RQ workers, product commands, one-shot children.

Every process is a child of the inner bench process (same process group, so
the outer process can stop them all).

Peak memory is VmHWM from /proc/PID/status (the high-water mark of the
process' own address space since its exec), read just before the process is
stopped, or reported by a one-shot child itself. Not wait4's ru_maxrss: on
Linux a child's ru_maxrss starts at its parent's RSS at fork time (exec keeps
the old address space's high-water mark), so every child of this ~90 MB
process would report at least 90 MB. For a forking RQ worker the work-horses
are separate processes and are not included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from proving.bench.env import MANAGE

WORKER_CLASSES = {
    "simple": "rq.worker.SimpleWorker",  # jobs run in the worker process; one DB connection per worker
    # The product's worker, as `scripts/run` starts it (settings.RQ): RQ's forking worker, a work horse per job,
    # each job's module imported before the fork, the ingest queue's polls run in the worker itself (outreach.worker).
    "fork": "outreach.worker.Worker",
}
BASE_DIR = MANAGE.parent


def log_dir() -> Path:
    path = Path(os.environ.get("OUTREACH_BENCH_DIR", "/tmp")) / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def vm_hwm_kib(pid: int) -> int | None:
    """Peak RSS of a running process (VmHWM), in KiB; None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def reap(proc: subprocess.Popen, timeout: float) -> None:
    """Wait for *proc* (at most *timeout* s, then SIGKILL) and set its returncode."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            return
        time.sleep(0.02)


@dataclass
class Spawned:
    """A long-running child (worker, poller, watcher) started with `spawn`."""

    name: str
    proc: subprocess.Popen
    log_path: Path
    maxrss_kb: int | None = None

    def peak(self) -> int:
        """Peak RSS so far (KiB); remembered, so it can be read before the process is asked to stop."""
        now = vm_hwm_kib(self.proc.pid) if self.proc.poll() is None else None
        if now is not None:
            self.maxrss_kb = max(self.maxrss_kb or 0, now)
        return self.maxrss_kb or 0

    def stop(self, timeout: float = 30.0) -> int:
        """Read the peak RSS, SIGTERM (an RQ worker finishes its current job first), wait; returns the peak (KiB)."""
        peak = self.peak()
        if self.proc.poll() is None:
            self.proc.terminate()
        reap(self.proc, timeout)
        return peak

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def spawn(name: str, args: list[str], env: dict[str, str] | None = None) -> Spawned:
    """Start `python manage.py ARGS` (or `python -m ...` when args[0] == '-m'), output to a log file."""
    path = log_dir() / f"{name}.log"
    argv = [sys.executable, *args] if args[0] == "-m" else [sys.executable, str(MANAGE), *args]
    with open(path, "w") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env or dict(os.environ), cwd=BASE_DIR)
    return Spawned(name, proc, path)


@dataclass
class WorkerPool:
    """N `manage.py rqworker QUEUE` processes, started and registered with Redis before any job is enqueued."""

    count: int
    queue: str
    worker_class: str = "simple"
    job_class: str = ""  # e.g. proving.bench.tasks.TimedSendJob: the product's send task, timed
    workers: list[Spawned] = field(default_factory=list)
    maxrss_kb: list[int] = field(default_factory=list)

    def __enter__(self) -> WorkerPool:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 90.0) -> None:
        from django_rq import get_queue
        from rq import Worker

        tag = uuid.uuid4().hex[:6]
        names = [f"bench-{self.queue}-{tag}-{i}" for i in range(self.count)]
        for name in names:
            job_class = ["--job-class", self.job_class] if self.job_class else []
            self.workers.append(spawn(name, ["rqworker", self.queue, "--worker-class",
                                             WORKER_CLASSES[self.worker_class], "--name", name, "-v", "0",
                                             *job_class]))
        queue = get_queue(self.queue)
        deadline = time.monotonic() + timeout
        while True:
            ready = {w.name for w in Worker.all(queue=queue)}
            if set(names) <= ready:
                return
            dead = [w for w in self.workers if w.proc.poll() is not None]
            if dead or time.monotonic() > deadline:
                self.stop()
                detail = dead[0].log_tail() if dead else "timeout"
                raise RuntimeError(f"RQ workers did not start: {detail}")
            time.sleep(0.05)

    def stop(self) -> list[int]:
        if not self.maxrss_kb and self.workers:
            peaks = [w.peak() for w in self.workers]
            for w in self.workers:  # signal all first: they finish their current jobs in parallel
                if w.proc.poll() is None:
                    w.proc.terminate()
            for w in self.workers:
                w.stop()
            self.maxrss_kb = peaks
        return self.maxrss_kb


def run_child(name: str, args: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[dict, int]:
    """Run `python -m proving.bench.child ARGS` to completion; returns (its JSON answer, its peak RSS in KiB)."""
    child = spawn(name, ["-m", "proving.bench.child", *args], env=env)
    try:
        reap(child.proc, timeout)
    except BaseException:
        child.proc.kill()
        raise
    text = child.log_path.read_text(errors="replace")
    answer = next((line for line in reversed(text.splitlines()) if line.startswith("{")), None)
    if child.proc.returncode != 0 or answer is None:
        raise RuntimeError(f"bench child {name} failed (exit {child.proc.returncode}):\n{text[-3000:]}")
    result = json.loads(answer)
    return result, result["hwm_kib"]
