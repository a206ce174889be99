"""A local OAuth2 authorization server for tests: a token endpoint and a token-introspection endpoint (loopback).

- POST /token, grant_type=refresh_token (RFC 6749 6): the client authenticates with its id and secret (HTTP
  Basic or in the form); a known, unrevoked refresh token gets a new access token with `expires_in`.
  Anything else is a 400 with an RFC 6749 5.2 error (`invalid_grant`, `invalid_client`).
- POST /introspect (RFC 7662), as Dovecot's oauth2 passdb asks with `introspection_mode = post`
  (form field `token`): {"active": true, "email": USER, "exp": ...} or {"active": false}.

Dovecot validates IMAP logins against /introspect; the SMTP server of proving/harness/smtp.py validates
AUTH XOAUTH2 / OAUTHBEARER against the same endpoint, so one token store answers for both protocols.
A test can revoke a refresh token (and every access token it issued), invalidate one access token before
its expiry (what a provider does after a password change), and count what each endpoint was asked.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from proving.harness.stack import free_port


@dataclass
class _Grant:
    user: str
    revoked: bool = False


@dataclass
class _Access:
    user: str
    refresh_token: str
    expires_at: float  # time.time()
    valid: bool = True


class OAuthServer:
    """Start with start() / stop() or as a context manager; `token_url` and `introspection_url` on 127.0.0.1."""

    host = "127.0.0.1"

    def __init__(self, *, client_id: str = "outreach-test", client_secret: str | None = None, lifetime: int = 3600):
        self.client_id = client_id
        self.client_secret = client_secret or "cs-" + secrets.token_urlsafe(12)
        self.lifetime = lifetime  # seconds, the expires_in of every access token issued from now on
        # Refresh token rotation (RFC 9700 4.14.2), strictly: each refresh answers with a new refresh token and
        # the one it used stops working (Microsoft answers with a new one too, yet keeps the old one for a while).
        self.rotate = False
        self.port = free_port()
        self._grants: dict[str, _Grant] = {}
        self._access: dict[str, _Access] = {}
        self._lock = threading.Lock()
        self.refreshes = 0  # successful refresh_token grants
        self.refused = 0  # refused token requests
        self.introspections = 0
        self.issued: list[str] = []  # every access token handed out, in order
        self._httpd = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._thread: threading.Thread | None = None

    @property
    def token_url(self) -> str:
        return f"http://{self.host}:{self.port}/token"

    @property
    def introspection_url(self) -> str:
        return f"http://{self.host}:{self.port}/introspect"

    # --- what a test does --------------------------------------------------------------------

    def grant(self, user: str) -> str:
        """A new refresh token for USER (what the provider's consent screen hands an operator)."""
        token = "rt-" + secrets.token_urlsafe(24)
        with self._lock:
            self._grants[token] = _Grant(user)
        return token

    def revoke(self, refresh_token: str) -> None:
        """The user or an admin revoked the app's access: the refresh token and its access tokens stop working."""
        with self._lock:
            self._grants[refresh_token].revoked = True
            for access in self._access.values():
                if access.refresh_token == refresh_token:
                    access.valid = False

    def invalidate(self, access_token: str) -> None:
        """One access token stops working before its expiry; its refresh token still works."""
        with self._lock:
            self._access[access_token].valid = False

    def user_of(self, access_token: str) -> str | None:
        """The user an access token stands for, when it is valid now."""
        with self._lock:
            access = self._access.get(access_token)
            if access is None or not access.valid or access.expires_at <= time.time():
                return None
            return access.user

    # --- the endpoints -----------------------------------------------------------------------

    def _token(self, form: dict[str, str], basic: tuple[str, str] | None) -> tuple[int, dict]:
        client_id, client_secret = basic or (form.get("client_id", ""), form.get("client_secret", ""))
        with self._lock:
            if client_id != self.client_id or not secrets.compare_digest(client_secret, self.client_secret):
                self.refused += 1
                return 401, {"error": "invalid_client", "error_description": "client authentication failed"}
            grant = self._grants.get(form.get("refresh_token", ""))
            if form.get("grant_type") != "refresh_token" or grant is None or grant.revoked:
                self.refused += 1
                return 400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
            refresh_token = form["refresh_token"]
            answer = {"token_type": "Bearer", "expires_in": self.lifetime, "scope": form.get("scope", "")}
            if self.rotate:
                grant.revoked = True
                refresh_token = answer["refresh_token"] = "rt-" + secrets.token_urlsafe(24)
                self._grants[refresh_token] = _Grant(grant.user)
            access = answer["access_token"] = "at-" + secrets.token_urlsafe(24)
            self._access[access] = _Access(grant.user, refresh_token, time.time() + self.lifetime)
            self.refreshes += 1
            self.issued.append(access)
            return 200, answer

    def _introspect(self, form: dict[str, str]) -> tuple[int, dict]:
        with self._lock:
            self.introspections += 1
        token = form.get("token", "")
        user = self.user_of(token)
        if user is None:
            return 200, {"active": False}
        return 200, {
            "active": True,
            "email": user,
            "username": user,
            "exp": int(self._access[token].expires_at),
            "client_id": self.client_id,
        }

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> OAuthServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="oauth-server"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> OAuthServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def introspect(url: str, token: str, timeout: float = 5.0) -> str | None:
    """Ask an RFC 7662 endpoint about TOKEN (form POST, as Dovecot does); the user it names, or None."""
    body = urllib.parse.urlencode({"token": token}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - a loopback URL of ours
        answer = json.loads(response.read())
    if answer.get("active") is not True:
        return None
    return answer.get("email") or answer.get("username")


def _handler(server: OAuthServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            if self.path.startswith("/token"):
                status, answer = server._token(form, _basic(self.headers.get("Authorization", "")))
            elif self.path.startswith("/introspect"):
                status, answer = server._introspect(form)
            else:
                status, answer = 404, {"error": "not_found"}
            body = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # noqa: A002 - quiet: a request line never reaches test output
            pass

    return Handler


def _basic(header: str) -> tuple[str, str] | None:
    if not header.lower().startswith("basic "):
        return None
    user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    return urllib.parse.unquote(user), urllib.parse.unquote(password)
