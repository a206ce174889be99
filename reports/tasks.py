"""The reports' periodic job (registered in outreach/cron.py): a few lines, the work is reports.rollup's."""

from __future__ import annotations

from .rollup import rollup


def reports_rollup() -> str:
    """Roll up what changed since the last run, and say what it cost."""
    return rollup().words()
