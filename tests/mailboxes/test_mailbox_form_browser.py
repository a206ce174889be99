"""An operator connects a mailbox from the browser (Debian's Chromium) while the worker and the IDLE watcher run.

Real parts: live_server, the aiosmtpd server with AUTH, Dovecot with passwords, `manage.py rqworker` and
`manage.py watch_mailboxes` as processes started before the mailbox existed (no restart afterwards).
The password typed in the form appears in no page, no process log and no dump of the database.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.db import connection
from playwright.sync_api import Page, expect

from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV
from mailboxes.transports.smtp import POOL
from proving.harness import mails
from proving.harness.smtp import SmtpServer
from sequences.models import Enrollment, OperatorAction, SendJob
from sequences.tasks import dispatch
from tests.factories import enroll, make_sequence
from tests.ui.conftest import PASSWORD, browser_type_launch_args, roles, screenshot, users  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROOT = Path(settings.BASE_DIR)
SMTP_PASSWORD = "smtp-Brw-91f3c0e2"  # noqa: S105 - a test server's
IMAP_PASSWORD = "imap-Brw-47a8d615"  # noqa: S105 - a test Dovecot account's
S = SendJob.State


def database_url() -> str:
    """The test database, for the processes the test starts."""
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def database_dump() -> bytes:
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        with sqlite3.connect(s["NAME"]) as db:
            return "\n".join(db.iterdump()).encode()
    env = {**os.environ, "PGPASSWORD": s["PASSWORD"] or ""}
    return subprocess.run(["pg_dump", "-h", s["HOST"] or "127.0.0.1", "-p", str(s["PORT"] or 5432), "-U", s["USER"],
                           s["NAME"]], env=env, capture_output=True, check=True, timeout=60).stdout


@pytest.fixture
def processes(tmp_path, monkeypatch, redis_conn):
    """The worker (ingest, send, default) and the IDLE watcher, started now: before any mailbox exists.
    (`redis_conn` empties the test run's Redis database first: no job left by an earlier test runs before ours.)"""
    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "outreach.test_settings",
           "PYTHONUNBUFFERED": "1"}
    started = []
    for name, argv in (("worker", ["rqworker", "ingest", "send", "default", "-v", "2"]),
                       ("watcher", ["watch_mailboxes", "--refresh", "2"])):
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), *argv], cwd=ROOT, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        started.append((proc, log))
    # A worker on a busy machine may take seconds to import Django: the page's check waits on it, so the test
    # starts once the worker listens (the watcher is waited on where the test needs it).
    worker_log = started[0][1]
    until(lambda: b"Listening on" in worker_log.read_bytes() or started[0][0].poll() is not None, 90,
          "the worker to listen")
    assert started[0][0].poll() is None, worker_log.read_text(errors="replace")
    yield [log for _, log in started]
    for proc, _ in started:
        proc.terminate()
    for proc, log in started:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        print(f"--- {log.name}\n{log.read_text(errors='replace')[-12000:]}")
    POOL.close_all()


@pytest.fixture
def smtp_auth():
    with SmtpServer(credentials={"sales@acme.test": SMTP_PASSWORD}) as server:
        yield server


def until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_an_operator_adds_a_mailbox_in_the_browser_and_the_running_worker_and_watcher_use_it(
    processes, live_server, page: Page, users, smtp_auth, dovecot, screenshot  # noqa: F811
):
    dovecot.add_users({"sales": IMAP_PASSWORD})
    pages: list[str] = []
    page.goto(f"{live_server.url}/mailboxes/")
    page.fill("#id_username", users["operator"].username)
    page.fill("#id_password", PASSWORD)
    page.click("#login")
    page.click("#add-mailbox")
    page.click("#preset-other")
    page.get_by_label("Name", exact=True).fill("sales")
    page.get_by_label("Address", exact=True).fill("sales@acme.test")
    page.get_by_label("Display name", exact=True).fill("Acme Sales")
    page.get_by_label("SMTP host", exact=True).fill("127.0.0.1")
    page.get_by_label("SMTP port", exact=True).fill(str(smtp_auth.port))
    page.get_by_label("SMTP security", exact=True).select_option("none")
    page.get_by_label("SMTP password", exact=True).fill(SMTP_PASSWORD)
    page.get_by_label("IMAP host", exact=True).fill(dovecot.host)
    page.get_by_label("IMAP port", exact=True).fill(str(dovecot.port))
    page.get_by_label("IMAP security", exact=True).select_option("none")
    page.get_by_label("IMAP username", exact=True).fill("sales")
    page.get_by_label("IMAP password", exact=True).fill(IMAP_PASSWORD)
    page.get_by_label("Reply view max age", exact=True).fill("10m")
    page.click("#check-connection")
    check = page.locator("#check")
    expect(check).to_contain_text("Connection works: SMTP and IMAP pass")
    expect(check).to_contain_text("SMTP AUTH: logged in as sales@acme.test")
    expect(check).to_contain_text("IMAP login: sales on")
    expect(check).to_contain_text("IMAP SELECT INBOX")
    expect(page.get_by_label("SMTP password (set — replace)")).to_have_value("")
    pages.append(page.content())
    screenshot("mailbox-form-checked")
    page.click("#save-mailbox")
    expect(page.locator("#check")).to_contain_text("sales: Saved. SMTP and IMAP pass")
    expect(page.locator("table")).to_contain_text("password stored encrypted")
    pages.append(page.content())
    screenshot("mailbox-list-after-add")
    page.click("#edit-sales")
    expect(page.get_by_label("IMAP password (set — replace)")).to_have_value("")
    pages.append(page.content())

    mailbox = Mailbox.objects.get(name="sales")
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Browser mailbox")
    enrollment = enroll(sequence, "ada@example.com", first_name="Ada")
    dispatch()
    until(lambda: SendJob.objects.filter(enrollment=enrollment, state=S.SUBMITTED).exists(), 60,
          "the running worker to send step 1 from the new mailbox")
    first = SendJob.objects.get(enrollment=enrollment, state=S.SUBMITTED)
    # The watcher started before the mailbox existed: it finds it within its refresh and hears the reply.
    dovecot.append("sales", "INBOX", mails.reply(to_message_id=f"<{first.message_id.strip('<>')}>",
                                                 sender="ada@example.com", to="sales@acme.test"))
    until(lambda: Enrollment.objects.get(pk=enrollment.pk).status == Enrollment.Status.STOPPED, 45,
          "the reply to stop Ada")
    assert SendJob.objects.filter(enrollment=enrollment).exclude(pk=first.pk).get().state == S.CANCELED
    assert len(smtp_auth.received) == 1

    page.goto(f"{live_server.url}/log/")
    pages.append(page.content())
    assert OperatorAction.objects.filter(action="mailbox_added", target="mailbox sales").exists()
    logs = [log.read_text(errors="replace") for log in processes]
    dump = database_dump()
    assert b"sales@acme.test" in dump  # the dump holds the mailbox ...
    for secret in (SMTP_PASSWORD, IMAP_PASSWORD):  # ... and neither password
        assert not any(secret in text for text in pages), "a page shows the password"
        assert not any(secret in text for text in logs), "a process log shows the password"
        assert secret.encode() not in dump, "the database dump holds the password"
    assert re.search(r"watching \d+ folders? with IDLE", logs[1]), logs[1][-2000:]
