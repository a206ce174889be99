"""Named checkpoints of the send pipeline: claimed, prepared, authorized, submitted.

A no-op unless a test installs a hook, or a worker is started with
OUTREACH_PAUSE_AT=claimed[,authorized...] and OUTREACH_PAUSE_DIR=DIR: then it
creates DIR/<job_id>.<checkpoint>.paused on arrival and waits until
DIR/<job_id>.<checkpoint>.release exists (for drills and black-box tests).
"""

from __future__ import annotations

import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

NAMES = ("claimed", "prepared", "authorized", "submitted")
log = logging.getLogger("outreach.checkpoints")

Hook = Callable[[int], None]
_hooks: dict[str, list[Hook]] = defaultdict(list)


def install(name: str, hook: Hook) -> Callable[[], None]:
    """Run `hook(job_id)` at checkpoint `name`; returns a function that removes it."""
    if name not in NAMES:
        raise ValueError(f"unknown checkpoint {name!r}; known: {', '.join(NAMES)}")
    _hooks[name].append(hook)
    return lambda: _hooks[name].remove(hook)


def reach(name: str, job_id: int) -> None:
    for hook in list(_hooks.get(name, ())):
        hook(job_id)
    pause_at = {p.strip() for p in os.environ.get("OUTREACH_PAUSE_AT", "").split(",") if p.strip()}
    if name in pause_at:
        _pause_on_file(name, job_id)


def _pause_on_file(name: str, job_id: int) -> None:
    directory = Path(os.environ.get("OUTREACH_PAUSE_DIR", "var/pause"))
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / f"{job_id}.{name}.paused"
    release = directory / f"{job_id}.{name}.release"
    marker.write_text(str(os.getpid()))
    log.warning("job %s paused at checkpoint %s (pid %s); create %s to release", job_id, name, os.getpid(), release)
    while not release.exists():
        time.sleep(0.02)
    log.warning("job %s released at checkpoint %s", job_id, name)
