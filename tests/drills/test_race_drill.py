"""`manage.py drill race` end to end: a real worker process, the configured database (PostgreSQL or SQLite) and
Redis."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection

from proving.harness.stack import database_url
from tests.drills.conftest import database_exists, process_is_worker
from tests.factories import MailboxFactory

pytestmark = pytest.mark.slow


def test_both_fixtures_pass_and_the_drill_cleans_up(run_drill):
    done = run_drill("race", "--order", "both")

    assert done.returncode == 0
    out = done.stdout
    assert "drill race: PASS (reply-first PASS, send-first PASS)" in out
    assert "OUTREACH_PAUSE_AT=claimed" in out and "OUTREACH_PAUSE_AT=authorized" in out
    for row in ("claimed", "final check", "reply committed", "stop committed", "authorized", "submitted",
                "cancel reason", "SMTP received", "label"):
        assert re.search(rf"^\s+(\S+\s+)?{row}\s", out, re.M), f"no {row!r} row in the evidence"
    reply_first, send_first = out.split("[send-first]")
    # reply-first: the raced step never reached the capture server; the final check refused it.
    assert "step 1 x1, step 2 x0" in reply_first
    assert "refused: job was canceled" in reply_first
    assert "Canceled — never sent: the person replied (" in reply_first
    # send-first: it had passed the hand-off: sent once, and said so.
    assert "step 1 x1, step 2 x1" in send_first
    assert re.search(r"label\s+Already submitted at .* — cannot recall", send_first)
    assert "1 job in flight now (authorized, being handed off) — cannot recall" in send_first

    if connection.vendor == "postgresql":
        database = re.search(r"PostgreSQL database (outreach_drill_\w+)", out).group(1)
        assert not database_exists(database)
    else:
        assert not Path(re.search(r"SQLite file (\S+)", out).group(1)).exists()
    pids = [int(p) for p in re.findall(r"pid (\d+)", out)]
    assert len(pids) == 4 and not any(process_is_worker(pid) for pid in pids)


@pytest.mark.django_db(transaction=True)
def test_refuses_a_mailbox_not_marked_as_a_drill_target(run_drill):
    MailboxFactory(name="sales", is_drill_target=False)

    done = run_drill("race", "--mailbox", "sales", DATABASE_URL=database_url(connection.settings_dict))

    assert done.returncode != 0
    assert "mailbox 'sales' is not marked as a drill target" in done.stderr
    assert "drill race:" not in done.stdout  # refused before creating anything


@pytest.mark.django_db(transaction=True)
def test_with_the_final_check_bypassed_the_drill_fails(run_drill, smtp_server):
    """The same drill, its worker started with the unchecked authorize: the message leaves after the reply."""
    MailboxFactory(name="staging", is_drill_target=True, smtp_port=smtp_server.port)

    done = run_drill("race", "--order", "reply-first", "--mailbox", "staging",
                     DATABASE_URL=database_url(connection.settings_dict), OUTREACH_DRILL_UNCHECKED="1")

    assert done.returncode == 1
    assert "drill race: FAIL (reply-first FAIL)" in done.stdout
    assert "BYPASSED" in done.stdout
    assert re.search(r"FAIL  job \d+ was authorized at \S+ AFTER the stop committed", done.stdout)
    # --mailbox used that mailbox's SMTP server: this test's own, which got step 1 and the raced step 2.
    assert len(smtp_server.received) == 2
