"""A refused OAuth2 refresh token seen by the IMAP poller blocks the mailbox's sending, when SMTP shares it.

Real parts on loopback: the token and introspection endpoints of proving/harness/oauth.py, Dovecot with its
oauth2 passdb (proving/harness/dovecot.py), the aiosmtpd server of proving/harness/smtp.py, the real poller,
dispatcher, final check and probe. An IMAP password refused never blocks sending: IMAP and SMTP passwords
often differ, and so does a mailbox whose OAuth2 settings serve IMAP alone.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from mailboxes import oauth2
from mailboxes.imap.errors import ImapAuthError
from mailboxes.models import Mailbox
from mailboxes.transports.smtp import POOL
from proving.harness.dovecot import Dovecot
from proving.harness.oauth import OAuthServer
from proving.harness.smtp import SmtpServer
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.pipeline import send_job_process
from sequences.services.mailbox_health import ProbeResult, mailbox_probe
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
USER = "alice"  # the Dovecot account, and the SASL identity on both protocols
SECRET_ENV, REFRESH_ENV = "OUTREACH_SECRET_OAUTHBLOCK_CLIENT", "OUTREACH_SECRET_OAUTHBLOCK_REFRESH"


@pytest.fixture(autouse=True)
def _fresh_token_cache():
    oauth2.forget_all()  # access tokens live in process memory: one test must not lend another its token
    yield
    oauth2.forget_all()
    POOL.close_all()


@pytest.fixture
def smtp(oauth):
    with SmtpServer(oauth_introspection_url=oauth.introspection_url) as server:
        yield server


@pytest.fixture
def imap(oauth):
    with Dovecot({USER: "no-password-login-here"}, oauth2_introspection_url=oauth.introspection_url) as server:
        yield server


def oauth2_mailbox(oauth: OAuthServer, imap: Dovecot, **fields) -> Mailbox:
    """A mailbox whose SMTP and IMAP log in with one OAuth2 client and refresh token (unless *fields* say else)."""
    settings = {
        "name": "sales",
        "smtp_username": USER,
        "auth": "oauth2",
        "oauth2_token_url": oauth.token_url,
        "oauth2_client_id": oauth.client_id,
        "oauth2_client_secret_env": SECRET_ENV,
        "oauth2_refresh_token_env": REFRESH_ENV,
        "oauth2_scope": "https://mail.google.com/",
        "imap_host": imap.host,
        "imap_port": imap.port,
        "imap_username": USER,
        "imap_folders": ["INBOX"],
    }
    return MailboxFactory(**(settings | fields))


@pytest.fixture
def box(oauth, smtp, imap) -> Mailbox:
    return oauth2_mailbox(oauth, imap, smtp_port=smtp.port)


def run_due() -> list[str]:
    """One dispatcher pass and every job it queued, each on a connection of its own, as a worker would run them."""
    states = []
    for job_id in dispatch_due():
        states.append(send_job_process(job_id=job_id, worker_id="w1").state)
        POOL.close_all()
    return states


def enroll_one(mailbox: Mailbox, email: str = "p0@example.com") -> Enrollment:
    return enroll(make_sequence(mailbox=mailbox, steps=1), email)


def poll_refused(mailbox: Mailbox) -> str:
    """Poll, expecting the login to fail as the poller reports it; its error text."""
    with pytest.raises(ImapAuthError) as excinfo:
        mailbox_poll(mailbox_id=mailbox.pk)
    mailbox.refresh_from_db()
    assert mailbox.last_poll_error and mailbox.poll_failures >= 1  # the poll's own reporting is unchanged
    return str(excinfo.value)


def probe_now(mailbox: Mailbox) -> ProbeResult:
    Mailbox.objects.filter(pk=mailbox.pk).update(next_probe_at=db_now() - timedelta(seconds=1))
    return mailbox_probe(mailbox_id=mailbox.pk)


def test_a_refresh_token_refused_at_the_imap_poll_blocks_sending_and_no_smtp_login_is_tried(
    box, oauth, smtp, caplog
):
    caplog.set_level(logging.DEBUG)
    enrollment = enroll_one(box)  # its job is due now
    oauth.revoke(oauth.refresh_token)

    error = poll_refused(box)

    assert "invalid_grant" in error and "consent again" in error
    box.refresh_from_db()
    assert box.sending_status == "blocked" and box.next_probe_at is not None
    assert box.blocked_reason.startswith("OAuth2 refresh token refused by 127.0.0.1 (invalid_grant)")
    assert "reconnect the mailbox" in box.blocked_reason and REFRESH_ENV in box.blocked_reason
    (blocked,) = TimelineEvent.objects.filter(kind="mailbox_blocked")  # the mailbox-health move
    assert blocked.data["mailbox"] == "sales" and blocked.data["reason"] == box.blocked_reason
    assert oauth.refused == 1  # the poll's one refresh attempt

    assert run_due() == ["deferred"]  # the final check: the mailbox is blocked

    job = SendJob.objects.get(enrollment=enrollment)
    assert job.state == S.SCHEDULED and not SendJob.objects.filter(state=S.FAILED).exists()
    assert smtp.auth_attempts == 0 and smtp.connections == 0 and smtp.received == []
    assert oauth.refused == 1  # sending did not even ask the token endpoint

    # Polled again while blocked: no login and no token request before the refused login's interval has
    # passed (inbound.ingest.login); it says so, and the block (reason, probe schedule) stays as it was.
    next_probe = box.next_probe_at
    assert "IMAP login refused 1 time in a row; next attempt at" in mailbox_poll(mailbox_id=box.pk).error
    assert oauth.refused == 1
    box.refresh_from_db()
    assert box.next_probe_at == next_probe and TimelineEvent.objects.filter(kind="mailbox_blocked").count() == 1

    secrets = [oauth.client_secret, oauth.refresh_token, *oauth.issued]
    shown = "\n".join([caplog.text, box.blocked_reason, box.last_poll_error, job.error])
    assert [s[:6] for s in secrets if s in shown] == []


def test_after_a_new_grant_the_probe_unblocks_the_mailbox_and_the_held_job_goes_out_once(
    box, oauth, smtp, monkeypatch
):
    enroll_one(box)
    oauth.revoke(oauth.refresh_token)
    poll_refused(box)
    assert run_due() == ["deferred"]

    assert probe_now(box).outcome == "still blocked"  # the token endpoint still refuses: no SMTP login either
    assert smtp.auth_attempts == 0

    oauth.refresh_token = oauth.grant(USER)  # the operator reconnected the mailbox
    monkeypatch.setenv(REFRESH_ENV, oauth.refresh_token)
    result = probe_now(box)

    assert result.outcome == "unblocked" and result.released == 1
    box.refresh_from_db()
    assert box.sending_status == "active" and box.blocked_reason == ""
    assert run_due() == [S.SUBMITTED]
    assert [r.recipients for r in smtp.received] == [["p0@example.com"]]
    assert mailbox_poll(mailbox_id=box.pk).error == ""


def test_an_imap_password_refused_does_not_block_sending(imap_mailbox, smtp_server, monkeypatch):
    monkeypatch.setenv("OUTREACH_SECRET_TEST_IMAP", "not-alices-password")
    enroll_one(imap_mailbox)

    error = poll_refused(imap_mailbox)

    assert "refused" in error
    assert imap_mailbox.sending_status == "active" and imap_mailbox.blocked_reason == ""
    assert not TimelineEvent.objects.filter(kind="mailbox_blocked").exists()
    assert run_due() == [S.SUBMITTED]
    assert len(smtp_server.received) == 1


def test_oauth2_for_imap_alone_is_not_blocked_from_sending_by_the_imap_poll(oauth, imap):
    with SmtpServer() as relay:  # an SMTP relay that takes mail from loopback without a login
        box = oauth2_mailbox(oauth, imap, smtp_port=relay.port, smtp_username="")
        enroll_one(box)
        oauth.revoke(oauth.refresh_token)

        error = poll_refused(box)

        assert "invalid_grant" in error
        box.refresh_from_db()
        assert box.sending_status == "active"
        assert run_due() == [S.SUBMITTED] and len(relay.received) == 1


def test_an_esp_mailbox_is_not_blocked_by_a_token_its_imap_side_was_refused(oauth, imap):
    box = oauth2_mailbox(oauth, imap, transport_kind="anymail", esp_name="sendgrid",
                         esp_api_key_env="OUTREACH_SECRET_OAUTHBLOCK_ESP")
    oauth.revoke(oauth.refresh_token)

    poll_refused(box)

    box.refresh_from_db()
    assert box.sending_status == "active" and not TimelineEvent.objects.filter(kind="mailbox_blocked").exists()
