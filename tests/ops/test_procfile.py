"""The Procfile runs the whole product on one host, as docs/operations.md says: `honcho start` with an
environment file starts the web server (gunicorn), the workers, the scheduler and the watcher, /healthz
sees each of them, and one SIGTERM stops them all.

Its own SQLite database file (migrated first) and the suite's Redis database; real processes, no stand-in.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import urllib.request

import pytest

from proving.harness.stack import free_port, wait_for
from tests.ops.procfile_run import HONCHO, ProcfileInstall

pytestmark = [
    pytest.mark.one_database("the processes run on a SQLite file of their own"),
    pytest.mark.slow,
    pytest.mark.skipif(not HONCHO.exists(), reason="honcho is not installed (pip install -e .[test])"),
]
HEALTH_TOKEN = "procfile-health-" + "x" * 32  # /healthz gives its detail only with it


def _health(port: int) -> dict | None:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/healthz",
                                     headers={"Authorization": f"Bearer {HEALTH_TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as answer:  # noqa: S310
            return json.load(answer)
    except OSError:
        return None


def _everyone_reports(port: int) -> dict | None:
    report = _health(port)
    if not report or report["status"] != "ok" or not report["scheduler"]["leader"]:
        return None
    if not report["watchers"]["processes"] or any(not q["workers"] for q in report["queues"].values()):
        return None
    return report


def test_honcho_starts_every_process_of_the_procfile_and_sigterm_stops_them(redis_conn, tmp_path):
    port = free_port()
    install = ProcfileInstall(tmp_path, port, OUTREACH_HEALTH_TOKEN=HEALTH_TOKEN)
    install.manage("migrate", "-v0")
    log = (tmp_path / "honcho.log").open("w")
    honcho = install.start(log)
    try:
        report = wait_for(lambda: _everyone_reports(port), timeout=60, what="every Procfile process in /healthz",
                          interval=0.5)
        assert report["database"] == {"ok": True, "vendor": "sqlite"} and report["redis"] == {"ok": True}
        assert set(report["queues"]) == {"send", "ingest", "default"}
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        try:
            honcho.wait(45)
        finally:
            log.close()
    output = (tmp_path / "honcho.log").read_text()
    for name in ("web", "ingest", "send", "scheduler", "watcher"):
        assert f"{name}.1 " in output, (name, output[-2000:])
    with pytest.raises(ProcessLookupError):  # nothing of the group is left running
        os.killpg(honcho.pid, 0)
    shutil.rmtree(tmp_path, ignore_errors=True)
