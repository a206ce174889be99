"""Mailbox rotation: a sequence sends from a pool; each enrollment keeps the mailbox it was given.

Real PostgreSQL, the real dispatcher and final check, two aiosmtpd servers (one with AUTH, so that a
wrong password blocks its mailbox the way a real server does).
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from db.clock import db_now
from inbound.ingest.record import inbound_record
from mailboxes.models import Mailbox
from proving.harness import mails
from proving.harness.smtp import SmtpServer
from sequences.config.apply import config_apply
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.models import Enrollment, SendJob, Sequence
from sequences.pipeline import send_job_process
from sequences.services.mailbox_health import mailbox_probe
from sequences.services.sending import HELD, dispatch_due
from sequences.services.stops import mailbox_pause, mailbox_resume
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
SECRET_ENV = "OUTREACH_SECRET_ROTATION_SMTP"
RIGHT, WRONG = "right-password-51c2", "wrong-password-9e04"


def run_due() -> list[str]:
    return [send_job_process(job_id=job_id, worker_id="w1").state for job_id in dispatch_due()]


def pooled(*mailboxes: Mailbox, steps: int = 2) -> Sequence:
    sequence = make_sequence(mailbox=mailboxes[0], steps=steps)
    sequence.pool.set(mailboxes)
    return sequence


def mailbox_names(sequence: Sequence) -> dict[str, str]:
    return dict(Enrollment.objects.filter(sequence=sequence).values_list("contact__email", "mailbox__name"))


@pytest.fixture
def auth_server():
    with SmtpServer(credentials={"sales": RIGHT}) as server:
        yield server


@pytest.fixture
def pair(auth_server, smtp_server, monkeypatch):
    """Mailbox a logs in to its server (the password is right for now); mailbox b needs no login."""
    monkeypatch.setenv(SECRET_ENV, RIGHT)
    a = MailboxFactory(
        name="a",
        address="a@outreach.test",
        smtp_port=auth_server.port,
        smtp_username="sales",
        smtp_password_env=SECRET_ENV,
    )
    b = MailboxFactory(name="b", address="b@outreach.test", smtp_port=smtp_server.port)
    return a, b


def test_a_blocked_mailbox_gets_no_new_enrollments_and_its_running_one_waits_then_resumes_on_it(
    pair, auth_server, smtp_server, monkeypatch
):
    a, b = pair
    sequence = pooled(a, b)
    first = enroll(sequence, "first@example.com")
    assert first.mailbox == a  # equal capacity: the first of the pool
    assert run_due() == [S.SUBMITTED]  # step 1 from a
    step1 = first.jobs.get(step__position=1)

    monkeypatch.setenv(SECRET_ENV, WRONG)  # a's server now refuses the login: a is blocked
    assert run_due() == [S.SCHEDULED]
    a.refresh_from_db()
    assert a.sending_status == "blocked"
    held = first.jobs.get(step__position=2)
    assert held.state == S.SCHEDULED and held.error.startswith(HELD)

    later = [enroll(sequence, f"later{i}@example.com") for i in range(3)]
    assert {e.mailbox_id for e in later} == {b.pk}, "new enrollments go to the mailbox that can send"
    assert run_due() == [S.SUBMITTED] * 3
    assert sorted(r.recipients[0] for r in smtp_server.received) == [f"later{i}@example.com" for i in range(3)]
    assert [r.recipients for r in auth_server.received] == [["first@example.com"]]
    assert all(r.message["From"].endswith("<b@outreach.test>") for r in smtp_server.received)

    # The held follow-up never moved to b: it waits for a, and leaves from a once a can send again.
    monkeypatch.setenv(SECRET_ENV, RIGHT)
    Mailbox.objects.filter(pk=a.pk).update(next_probe_at=db_now() - timedelta(seconds=1))
    assert mailbox_probe(mailbox_id=a.pk).outcome == "unblocked"
    assert run_due() == [S.SUBMITTED] * 4  # first's step 2 from a; the later ones' step 2 from b
    first.refresh_from_db()
    assert first.mailbox == a and first.status == Enrollment.Status.COMPLETED
    followup = [r for r in auth_server.received if r.recipients == ["first@example.com"]][-1]
    assert followup.message["From"].endswith("<a@outreach.test>")
    assert followup.message["In-Reply-To"] == step1.message_id
    assert not [r for r in smtp_server.received if r.recipients == ["first@example.com"]]


def test_a_paused_mailbox_gets_no_new_enrollments_and_its_running_one_resumes_on_it(pair, auth_server, smtp_server):
    a, b = pair
    sequence = pooled(a, b)
    first = enroll(sequence, "first@example.com")
    assert run_due() == [S.SUBMITTED]

    mailbox_pause(mailbox_id=a.pk, actor="ops")
    assert first.jobs.get(step__position=2).cancel_reason == "mailbox_paused"
    assert enroll(sequence, "new@example.com").mailbox == b
    assert run_due() == [S.SUBMITTED]  # only new@, from b

    assert mailbox_resume(mailbox_id=a.pk, actor="ops") == 1
    assert run_due() == [S.SUBMITTED] * 2  # first's step 2 from a again, new's step 2 from b
    assert [r.recipients for r in auth_server.received] == [["first@example.com"]] * 2
    assert [r.recipients for r in smtp_server.received] == [["new@example.com"]] * 2


def test_enrollments_are_spread_by_the_daily_capacity_left(smtp_server, tmp_path):
    a = MailboxFactory(name="a", smtp_port=smtp_server.port, daily_cap=10)
    b = MailboxFactory(name="b", smtp_port=smtp_server.port, daily_cap=4)
    solo = make_sequence(mailbox=a, steps=1)
    for i in range(8):
        enroll(solo, f"earlier{i}@example.com")
    assert run_due() == [S.SUBMITTED] * 8  # a: 2 left today, b: 4 left

    sequence = pooled(a, b, steps=1)
    path = tmp_path / "pool.csv"
    path.write_text("email,first_name,company\n" + "".join(f"p{i}@example.com,Pat,Acme\n" for i in range(4)))
    call_command("enroll", "--sequence", sequence.name, str(path), stdout=StringIO(), stderr=StringIO())
    # Each to the mailbox with the most left, counting the ones chosen before it: b, b, then a and b alike.
    assert mailbox_names(sequence) == {
        "p0@example.com": "b",
        "p1@example.com": "b",
        "p2@example.com": "a",
        "p3@example.com": "b",
    }
    # One at a time, what is already waiting to leave counts: a has 1 left, b has 1 left: a (first in the pool).
    assert enroll(sequence, "single@example.com").mailbox == a
    assert enroll(sequence, "next@example.com").mailbox == b
    run_due()
    sent_by = {r.recipients[0]: r.message["From"] for r in smtp_server.received}
    assert sent_by["p0@example.com"].endswith(f"<{b.address}>") and sent_by["p2@example.com"].endswith(f"<{a.address}>")


def test_a_reply_counts_in_the_mailbox_the_enrollment_sent_from_only(pair, smtp_server):
    a, b = pair
    mailbox_pause(mailbox_id=a.pk)
    sequence = pooled(a, b)
    enrollment = enroll(sequence, "ada@example.com")
    assert enrollment.mailbox == b
    assert run_due() == [S.SUBMITTED]
    job = enrollment.jobs.get(step__position=1)

    raw = mails.reply(to_message_id=job.message_id, to=b.address)
    elsewhere = inbound_record(mailbox_id=a.pk, folder="INBOX", uidvalidity=1, fetched=mails.fetched(raw, uid=1))
    assert "was sent from another mailbox" in elsewhere.effect
    enrollment.refresh_from_db()
    assert enrollment.status == Enrollment.Status.ACTIVE

    raw = mails.reply(to_message_id=job.message_id, to=b.address)
    here = inbound_record(mailbox_id=b.pk, folder="INBOX", uidvalidity=1, fetched=mails.fetched(raw, uid=1))
    assert "stopped (replied)" in here.effect
    enrollment.refresh_from_db()
    assert (enrollment.status, enrollment.stop_reason) == (Enrollment.Status.STOPPED, "replied")


def test_the_toml_names_one_mailbox_or_a_pool(db):
    text = """
