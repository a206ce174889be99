"""OAuth2 (SASL XOAUTH2 and OAUTHBEARER) for SMTP and IMAP, against real servers on loopback.

The token endpoint and the introspection endpoint are proving/harness/oauth.py (an http.server); Dovecot's
`oauth2` passdb validates every IMAP login at that introspection endpoint, and the aiosmtpd server of
proving/harness/smtp.py validates AUTH XOAUTH2 / OAUTHBEARER at the same one. Sending goes through the real
pipeline (dispatch, final check, SMTP), polling through the real poller.
"""

from __future__ import annotations

import itertools
import logging
import time
from datetime import timedelta
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.db import connection

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from mailboxes import oauth2
from mailboxes.imap.session import ImapSession
from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV, seal, unseal
from mailboxes.selectors import imap_config_for, oauth2_config_for, transport_for
from mailboxes.transports.smtp import POOL
from proving.harness.dovecot import Dovecot
from proving.harness.smtp import SmtpServer
from proving.harness.stack import database_dump
from sequences.models import Enrollment, SendJob
from sequences.pipeline import send_job_process
from sequences.services.mailbox_health import mailbox_probe
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence

pytestmark = pytest.mark.django_db(transaction=True)
S = SendJob.State
USER = "alice"  # the Dovecot account, and the SASL identity on both protocols
SECRET_ENV, REFRESH_ENV = "OUTREACH_SECRET_OAUTH_CLIENT", "OUTREACH_SECRET_OAUTH_REFRESH"


@pytest.fixture(autouse=True)
def _fresh_token_cache():
    oauth2.forget_all()  # the access-token cache lives in process memory: one test must not lend another its token
    yield
    oauth2.forget_all()


@pytest.fixture(params=[("XOAUTH2", "OAUTHBEARER"), ("XOAUTH2",)], ids=["oauthbearer", "xoauth2"])
def mechanisms(request):
    """What the servers offer: both (Google: OAUTHBEARER is used) or XOAUTH2 alone (Microsoft 365)."""
    return request.param


@pytest.fixture
def smtp(oauth, mechanisms):
    with SmtpServer(oauth_introspection_url=oauth.introspection_url, mechanisms=mechanisms) as server:
        yield server


@pytest.fixture
def imap(oauth, mechanisms):
    with Dovecot(
        {USER: "no-password-login-here"},
        oauth2_introspection_url=oauth.introspection_url,
        oauth2_mechanisms=tuple(m.lower() for m in mechanisms),
    ) as server:
        yield server


@pytest.fixture
def box(oauth, smtp, imap) -> Mailbox:
    return MailboxFactory(
        name="sales",
        smtp_port=smtp.port,
        smtp_username=USER,
        auth="oauth2",
        oauth2_token_url=oauth.token_url,
        oauth2_client_id=oauth.client_id,
        oauth2_client_secret_env=SECRET_ENV,
        oauth2_refresh_token_env=REFRESH_ENV,
        oauth2_scope="https://mail.google.com/",
        imap_host=imap.host,
        imap_port=imap.port,
        imap_username=USER,
        imap_folders=["INBOX"],
    )


def run_due() -> list[str]:
    """Send what is due, each message on a connection of its own, as separate worker processes would: a kept
    connection (mailboxes.transports.smtp.POOL) logged in once and needs no token for its next message."""
    states = []
    for job_id in dispatch_due():
        states.append(send_job_process(job_id=job_id, worker_id="w1").state)
        POOL.close_all()
    return states


_people = itertools.count()


def enroll_many(mailbox: Mailbox, n: int) -> list[Enrollment]:
    """n new people (a first message to each needs no reply view) in a new one-step sequence."""
    sequence = make_sequence(mailbox=mailbox, steps=1)
    return [enroll(sequence, f"p{next(_people)}@example.com") for _ in range(n)]


def poll(mailbox: Mailbox):
    return mailbox_poll(mailbox_id=mailbox.pk)


