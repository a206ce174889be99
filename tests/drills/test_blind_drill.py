"""`manage.py drill blind` end to end: its own Dovecot and SMTP server, a real worker process, the configured
database (PostgreSQL or SQLite). The same drill with the worker's final check bypassed FAILs."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from tests.drills.conftest import database_exists, process_is_worker

pytestmark = pytest.mark.slow


def test_nobody_gets_a_follow_up_while_the_mailbox_is_blind(run_drill):
    done = run_drill("blind")

    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.rstrip().endswith("drill blind: PASS")
    timeline = out.split("timeline (")[1].split("outcome:")[0]
    order = [line.split(None, 1)[1] for line in timeline.strip().splitlines()[1:]]

    def first(text: str) -> int:
        return next(i for i, line in enumerate(order) if text in line)

    revoked, restored = first("IMAP password revoked"), first("IMAP password restored")
    assert "poll: IMAP login as 'drill'" in order[revoked + 1] and "refused" in order[revoked + 1]
    assert "in a row; next attempt at" in order[first("reply of person 2 in INBOX") + 1]  # no second login
    # While blind: each person's step 2 was held with the reason in words (the refused login, in the server's
    # words), none authorized.
    for person in (1, 2, 3):
        held = first(f"person {person} step 2: held: waiting to read replies: credentials refused since")
        assert "AUTHENTICATIONFAILED" in order[held]
        assert revoked < held < restored
    assert not any("authorized" in line or "submitted" in line for line in order[:restored])
    assert revoked < first("mailbox_reply_view_stale") < restored < first("mailbox_reply_view_restored")
    # After: the reply stops its sender first; the others' follow-ups leave, with the view's age as evidence.
    assert first("person 2 stopped (replied)") < first("person 1 step 2: authorized")
    assert re.search(r"person 1 step 2: authorized, replies read up to \d+\.\d s before", timeline)
    assert re.search(r"person 2 replied\s+stopped\s+step 1 x1\s+step 2 canceled x0", out)
    assert re.search(r"person 1\s+completed\s+step 1 x1\s+step 2 submitted x1", out)
    assert re.search(r"person 3\s+completed\s+step 1 x1\s+step 2 submitted x1", out)

    if connection.vendor == "postgresql":
        assert not database_exists(re.search(r"PostgreSQL database (outreach_drill_\w+)", out).group(1))
    pid = int(re.search(r"rqworker send` pid (\d+)", out).group(1))
    assert not process_is_worker(pid)


def test_with_the_final_check_bypassed_the_drill_fails(run_drill):
    done = run_drill("blind", OUTREACH_DRILL_UNCHECKED="1")

    assert done.returncode == 1
    out = done.stdout
    assert "BYPASSED" in out and out.rstrip().endswith("drill blind: FAIL")
    assert re.search(r"FAIL  person 2 \(\S+\): step 2 reached the SMTP server while the mailbox could not read "
                     r"its replies", out)
    assert "FAIL  person 2 (" in out and "got step 2 after replying" in out
