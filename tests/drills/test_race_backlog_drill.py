"""`manage.py drill race --order imap-backlog` end to end: replies through a real Dovecot INBOX while follow-ups
queue behind a slow SMTP server, on the processes `scripts/run` starts, in the drill's own database and Redis."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("stack", ["product", pytest.param(
    "before", marks=pytest.mark.one_database("a control of the drill itself: its worker's final check bypassed"))])
def test_replies_read_through_imap_stop_their_people_during_a_send_backlog(run_drill, stack):
    unchecked = {"OUTREACH_DRILL_UNCHECKED": "1"} if stack == "before" else {}
    done = run_drill("race", "--order", "imap-backlog", **unchecked)

    out = done.stdout
    for command in ("manage.py rqworker ingest default --with-scheduler", "manage.py rqworker send",
                    "manage.py rqcron outreach.cron"):
        assert command in out or stack == "before"
    assert re.search(r"reply of person \d in INBOX \(APPEND confirmed\)", out)
    if stack == "product":
        assert done.returncode == 0
        assert "manage.py watch_mailboxes" in out
        assert "drill race: PASS (imap-backlog PASS)" in out
        assert re.search(r"reply of person \d committed \(inbound #\d+, in_reply_to\)", out)
        assert re.search(r"follow-up \d replied\s+canceled\s+SMTP received x0", out)
    else:
        # The stack before the reply view: the poll waits behind the sends, the repliers get their follow-ups.
        assert done.returncode == 1
        assert "drill race: FAIL (imap-backlog FAIL)" in out
        assert re.search(r"FAIL  follow-up \d \(\S+\): authorized at \S+, [\d.]+ s AFTER the reply was in the inbox",
                         out)
