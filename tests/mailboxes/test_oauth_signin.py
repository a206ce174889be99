"""OAuth sign-in from the browser (Debian's Chromium): authorization code with PKCE against a local authorization
server, the refresh token stored encrypted, XOAUTH2 logins to Dovecot and SMTP with the tokens it gives, and a
refused refresh that blocks the mailbox and offers "Sign in again".

The authorization server is proving/harness/oauth.py's token and introspection endpoints plus, here, a consent
page (/authorize), the authorization_code grant with an S256 code challenge, and /userinfo.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import urllib.parse
from http.server import BaseHTTPRequestHandler

import pytest
from cryptography.fernet import Fernet
from playwright.sync_api import Page, expect

from inbound.ingest.poll import mailbox_poll
from mailboxes import oauth2
from mailboxes.checks import imap_check
from mailboxes.imap.errors import ImapAuthError
from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV, unseal
from mailboxes.signin import SigninError, authorization_request, signin_client
from mailboxes.transports.smtp import POOL
from proving.harness.dovecot import Dovecot
from proving.harness.oauth import OAuthServer, _basic
from proving.harness.smtp import SmtpServer
from sequences.models import OperatorAction
from tests.mailboxes.checking import check_worker  # noqa: F401 - a fixture
from tests.ui.conftest import PASSWORD, browser_type_launch_args, roles, screenshot, users  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)
USER = "alice@acme.test"  # the account that consents, and the SASL identity on both protocols


class AuthorizationServer(OAuthServer):
    """The harness's token endpoint with a consent page, the code grant (PKCE S256 required) and userinfo."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.consenting = USER
        self.codes: dict[str, dict] = {}
        self.refresh_tokens: list[str] = []
        self._httpd.RequestHandlerClass = _handler(self)

    @property
    def authorize_url(self) -> str:
        return f"http://{self.host}:{self.port}/authorize"

    @property
    def userinfo_url(self) -> str:
        return f"http://{self.host}:{self.port}/userinfo"

    def consent_page(self, query: dict[str, str]) -> tuple[int, str]:
        if query.get("client_id") != self.client_id or query.get("code_challenge_method") != "S256":
            return 400, "<p>invalid_request: a known client and an S256 code challenge are required</p>"
        fields = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                         for k, v in query.items())
        return 200, (f"<h1>Allow outreach to read and send mail as {self.consenting}?</h1>"
                     f'<form method="post" action="/authorize">{fields}<button id="allow">Allow</button></form>')

    def consent_given(self, form: dict[str, str]) -> str:
        code = "code-" + secrets.token_urlsafe(16)
        self.codes[code] = {"user": self.consenting, "challenge": form["code_challenge"],
                            "redirect_uri": form["redirect_uri"]}
        return form["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": form["state"]})

    def code_grant(self, form: dict[str, str], basic) -> tuple[int, dict]:
        client_id, client_secret = basic or (form.get("client_id", ""), form.get("client_secret", ""))
        if client_id != self.client_id or client_secret != self.client_secret:
            return 401, {"error": "invalid_client"}
        issued = self.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if issued is None or issued["redirect_uri"] != form.get("redirect_uri") or challenge != issued["challenge"]:
            return 400, {"error": "invalid_grant", "error_description": "code, redirect URI or verifier do not match"}
        refresh = self.grant(issued["user"])
        self.refresh_tokens.append(refresh)
        status, answer = self._token({"grant_type": "refresh_token", "refresh_token": refresh,
                                      "client_id": client_id, "client_secret": client_secret}, None)
        return status, {**answer, "refresh_token": refresh}


def _handler(server: AuthorizationServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes, kind: str, location: str = "") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            if location:
                self.send_header("Location", location)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # noqa: N802 - http.server's name
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/authorize":
                status, page = server.consent_page(dict(urllib.parse.parse_qsl(url.query)))
                self._send(status, page.encode(), "text/html; charset=utf-8")
            elif url.path == "/userinfo":
                token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                user = server.user_of(token)
                answer = {"email": user, "email_verified": True} if user else {"error": "invalid_token"}
                self._send(200 if user else 401, json.dumps(answer).encode(), "application/json")
            else:
                self._send(404, b"", "text/plain")

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            if self.path.startswith("/authorize"):
                self._send(302, b"", "text/plain", location=server.consent_given(form))
                return
            if self.path.startswith("/token") and form.get("grant_type") == "authorization_code":
                status, answer = server.code_grant(form, _basic(self.headers.get("Authorization", "")))
            elif self.path.startswith("/token"):
                status, answer = server._token(form, _basic(self.headers.get("Authorization", "")))
            elif self.path.startswith("/introspect"):
                status, answer = server._introspect(form)
            else:
                status, answer = 404, {"error": "not_found"}
            self._send(status, json.dumps(answer).encode(), "application/json")

        def log_message(self, format, *args):  # noqa: A002 - quiet
            pass

    return Handler


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())
    oauth2.forget_all()
    yield
    oauth2.forget_all()
    POOL.close_all()


@pytest.fixture
def auth_server():
    with AuthorizationServer() as server:
        yield server


@pytest.fixture
def imap(auth_server):
    # XOAUTH2 only: the mechanism Google and Microsoft offer.
    with Dovecot({USER: "no-password-login-here"}, oauth2_introspection_url=auth_server.introspection_url,
                 oauth2_mechanisms=("xoauth2",)) as server:
        yield server


@pytest.fixture
def smtp(auth_server):
    with SmtpServer(oauth_introspection_url=auth_server.introspection_url, mechanisms=("XOAUTH2",)) as server:
        yield server