def test_smtp_and_imap_log_in_with_one_refreshed_access_token(box, oauth, smtp, imap, mechanisms):
    enroll_many(box, 2)

    assert run_due() == [S.SUBMITTED, S.SUBMITTED]
    assert len(smtp.received) == 2
    expected = "OAUTHBEARER" if "OAUTHBEARER" in mechanisms else "XOAUTH2"
    assert smtp.auth_mechanisms == [expected, expected]  # one AUTH per message, no rejected attempt
    assert oauth.refreshes == 1  # the token was cached in memory and reused

    introspected = oauth.introspections
    result = poll(box)
    assert result.error == "" and "INBOX" in result.folders, result
    assert oauth.introspections > introspected  # Dovecot asked the introspection endpoint about our token
    assert oauth.refreshes == 1  # IMAP used the same cached token
    box.refresh_from_db()
    assert box.last_poll_error == "" and box.last_poll_ok_at is not None


def test_a_token_close_to_its_expiry_is_refreshed_before_use(box, oauth, smtp):
    oauth.lifetime = 4  # seconds; refreshed once less than half of it is left (REFRESH_MARGIN caps at half)
    enroll_many(box, 1)
    assert run_due() == [S.SUBMITTED]
    enroll_many(box, 1)
    assert run_due() == [S.SUBMITTED]
    assert oauth.refreshes == 1  # fresh: reused

    time.sleep(2.2)  # the expiry itself is what is tested: the token ages on the wall clock
    (first,) = oauth.issued
    assert oauth.user_of(first) == USER  # still valid at the provider ...
    enroll_many(box, 1)
    assert run_due() == [S.SUBMITTED]

    assert oauth.refreshes == 2  # ... yet refreshed before use
    assert smtp.auth_attempts == 3  # and no attempt was refused


def test_a_rejected_token_is_refreshed_once_and_the_login_retried(box, oauth, smtp, imap):
    enroll_many(box, 2)
    assert run_due() == [S.SUBMITTED, S.SUBMITTED]
    oauth.invalidate(oauth.issued[-1])  # the provider dropped it before its expiry (a password change)

    enroll_many(box, 1)
    assert run_due() == [S.SUBMITTED]
    assert smtp.auth_attempts == 4  # 2 + the refused one + the retry with the new token
    assert oauth.refreshes == 2

    oauth.invalidate(oauth.issued[-1])
    assert poll(box).error == ""
    assert oauth.refreshes == 3
    assert not SendJob.objects.filter(state=S.FAILED).exists()


def test_a_revoked_token_blocks_the_mailbox_fails_no_job_and_a_new_grant_sends_each_once(box, oauth, smtp, monkeypatch):
    enroll_many(box, 1)
    assert run_due() == [S.SUBMITTED]
    oauth.revoke(oauth.refresh_token)
    enrollments = enroll_many(box, 5)

    states = run_due()

    assert states[0] == S.SCHEDULED and set(states[1:]) == {"deferred"}
    assert not SendJob.objects.filter(state=S.FAILED).exists()
    assert smtp.auth_attempts == 2  # 1 ok before the revocation, then 1 refused: the refresh was then refused
    box.refresh_from_db()
    assert box.sending_status == "blocked"
    assert "invalid_grant" in box.blocked_reason and REFRESH_ENV in box.blocked_reason
    assert all(
        e.status == "active" and e.jobs.filter(state=S.SCHEDULED).exists()
        for e in Enrollment.objects.filter(pk__in=[e.pk for e in enrollments])
    )

    # The probe asks the token endpoint first: no login is attempted at the SMTP server with a dead grant.
    Mailbox.objects.filter(pk=box.pk).update(next_probe_at=db_now() - timedelta(seconds=1))
    assert mailbox_probe(mailbox_id=box.pk).outcome == "still blocked"
    assert smtp.auth_attempts == 2

    # IMAP: the poll reports the mailbox's login failure, with the hint; nothing is fetched.
    result_error = poll_error(box)
    assert "invalid_grant" in result_error and "consent again" in result_error

    oauth.refresh_token = oauth.grant(USER)  # the operator consented again and set the new refresh token
    monkeypatch.setenv(REFRESH_ENV, oauth.refresh_token)
    Mailbox.objects.filter(pk=box.pk).update(next_probe_at=db_now() - timedelta(seconds=1))
    result = mailbox_probe(mailbox_id=box.pk)
    assert result.outcome == "unblocked" and result.released == 5
    assert run_due() == [S.SUBMITTED] * 5
    recipients = [r.recipients[0] for r in smtp.received]
    assert sorted(recipients[1:]) == sorted(e.contact.email for e in enrollments) and len(recipients) == 6


