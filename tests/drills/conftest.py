"""Run `manage.py drill ...` as an operator would: a subprocess with the test settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_drill(request):
    # Build the drill's database the way this test run builds its own (--nomigrations or migrations).
    schema = "models" if request.config.getoption("nomigrations", default=False) else "migrate"

    def run(*args: str, timeout: float = 240, **env: str) -> subprocess.CompletedProcess:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OUTREACH_DRILL")}
        environ.update({"DJANGO_SETTINGS_MODULE": "outreach.test_settings", "PYTHONUNBUFFERED": "1"} | env)
        done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "drill", *args, "--schema", schema],
                              cwd=ROOT, env=environ, capture_output=True, text=True, timeout=timeout)
        print(done.stdout[-6000:], done.stderr[-3000:], sep="\n")  # shown when a test fails
        return done

    return run


def database_exists(name: str) -> bool:
    import psycopg
    from django.conf import settings

    s = settings.DATABASES["default"]
    with psycopg.connect(host=s["HOST"] or None, port=s["PORT"] or None, user=s["USER"] or None,
                         password=s["PASSWORD"] or None, dbname="postgres", autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def process_is_worker(pid: int) -> bool:
    try:
        return b"rqworker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