def test_an_admin_signs_a_mailbox_in_and_a_refused_refresh_asks_to_sign_in_again(
    live_server, page: Page, users, auth_server, imap, smtp, settings, screenshot, check_worker  # noqa: F811
):
    settings.OUTREACH_PUBLIC_URL = live_server.url  # the redirect URI: <public URL>/mailboxes/oauth/callback/
    page.goto(f"{live_server.url}/mailboxes/new/?preset=other")
    page.fill("#id_username", users["admin"].username)  # OAuth endpoints are an admin's to set
    page.fill("#id_password", PASSWORD)
    page.click("#login")
    page.get_by_label("Name", exact=True).fill("gsales")
    page.get_by_label("Address", exact=True).fill("someone@acme.test")  # the sign-in fills the real one
    page.get_by_label("Log in with", exact=True).select_option("oauth2")
    page.get_by_label("SMTP host", exact=True).fill("127.0.0.1")
    page.get_by_label("SMTP port", exact=True).fill(str(smtp.port))
    page.get_by_label("SMTP security", exact=True).select_option("none")
    page.get_by_label("IMAP host", exact=True).fill(imap.host)
    page.get_by_label("IMAP port", exact=True).fill(str(imap.port))
    page.get_by_label("IMAP security", exact=True).select_option("none")
    page.get_by_label("OAuth provider", exact=True).select_option("generic")
    page.get_by_label("OAuth client ID", exact=True).fill(auth_server.client_id)
    page.get_by_label("OAuth client secret", exact=True).fill(auth_server.client_secret)
    page.get_by_label("Authorization URL", exact=True).fill(auth_server.authorize_url)
    page.get_by_label("Token URL", exact=True).fill(auth_server.token_url)
    page.get_by_label("Userinfo URL", exact=True).fill(auth_server.userinfo_url)
    page.click("#save-mailbox")
    expect(page.locator("#check")).to_contain_text("no OAuth2 refresh token")  # not signed in yet
    page.click("#save-anyway")
    expect(page.locator("#check")).to_contain_text("Saved, and blocked until a check passes")
    mailbox = Mailbox.objects.get(name="gsales")
    assert mailbox.blocked_at is not None and unseal(mailbox.oauth2_client_secret_sealed) == auth_server.client_secret

    page.click("#sign-in-again-gsales")  # blocked: the list offers the sign-in
    expect(page.locator("h1")).to_contain_text(f"Allow outreach to read and send mail as {USER}?")
    screenshot("oauth-consent")
    page.click("#allow")
    expect(page.locator("#check")).to_contain_text(f"Signed in as {USER}. Sending works again")
    screenshot("oauth-signed-in")
    mailbox.refresh_from_db()
    (refresh,) = auth_server.refresh_tokens
    assert unseal(mailbox.oauth2_refresh_token_sealed) == refresh
    assert (mailbox.address, mailbox.smtp_username, mailbox.imap_username) == (USER, USER, USER)
    assert mailbox.blocked_at is None
    steps, _ = imap_check(mailbox)  # an XOAUTH2 login to Dovecot with a token refreshed from the stored one
    assert all(s.ok for s in steps) and "with an OAuth2 access token" in steps[0].detail, steps
    assert "XOAUTH2" in smtp.auth_mechanisms
    assert OperatorAction.objects.filter(action="mailbox_signed_in", result__identity=USER).exists()
    for text in (page.content(), str(list(OperatorAction.objects.values_list("result", flat=True)))):
        assert refresh not in text and auth_server.client_secret not in text

    auth_server.revoke(refresh)  # the account owner withdrew the app's access
    oauth2.forget_all()
    with pytest.raises(ImapAuthError, match="invalid_grant"):
        mailbox_poll(mailbox_id=mailbox.pk)  # the reading side meets the refused refresh: the mailbox is blocked
    mailbox.refresh_from_db()
    assert mailbox.blocked_at is not None and "invalid_grant" in mailbox.blocked_reason
    assert "sign in again" in mailbox.blocked_reason
    page.goto(f"{live_server.url}/mailboxes/")
    expect(page.locator("#sign-in-again-gsales")).to_have_text("Sign in again")
    screenshot("oauth-sign-in-again")


def test_a_callback_this_session_did_not_start_is_refused(client, users, auth_server):  # noqa: F811
    client.force_login(users["operator"])
    answer = client.get("/mailboxes/oauth/callback/?code=stolen&state=not-ours")
    assert answer.status_code == 400 and b"not started in this browser session" in answer.content
    assert not auth_server.codes and auth_server.refreshes == 0


def test_google_and_microsoft_sign_in_with_the_installs_client_and_pkce(monkeypatch):
    monkeypatch.setenv("OUTREACH_OAUTH_GOOGLE_CLIENT_ID", "install-google")
    monkeypatch.setenv("OUTREACH_OAUTH_GOOGLE_CLIENT_SECRET", "install-google-secret")
    client = signin_client(provider="google", client_id="", client_secret="")
    assert (client.client_id, client.client_secret) == ("install-google", "install-google-secret")
    assert "install-google-secret" not in repr(client)
    url, state, verifier = authorization_request(client, redirect_uri="https://outreach.example/mailboxes/oauth/"
                                                                      "callback/")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert url.startswith("https://accounts.google.com/o/oauth2/v2/auth?")
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert (query["code_challenge"], query["code_challenge_method"], query["state"]) == (challenge, "S256", state)
    assert query["access_type"] == "offline" and "https://mail.google.com/" in query["scope"]
    with pytest.raises(SigninError, match="OUTREACH_OAUTH_MICROSOFT_CLIENT_ID"):
        signin_client(provider="microsoft", client_id="", client_secret="")