def poll_error(mailbox: Mailbox) -> str:
    from mailboxes.imap.errors import ImapAuthError

    with pytest.raises(ImapAuthError) as excinfo:
        poll(mailbox)
    return str(excinfo.value)


def test_mailbox_check_shows_the_oauth2_step_and_a_hint_when_the_grant_is_revoked(box, oauth, capsys):
    call_command("mailbox_check", "sales")
    out = capsys.readouterr().out
    assert "ok   OAuth2 token" in out and "with an OAuth2 access token" in out
    assert "ok   login" in out and "ok   SELECT INBOX" in out

    oauth.revoke(oauth.refresh_token)
    oauth2.forget_all()  # another process: nothing cached
    with pytest.raises(CommandError, match="2 steps failed"):
        call_command("mailbox_check", "sales")
    out = capsys.readouterr().out
    assert "FAIL OAuth2 token" in out and "invalid_grant" in out and f"the refresh token in {REFRESH_ENV}" in out
    assert "FAIL login" in out


def test_no_token_or_secret_reaches_the_database_a_log_a_repr_or_an_error(
    box, oauth, smtp, imap, caplog, capsys, monkeypatch
):
    caplog.set_level(logging.DEBUG)  # every logger, urllib3's and authlib's included
    enroll_many(box, 2)
    assert run_due() == [S.SUBMITTED, S.SUBMITTED]
    oauth.invalidate(oauth.issued[-1])
    assert poll(box).error == ""
    call_command("mailbox_check", "sales", stdout=StringIO())
    shown = [
        repr(transport_for(box).config),
        repr(imap_config_for(box)),
        repr(oauth2_config_for(box)),
        repr(ImapSession(imap_config_for(box)).config),
    ]
    oauth.revoke(oauth.refresh_token)
    enroll_many(box, 1)
    run_due()  # blocks the mailbox: its reason is stored and shown
    with pytest.raises(CommandError):
        call_command("mailbox_check", "sales", stdout=StringIO())
    box.refresh_from_db()
    shown.append(box.blocked_reason)

    secrets = [oauth.client_secret, oauth.refresh_token, *oauth.issued]
    assert len(oauth.issued) >= 2
    dump = database_dump(connection.settings_dict)
    assert REFRESH_ENV in dump and oauth.token_url in dump  # the mailbox row is there: names, never values
    everything = "\n".join([dump, caplog.text, *capsys.readouterr(), *shown])
    leaked = [s[:6] for s in secrets if s in everything]
    assert leaked == [], f"secrets found (prefixes shown): {leaked}"


# --- load_sequences: the offline checks of the new keys ------------------------------------------

OAUTH_TOML = """
[[mailbox]]
name = "gsales"
address = "sales@acme.test"
auth = "oauth2"
smtp = { host = "smtp.gmail.com", port = 587, username = "sales@acme.test", security = "starttls" }
imap = { host = "imap.gmail.com", port = 993, username = "sales@acme.test", security = "tls", folders = ["INBOX"] }

[mailbox.oauth2]
provider = "google"
client_id = "123.apps.googleusercontent.com"
client_secret_env = "OUTREACH_SECRET_G_CLIENT"
refresh_token_env = "OUTREACH_SECRET_G_REFRESH"
"""


def load(tmp_path, text: str) -> str:
    path = tmp_path / "boxes.toml"
    path.write_text(text)
    out = StringIO()
    call_command("load_sequences", str(path), stdout=out, stderr=out)
    return out.getvalue()


