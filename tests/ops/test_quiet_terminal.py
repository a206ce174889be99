"""What `scripts/run` leaves on the terminal besides its own lines: warnings in words that need a look, nothing
for a browser's request of /favicon.ico, and nothing at start-up for the demo's reserved test domain."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from mailboxes.models import Mailbox
from proving.harness.stack import free_port, wait_for
from sequences import tasks
from tests.factories import MailboxFactory

ROOT = Path(__file__).resolve().parents[2]


def test_favicon_ico_is_the_icon(client, caplog):
    caplog.set_level(logging.WARNING)
    answer = client.get("/favicon.ico")
    assert (answer.status_code, answer["Location"]) == (301, "/static/favicon.svg")
    icon = client.get(answer["Location"])
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def _get(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310 (loopback, a URL we built)
            return answer.status
    except OSError:
        return None


@pytest.mark.one_database("the development server runs on a SQLite file of its own")
def test_the_development_server_logs_nothing_for_favicon_ico(tmp_path):
    # As scripts/run starts it: warnings only (OUTREACH_LOG_LEVEL=WARNING), so a 404 would be a WARNING line.
    port = free_port()
    base = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "OUTREACH_"))}
    env = base | {"DJANGO_SETTINGS_MODULE": "outreach.settings", "DJANGO_SECRET_KEY": "quiet-terminal-test-key-" * 2,
                  "DATABASE_URL": f"sqlite:///{tmp_path / 'outreach.sqlite3'}", "OUTREACH_VAR_DIR": str(tmp_path),
                  "OUTREACH_HTTPS": "0", "OUTREACH_LOG_LEVEL": "WARNING", "OUTREACH_DNS_RESOLVER": "off",
                  "PYTHONUNBUFFERED": "1"}
    log = (tmp_path / "runserver.log").open("w")
    server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: _get(f"http://127.0.0.1:{port}/healthz/live"), timeout=60, what="the development server",
                 interval=0.2)
        assert _get(f"http://127.0.0.1:{port}/favicon.ico") == 200  # urllib follows the redirect to the icon
        assert _get(f"http://127.0.0.1:{port}/favicon.ico") == 200
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()
    output = (tmp_path / "runserver.log").read_text()
    assert "Starting development server" in output or "Starting WSGI development server" in output, output
    assert "favicon" not in output and " WARNING " not in output, output


@pytest.mark.django_db(transaction=True)
def test_a_failing_domain_is_logged_in_words_not_as_a_dict(dns_server, caplog):
    MailboxFactory(address="sales@bare.test", dkim_selector="s1")  # the test DNS server has no records for it
    caplog.set_level(logging.WARNING, logger="outreach.tasks")
    assert tasks.domain_auth()["failing"] == 1
    (line,) = [r.getMessage() for r in caplog.records if r.name == "outreach.tasks"]
    assert line == ("domain authentication: 1 of the 1 mailbox checked fails SPF, DKIM or DMARC (the Mailboxes page "
                    "says which record and what to publish); none paused for it yet")


@pytest.mark.django_db(transaction=True)
def test_the_demo_mailbox_on_a_reserved_domain_starts_quietly(settings, caplog):
    # scripts/run: the system's resolver; the demo's sales@demo.outreach.test is never looked up, never failing.
    settings.OUTREACH_DNS_RESOLVER = ""
    MailboxFactory(name="demo", address="sales@demo.outreach.test")
    caplog.set_level(logging.INFO)
    counts = tasks.domain_auth()
    assert (counts["checked"], counts["failing"]) == (1, 0)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert Mailbox.objects.get(name="demo").auth_verdict == "reserved"
