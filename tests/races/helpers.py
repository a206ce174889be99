"""Barriers at pipeline checkpoints, and workers in threads with their own DB connections."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection

from sequences import checkpoints


class Worker(threading.Thread):
    """Runs `fn` in a thread; keeps its result or exception; closes its DB connection."""

    def __init__(self, fn: Callable[[], Any]):
        super().__init__(daemon=True)
        self.fn = fn
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - reported by outcome()
            self.error = exc
        finally:
            connection.close()

    def outcome(self, timeout: float = 20) -> Any:
        self.join(timeout)
        assert not self.is_alive(), "worker thread did not finish"
        if self.error:
            raise self.error
        return self.result


class Gate:
    """Pause the pipeline at a checkpoint until the test releases it."""

    def __init__(self, name: str):
        self.arrived = threading.Event()
        self.released = threading.Event()
        self.job_ids: list[int] = []
        self.remove = checkpoints.install(name, self._hook)

    def _hook(self, job_id: int) -> None:
        self.job_ids.append(job_id)
        self.arrived.set()
        assert self.released.wait(20), "gate never released"

    def wait(self, timeout: float = 20) -> None:
        assert self.arrived.wait(timeout), "worker never reached the checkpoint"

    def release(self) -> None:
        self.released.set()