def test_load_sequences_takes_a_google_preset_and_warns_of_unset_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("OUTREACH_SECRET_G_CLIENT", "x")
    out = load(tmp_path, OAUTH_TOML)
    assert "OUTREACH_SECRET_G_REFRESH is not set here" in out and "OUTREACH_SECRET_G_CLIENT" not in out
    box = Mailbox.objects.get(name="gsales")
    assert (box.auth, box.oauth2_provider, box.oauth2_token_url) == ("oauth2", "google", "")
    monkeypatch.setenv("OUTREACH_SECRET_G_REFRESH", "r")
    config = oauth2_config_for(box)
    assert config.token_url == "https://oauth2.googleapis.com/token" and config.scope == "https://mail.google.com/"
    assert transport_for(box).config.password == ""


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ('provider = "google"', 'provider = "yahoo"'),
            "mailbox[0].oauth2.provider (line 10): unknown provider 'yahoo'",
        ),
        (
            ('provider = "google"', 'token_url = "http://tokens.example.com/token"'),
            "oauth2.token_url (line 10): http://tokens.example.com/token is not https",
        ),
        (('client_id = "123.apps.googleusercontent.com"', ""), "oauth2.client_id: is required"),
        (
            ('refresh_token_env = "OUTREACH_SECRET_G_REFRESH"', 'refresh_token_env = "DJANGO_SECRET_KEY"'),
            "DJANGO_SECRET_KEY may not hold a mailbox secret",
        ),
        (
            ('username = "sales@acme.test", security = "starttls"', 'security = "starttls"'),
            'is required with auth = "oauth2": the account the token belongs to',
        ),
        (
            ('security = "starttls"', 'security = "starttls", password_env = "OUTREACH_SECRET_X"'),
            'smtp.password_env (line 6): not used with auth = "oauth2"',
        ),
        (('auth = "oauth2"', 'auth = "kerberos"'), "mailbox[0].auth (line 5): must be"),
        (('auth = "oauth2"', 'auth = "password"'), 'OAuth2 settings need auth = "oauth2"'),
        (
            ('provider = "google"', 'provider = "google"\ntenant = "x"'),
            "mailbox[0].oauth2.tenant (line 11): unknown key",
        ),
    ],
)
def test_load_sequences_reports_each_bad_oauth2_key_and_changes_nothing(tmp_path, change, expected):
    with pytest.raises(CommandError) as excinfo:
        load(tmp_path, OAUTH_TOML.replace(*change))
    assert expected in str(excinfo.value)
    assert not Mailbox.objects.exists()


def test_an_oauth2_mailbox_exports_to_toml_that_loads_back_the_same(tmp_path):
    from sequences.config.export import sequence_export_toml
    from sequences.config.parse import parse

    load(tmp_path, OAUTH_TOML)
    box = Mailbox.objects.get(name="gsales")
    text = sequence_export_toml(make_sequence(mailbox=box, steps=1))

    (entry,) = parse(text).mailboxes
    assert "[mailbox.oauth2]" in text and "token_url" not in text  # the provider's default stays the default
    assert {k: entry[k] for k in ("auth", "oauth2_provider", "oauth2_client_id", "oauth2_refresh_token_env")} == {
        "auth": "oauth2",
        "oauth2_provider": "google",
        "oauth2_client_id": box.oauth2_client_id,
        "oauth2_refresh_token_env": "OUTREACH_SECRET_G_REFRESH",
    }


def test_a_rotated_refresh_token_stored_sealed_replaces_the_old_one_and_survives_a_restart(
        box, oauth, smtp, monkeypatch):
    """A provider that rotates refresh tokens and retires the old one at once (RFC 9700 4.14.2): the new one is
    sealed in place of the old, so a restarted process (an empty token cache) still logs in; one refresh per
    rotation, not one per message."""
    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())
    Mailbox.objects.filter(pk=box.pk).update(oauth2_refresh_token_env="",
                                             oauth2_refresh_token_sealed=seal(oauth.refresh_token))
    box.refresh_from_db()
    oauth.rotate = True
    enroll_many(box, 2)
    assert run_due() == [S.SUBMITTED, S.SUBMITTED]
    assert oauth.refreshes == 1  # the second message found the access token the first one got
    stored = Mailbox.objects.get(pk=box.pk).oauth2_refresh_token_sealed
    assert unseal(stored) not in ("", oauth.refresh_token)  # the first one is retired at the provider

    oauth2.forget_all()  # a restart
    enroll_many(box, 1)
    assert run_due() == [S.SUBMITTED]
    assert oauth.refreshes == 2 and oauth.refused == 0
