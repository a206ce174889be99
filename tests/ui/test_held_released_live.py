"""Held follow-ups follow the fix, with the product running as an operator runs it: the Procfile's web server,
workers, scheduler and watcher as real processes (honcho), an operator in Chromium, a real SMTP server.

A mailbox that reads no replies holds its follow-ups ("cannot read its replies right now"). The operator ticks
"Follow-ups without reply view" and saves: the follow-up that was held leaves within 60 seconds, through the
final check, without anyone touching the job.

Its own SQLite database file (migrated first) and the suite's Redis database, like tests/ops/test_procfile.py.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from proving.harness.smtp import SmtpServer
from proving.harness.stack import LOOPBACK_TARGETS, free_port, wait_for
from tests.ops.procfile_run import HONCHO, ProcfileInstall

PASSWORD = "held-released-pw-4711"
RELEASE_WITHIN = 60  # seconds from the operator's Save to the follow-up at the SMTP server (the bound)
pytestmark = [
    pytest.mark.one_database("the processes run on a SQLite file of their own", on="sqlite"),
    pytest.mark.slow,
    pytest.mark.skipif(not HONCHO.exists(), reason="honcho is not installed (pip install -e .[test])"),
]

CONFIG = """
[[mailbox]]
name = "relay"
address = "sales@acme.test"
display_name = "Acme Sales"
smtp = {{ host = "127.0.0.1", port = {port}, security = "none" }}
window = {{ days = "mon,tue,wed,thu,fri,sat,sun", start = "00:00", end = "23:59", timezone = "UTC" }}
follow_ups_without_reply_view = true

[[sequence]]
name = "Intro"
mailbox = "relay"
status = "active"

[[sequence.step]]
subject = "Hello {{{{ first_name }}}}"
body = "Hello {{{{ first_name }}}}"
wait = "0s"

[[sequence.step]]
body = "Following up"
wait = "0s"
thread = true
"""


def _job_states(database: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(database) as db:
        return db.execute("select st.position, j.state from sequences_sendjob j join sequences_step st "
                          "on st.id = j.step_id order by st.position").fetchall()


def _held_for_the_reply_view(database: Path) -> bool:
    with sqlite3.connect(database) as db:
        return bool(db.execute("select 1 from sequences_timelineevent where kind = 'job_deferred' "
                               "and data like '%reply_view%'").fetchone())


def test_held_follow_ups_leave_within_a_minute_of_the_operator_allowing_them(page: Page, redis_conn, tmp_path):
    smtp = SmtpServer()
    smtp.start()
    port = free_port()
    install = ProcfileInstall(tmp_path, port, OUTREACH_ALLOW_PRIVATE_TARGETS=LOOPBACK_TARGETS)
    database = install.database
    install.manage("migrate", "-v0")
    (tmp_path / "outreach.toml").write_text(CONFIG.format(port=smtp.port))
    install.manage("load_sequences", str(tmp_path / "outreach.toml"))
    # As the mailbox form leaves a relay added without IMAP: reading no replies, and not allowed to send
    # follow-ups without (a configuration file must choose; the form lets the operator choose later).
    with sqlite3.connect(database) as db:
        db.execute("update mailboxes_mailbox set follow_ups_without_reply_view = 0")
    (tmp_path / "people.csv").write_text("email,first_name\nada@example.com,Ada\n")
    install.manage("enroll", "--sequence", "Intro", str(tmp_path / "people.csv"))
    install.manage("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@acme.test",
                   DJANGO_SUPERUSER_PASSWORD=PASSWORD)
    log = (tmp_path / "honcho.log").open("w")
    honcho = install.start(log)
    try:
        # Step 1 leaves (a first message needs no reply view); step 2 is held for the view it cannot have.
        wait_for(lambda: len(smtp.received) == 1 and _held_for_the_reply_view(database), timeout=90,
                 what="step 1 sent and step 2 held for the reply view", interval=0.5)
        assert _job_states(database) == [(1, "submitted"), (2, "scheduled")]

        url = f"http://127.0.0.1:{port}"
        page.goto(f"{url}/mailboxes/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", PASSWORD)
        page.click("#login")
        page.click("#edit-relay")
        page.get_by_label("Follow-ups without reply view", exact=True).check()
        page.click("#save-mailbox")
        saved = time.monotonic()
        expect(page).to_have_url(f"{url}/mailboxes/", timeout=30_000)

        wait_for(lambda: len(smtp.received) == 2, timeout=RELEASE_WITHIN, interval=0.25,
                 what=f"the held follow-up at the SMTP server within {RELEASE_WITHIN} s of Save")
        took = time.monotonic() - saved
        assert took <= RELEASE_WITHIN
        follow_up = smtp.received[1].message
        assert follow_up["In-Reply-To"] == smtp.received[0].message_id  # threaded under step 1
        # The server's answer is recorded just after it arrives (authorized -> submitted).
        wait_for(lambda: _job_states(database) == [(1, "submitted"), (2, "submitted")], timeout=10,
                 what="the follow-up recorded as submitted")
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        try:
            honcho.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(honcho.pid, signal.SIGKILL)
        log.close()
        smtp.stop()
