"""Where a bench or drill command writes its --json: checked, and its folder made, before the run starts.

A run takes minutes; finding only at its end that `var/bench/` does not exist
(a fresh clone) loses every figure it measured.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import CommandError


def json_target(path: str | None) -> Path | None:
    """The absolute path to write, its folder created; CommandError (before anything runs) if it cannot be."""
    if not path:
        return None
    target = Path(path).resolve()
    if target.is_dir():
        raise CommandError(f"--json {path}: is a folder; name the file to write")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"--json {path}: cannot create its folder ({exc.strerror or exc})") from exc
    if not os.access(target.parent, os.W_OK):
        raise CommandError(f"--json {path}: its folder is not writable")
    return target
