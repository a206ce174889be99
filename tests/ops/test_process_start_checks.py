"""Where Django's system checks run: `manage.py check` (and `migrate`, and the web's systemd unit before gunicorn)
refuses a configuration they find wrong, while a worker and the scheduler, which serve no URL, start without
importing every page for them (outreach/management/commands/rqworker.py).

The wrong configuration is a tracking webhook for Mailgun without its signing key (inbound.checks): a check of
the web's, which the worker had run at each start, a second of CPU for importing the URLconf alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from proving.harness.stack import database_url

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db(transaction=True)


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = dict(os.environ, DATABASE_URL=database_url(connection.settings_dict), REDIS_URL=settings.REDIS_URL,
                       OUTREACH_WEBHOOK_ESPS="mailgun", **env)
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)


def test_check_refuses_the_configuration_and_the_worker_starts_without_the_checks(redis_conn):
    refused = _manage("check")
    assert refused.returncode != 0 and "MAILGUN_WEBHOOK_SIGNING_KEY" in refused.stderr, refused.stderr[-2000:]

    worker = _manage("rqworker", "default", "--burst")
    assert worker.returncode == 0, worker.stderr[-2000:]
    assert "SystemCheckError" not in worker.stderr and "MAILGUN" not in worker.stderr


def test_the_scheduler_starts_without_the_checks(tmp_path):
    """rqcron reads its configuration and starts; it is stopped by a missing configuration module, not by a check of
    the web's."""
    started = _manage("rqcron", "no_such_cron_module_for_this_test")
    assert "SystemCheckError" not in started.stderr and "MAILGUN" not in started.stderr, started.stderr[-2000:]
    assert "no_such_cron_module_for_this_test" in started.stdout + started.stderr
