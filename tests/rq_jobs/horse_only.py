"""A job module that nothing imports but RQ: where it is imported tells where RQ resolved the job."""

from __future__ import annotations

import os


def pid() -> int:
    return os.getpid()
