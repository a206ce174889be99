"""A mailbox that fails as a whole (authentication, TLS, sender policy, unreachable) blocks; its jobs wait.

Real aiosmtpd servers with AUTH, STARTTLS (a CA the test makes with openssl) and sender policies.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from db.clock import db_now
from mailboxes.models import Mailbox
from proving.harness.smtp import Behaviour, SmtpServer
from proving.harness.stack import free_port
from proving.harness.tls import make_certificates
from sequences.models import Enrollment, SendJob, Suppression, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.mailbox_health import ProbeResult, mailbox_probe, mailbox_probes_due
from sequences.services.sending import dispatch_due
from sequences.services.stops import mailbox_pause, mailbox_resume
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
SECRET_ENV = "OUTREACH_SECRET_HEALTH_SMTP"
RIGHT, WRONG = "right-password-7d1f", "wrong-password-0b2e"


def run_due() -> list[str]:
    """One dispatcher pass and every job it queued, in order, as a worker would run them."""
    return [send_job_process(job_id=job_id, worker_id="w1").state for job_id in dispatch_due()]


def probe_now(mailbox: Mailbox, **kw) -> ProbeResult:
    Mailbox.objects.filter(pk=mailbox.pk).update(next_probe_at=db_now() - timedelta(seconds=1))
    return mailbox_probe(mailbox_id=mailbox.pk, **kw)


def enroll_many(mailbox: Mailbox, n: int, steps: int = 1) -> list[Enrollment]:
    sequence = make_sequence(mailbox=mailbox, steps=steps)
    return [enroll(sequence, f"p{i}@example.com") for i in range(n)]


@pytest.fixture
def auth_server():
    with SmtpServer(credentials={"sales": RIGHT}) as server:
        yield server


def test_a_wrong_password_blocks_the_mailbox_fails_nothing_and_all_go_out_once_fixed(auth_server, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, WRONG)
    mailbox = MailboxFactory(smtp_port=auth_server.port, smtp_username="sales", smtp_password_env=SECRET_ENV)
    enrollments = enroll_many(mailbox, 20)

    states = run_due()

    # The first job met the 535 and was held; every other one met the blocked mailbox in the final check.
    assert states[0] == S.SCHEDULED and set(states[1:]) == {"deferred"}
    assert auth_server.auth_attempts == 1, "one failed login, not one (or two mechanisms) per job"
    assert not SendJob.objects.filter(state=S.FAILED).exists()
    mailbox.refresh_from_db()
    assert mailbox.sending_status == "blocked"
    assert "535" in mailbox.blocked_reason and f"check the password in {SECRET_ENV}" in mailbox.blocked_reason
    assert WRONG not in mailbox.blocked_reason
    assert run_due() == []  # nothing is due before the probe
    assert TimelineEvent.objects.filter(kind="mailbox_blocked").count() == 1

    # A probe that fails costs one login and waits longer for the next.
    first_wait = mailbox.next_probe_at - mailbox.blocked_at
    assert probe_now(mailbox).outcome == "still blocked"
    assert auth_server.auth_attempts == 2
    mailbox.refresh_from_db()
    assert mailbox.blocked_probes == 1 and mailbox.next_probe_at - db_now() > first_wait
    assert mailbox_probe(mailbox_id=mailbox.pk).outcome == "not due"
    assert auth_server.auth_attempts == 2

    monkeypatch.setenv(SECRET_ENV, RIGHT)
    result = probe_now(mailbox)
    assert result.outcome == "unblocked" and result.released == 20
    assert set(run_due()) == {S.SUBMITTED}

    assert sorted(r.recipients[0] for r in auth_server.received) == sorted(e.contact.email for e in enrollments)
    assert len(auth_server.message_ids()) == len(set(auth_server.message_ids())) == 20
    for job in SendJob.objects.all():
        # Every send went through the final check; the held one twice (before the block and after it).
        authorized = TimelineEvent.objects.filter(job=job, kind="job_authorized").values_list("data", flat=True)
        held = TimelineEvent.objects.filter(job=job, kind="job_held").exists()
        assert [d.get("final_check") for d in authorized] == ([True, True] if held else [True])
    assert Enrollment.objects.filter(status="completed").count() == 20


def test_a_missing_password_blocks_before_any_login_attempt(auth_server, monkeypatch):
    monkeypatch.delenv(SECRET_ENV, raising=False)
    mailbox = MailboxFactory(smtp_port=auth_server.port, smtp_username="sales", smtp_password_env=SECRET_ENV)
    enroll_many(mailbox, 3)
    run_due()
    mailbox.refresh_from_db()
    assert auth_server.auth_attempts == 0
    assert f"the environment variable {SECRET_ENV} is not set" in mailbox.blocked_reason
    assert not SendJob.objects.filter(state=S.FAILED).exists()


@pytest.mark.parametrize("behaviour", [
    Behaviour(rcpt_reply="553 5.7.1 <sender@outreach.test>: Sender address rejected: not owned by user sales"),
    Behaviour(rcpt_reply="554 5.7.1 <p0@example.com>: Relay access denied"),
    Behaviour(mail_reply="550 5.7.60 SMTP; Client does not have permissions to send as this sender"),
])
def test_a_sender_or_relay_refusal_blocks_the_mailbox_and_suppresses_nobody(behaviour):
    with SmtpServer(behaviour=behaviour) as server:
        mailbox = MailboxFactory(smtp_port=server.port)
        enroll_many(mailbox, 3)
        assert run_due()[0] == S.SCHEDULED
        mailbox.refresh_from_db()
        assert mailbox.sending_status == "blocked"
        assert "does not let this account send as" in mailbox.blocked_reason
        assert not SendJob.objects.filter(state=S.FAILED).exists()
        assert not Suppression.objects.exists()
        assert Enrollment.objects.filter(status="active").count() == 3


def test_a_recipient_refusal_is_still_the_recipients():
    with SmtpServer(behaviour=Behaviour(rcpt_reply="550 5.1.1 <p0@example.com>: user unknown")) as server:
        mailbox = MailboxFactory(smtp_port=server.port)
        enroll_many(mailbox, 1)
        assert run_due() == [S.FAILED]
        mailbox.refresh_from_db()
        assert mailbox.sending_status == "active"
        assert Suppression.objects.filter(value="p0@example.com", reason="hard_bounce").exists()


def test_an_untrusted_certificate_blocks_with_a_hint_and_ca_file_fixes_it(tmp_path):
    certs = make_certificates(tmp_path)
    with SmtpServer(starttls=certs.server_context()) as server:
        mailbox = MailboxFactory(smtp_port=server.port, smtp_security="starttls")
        enroll_many(mailbox, 2)
        assert run_due() == [S.SCHEDULED, "deferred"]
        mailbox.refresh_from_db()
        assert "CERTIFICATE_VERIFY_FAILED" in mailbox.blocked_reason
        assert "unknown CA" in mailbox.blocked_reason and "set ca_file" in mailbox.blocked_reason

        Mailbox.objects.filter(pk=mailbox.pk).update(ca_file=str(certs.ca_file))
        assert mailbox_probe(mailbox_id=mailbox.pk, forced=True, actor="ops").outcome == "unblocked"
        assert run_due() == [S.SUBMITTED, S.SUBMITTED]
        assert len(server.received) == 2


def test_auth_on_a_starttls_only_server_without_tls_says_to_use_starttls(tmp_path, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, RIGHT)
    certs = make_certificates(tmp_path)
    with SmtpServer(credentials={"sales": RIGHT}, starttls=certs.server_context()) as server:
        mailbox = MailboxFactory(smtp_port=server.port, smtp_username="sales", smtp_password_env=SECRET_ENV,
                                 smtp_security="none")
        enroll_many(mailbox, 1)
        run_due()
        mailbox.refresh_from_db()
        assert 'set security = "starttls"' in mailbox.blocked_reason
        assert server.auth_attempts == 0


def test_an_unreachable_server_is_retried_then_blocks_the_mailbox(settings):
    settings.OUTREACH_RETRY_BASE_SECONDS = 0
    settings.OUTREACH_CONNECT_FAILURES_TO_BLOCK = 3
    mailbox = MailboxFactory(smtp_port=free_port())  # nothing listens there
    enroll_many(mailbox, 1)
    for attempt in range(1, 4):
        assert run_due() == [S.SCHEDULED]
        mailbox.refresh_from_db()
        assert mailbox.connect_failures == (attempt if attempt < 3 else 0)
        assert mailbox.sending_status == ("active" if attempt < 3 else "blocked")
    assert "unreachable 3 times in a row" in mailbox.blocked_reason
    job = SendJob.objects.get()
    assert job.state == S.SCHEDULED and job.attempts == 2  # the attempt that blocked the mailbox is not counted


def test_an_operator_pause_and_a_block_are_different_states_and_resume_probes(auth_server, monkeypatch):
    monkeypatch.setenv(SECRET_ENV, WRONG)
    mailbox = MailboxFactory(smtp_port=auth_server.port, smtp_username="sales", smtp_password_env=SECRET_ENV)
    enroll_many(mailbox, 1)
    run_due()
    mailbox_pause(mailbox_id=mailbox.pk, actor="ops")
    mailbox.refresh_from_db()
    assert (mailbox.sending_status, mailbox.blocked_at is not None) == ("paused", True)
    monkeypatch.setenv(SECRET_ENV, RIGHT)
    mailbox_resume(mailbox_id=mailbox.pk, actor="ops")
    assert mailbox.pk in mailbox_probes_due()  # resuming asks for a probe at the next pass


def test_mailbox_check_prints_each_step_with_the_servers_words_and_a_hint(auth_server, monkeypatch, capsys):
    monkeypatch.setenv(SECRET_ENV, WRONG)
    mailbox = MailboxFactory(name="sales", smtp_port=auth_server.port, smtp_username="sales",
                             smtp_password_env=SECRET_ENV)
    with pytest.raises(CommandError, match="1 step failed"):
        call_command("mailbox_check", "sales")
    out = capsys.readouterr().out
    assert "ok   connect" in out and "FAIL AUTH" in out and f"check the password in {SECRET_ENV}" in out
    assert WRONG not in out

    monkeypatch.setenv(SECRET_ENV, RIGHT)
    call_command("mailbox_check", "sales")
    out = capsys.readouterr().out
    assert "ok   AUTH" in out and "ok   MAIL FROM" in out and "ok   RSET" in out
    assert auth_server.received == []  # a check sends nothing
    mailbox.refresh_from_db()
    assert mailbox.sending_status == "active"



def test_a_folder_is_guessed_under_inbox_with_the_servers_delimiter():
    from mailboxes.imap.folders import folder_guess

    cyrus = ["INBOX", "INBOX.Bounces", "INBOX.Sent"]
    assert folder_guess("Bounces", cyrus, ".") == "INBOX.Bounces"
    assert folder_guess("bounces", ["INBOX", "Bounces"], "/") == "Bounces"
    assert folder_guess("Archive", cyrus, ".") == ""


def test_a_cyrus_style_tls_imap_server_with_a_private_ca_and_a_misnamed_folder(tmp_path, monkeypatch, capsys):
    """Dovecot with STARTTLS (a CA the test made) and "." as separator (INBOX.Bounces), as Cyrus serves it."""
    from inbound.ingest.poll import mailbox_poll
    from mailboxes.models import ImapCursor
    from proving.harness import mails
    from proving.harness.dovecot import DEFAULT_USERS, Dovecot

    certs = make_certificates(tmp_path)
    monkeypatch.setenv("OUTREACH_SECRET_HEALTH_IMAP", DEFAULT_USERS["alice"])
    with Dovecot(DEFAULT_USERS, separator=".", certificates=certs) as server, SmtpServer() as smtp:
        server.create_folder("alice", "INBOX.Bounces")
        mailbox = MailboxFactory(name="cyrus", smtp_port=smtp.port, imap_host=server.host, imap_port=server.port,
                                 imap_username="alice", imap_password_env="OUTREACH_SECRET_HEALTH_IMAP",
                                 imap_security="starttls", imap_folders=["INBOX", "Bounces"])
        (enrollment,) = enroll_many(mailbox, 1, steps=2)
        assert run_due() == [S.SUBMITTED]
        job = SendJob.objects.get(enrollment=enrollment, state=S.SUBMITTED)
        server.append("alice", "INBOX", mails.reply(to_message_id=job.message_id, sender=enrollment.contact.email))

        # Without the CA, TLS to the IMAP server fails and says so.
        with pytest.raises(CommandError):
            call_command("mailbox_check", "cyrus")
        assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().out

        Mailbox.objects.filter(pk=mailbox.pk).update(ca_file=str(certs.ca_file))
        with pytest.raises(CommandError, match="1 step failed"):
            call_command("mailbox_check", "cyrus")
        out = capsys.readouterr().out
        assert "ok   login" in out and "hierarchy delimiter '.'" in out
        assert "FAIL SELECT Bounces" in out and "did you mean INBOX.Bounces?" in out

        result = mailbox_poll(mailbox_id=mailbox.pk)
        assert result.folders["INBOX"]["recorded"] == 1
        assert "did you mean INBOX.Bounces?" in result.folders["Bounces"]["error"]
        assert ImapCursor.objects.get(mailbox=mailbox, folder="Bounces").failures == 1
        enrollment.refresh_from_db()
        assert enrollment.status == Enrollment.Status.STOPPED  # the reply in INBOX was read over STARTTLS
