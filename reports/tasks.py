"""The reports' periodic jobs (registered in outreach/cron.py): a few lines each, the work is their services'."""

from __future__ import annotations

from .rollup import rollup
from .weekly_send import weekly_reports_send


def reports_rollup() -> str:
    """Roll up what changed since the last run, and say what it cost."""
    return rollup().words()


def weekly_report_send() -> str:
    """Send each workspace's report of the last complete week to its chosen users, once (hourly: within the hour
    after the week ends; a failed send is tried again on the next run)."""
    return "; ".join(outcome.words for outcome in weekly_reports_send())