[[mailbox]]
name = "east"
address = "east@acme.test"

[[mailbox]]
name = "west"
address = "west@acme.test"

[[sequence]]
name = "Pooled"
mailboxes = ["east", "west"]
[[sequence.step]]
subject = "Hi"
body = "Hello"

[[sequence]]
name = "Single"
mailbox = "east"
[[sequence.step]]
subject = "Hi"
body = "Hello"
"""
    config_apply(parse(text))
    pooled_seq, single = Sequence.objects.get(name="Pooled"), Sequence.objects.get(name="Single")
    assert pooled_seq.mailbox.name == "east"
    assert sorted(pooled_seq.pool.values_list("name", flat=True)) == ["east", "west"]
    assert single.mailbox.name == "east" and not single.pool.exists()

    result = config_apply(parse(text.replace('["east", "west"]', '["west"]')))
    assert "sequence Pooled: mailboxes ['east', 'west'] -> ['west'] (new enrollments only)" in result.changes
    with pytest.raises(ConfigError, match="either `mailbox"):
        parse(text.replace('mailbox = "east"', 'mailbox = "east"\nmailboxes = ["west"]'))
    with pytest.raises(ConfigError, match="no mailbox named 'north'"):
        parse(text.replace('["east", "west"]', '["east", "north"]'))
