"""OAuth2 access tokens for SMTP and IMAP (SASL XOAUTH2 and OAUTHBEARER), at the network edge.

A mailbox with `auth = "oauth2"` names a token endpoint, a client id and the environment variables
(OUTREACH_SECRET_*) that hold its client secret and refresh token. Access tokens are obtained with the
refresh_token grant (authlib's OAuth2Session) and kept **in this process' memory only**: never in the
database, a log line, a repr or an error. A token is refreshed when it is within REFRESH_MARGIN of its
expiry, and once more when a server refuses it (`access_token(..., rejected=token)`): a second refusal
is the mailbox's failure, not the message's.

Errors have a scope, as in mailboxes.transports.base:
- TokenRefused: the token endpoint refused the client or the refresh token (invalid_grant: revoked or
  expired; invalid_client: wrong id or secret). Nothing of this mailbox can log in until an operator
  fixes it: the caller raises a mailbox-scope error (MailboxRefused / ImapTokenRefused). One the IMAP
  poll meets also blocks sending when SMTP logs in with the same settings (inbound.ingest.poll).
- TokenUnavailable: the endpoint could not be reached or answered 5xx: transient.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

import requests
from authlib.common.security import is_secure_transport
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session

from .targets import TargetRefused, guard, url_problem

log = logging.getLogger("outreach.oauth2")

# Seconds: a token this close to its expiry is refreshed before use (at most half its lifetime, so that a
# short-lived token just handed out is used, not refreshed again).
REFRESH_MARGIN = 300.0
DEFAULT_LIFETIME = 3600.0  # when the endpoint does not say (expires_in is only RECOMMENDED, RFC 6749 5.1)


@dataclass(frozen=True)
class Provider:
    label: str
    token_url: str
    scope: str
    console: str  # where an operator gets a client id, a secret and a refresh token


# Presets: `oauth2 = { provider = "google" }` fills the endpoint and the scope; either may be overridden.
PROVIDERS = {
    "google": Provider(
        "Google Workspace",
        "https://oauth2.googleapis.com/token",
        "https://mail.google.com/",
        "the Google Cloud console (OAuth client) and an OAuth consent for the mailbox",
    ),
    "microsoft": Provider(
        "Microsoft 365",
        "https://login.microsoftonline.com/organizations/oauth2/v2.0/token",
        "https://outlook.office.com/IMAP.AccessAsUser.All https://outlook.office.com/SMTP.Send offline_access",
        "the Entra admin center (app registration) and a consent for the mailbox",
    ),
}


class TokenError(Exception):
    def __init__(self, message: str, *, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class TokenRefused(TokenError):
    """The token endpoint refused the client or the refresh token: the mailbox's problem.

    `error` is the endpoint's RFC 6749 5.2 code (invalid_grant, invalid_client, ...) and `endpoint` its host
    name; both are empty when nothing was asked (no refresh token set, a token URL that may not be used).
    """

    def __init__(self, message: str, *, hint: str = "", error: str = "", endpoint: str = ""):
        super().__init__(message, hint=hint)
        self.error = error
        self.endpoint = endpoint

    @property
    def by_endpoint(self) -> bool:
        """The token endpoint itself answered with a refusal (not a setting missing in this process)."""
        return bool(self.error)


class TokenUnavailable(TokenError):
    """The token endpoint could not be asked (network, 5xx): try again later."""


@dataclass(frozen=True)
class OAuth2Config:
    token_url: str
    client_id: str
    client_secret: str = field(default="", repr=False)  # never in a repr, log line or traceback
    refresh_token: str = field(default="", repr=False)
    scope: str = ""
    client_secret_env: str = ""  # the names of the variables, for hints (never their values)
    refresh_token_env: str = ""
    timeout: float = 30.0
    # Called with a new refresh token when the provider rotates it (Microsoft does; RFC 9700 4.14): a token
    # stored sealed is replaced there, so the next process starts from it. Unset: kept in memory only.
    keep_rotated: Callable[[str], None] | None = field(default=None, repr=False, compare=False)

    @property
    def cache_key(self) -> str:
        """One cache entry per client and refresh token; a changed secret in the environment starts afresh."""
        material = "\x00".join((self.token_url, self.client_id, self.client_secret, self.refresh_token, self.scope))
        return hashlib.sha256(material.encode()).hexdigest()


def provider_defaults(provider: str) -> Provider | None:
    return PROVIDERS.get(provider)


def token_url_problem(url: str) -> str:
    """Why URL cannot be a token endpoint, or "": https to a public address (mailboxes.targets; a private one, or
    http, only where OUTREACH_ALLOW_PRIVATE_TARGETS lists it), and never plain http beyond loopback (authlib's
    rule, RFC 8252)."""
    if not url:
        return "a token endpoint (token_url) is required unless provider names one"
    if not is_secure_transport(url):
        return f"{url} is not https: a client secret and a refresh token travel only over TLS (http on loopback only)"
    return url_problem(url)


def endpoint_host(url: str) -> str:
    """The host name of a token endpoint, for operators' messages (never a user or password in the URL)."""
    try:
        return urlsplit(url).hostname or "the token endpoint"
    except ValueError:
        return "the token endpoint"


# --- the in-process cache ------------------------------------------------------------------------


@dataclass
class _Cached:
    access_token: str = field(default="", repr=False)
    expires_at: float = 0.0  # time.time()
    lifetime: float = 0.0
    # A provider may rotate the refresh token (Microsoft): the newest is used from here on.
    refresh_token: str = field(default="", repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


_cache: dict[str, _Cached] = {}
_cache_lock = threading.Lock()


def _entry(config: OAuth2Config) -> _Cached:
    with _cache_lock:
        return _cache.setdefault(config.cache_key, _Cached())


def forget_all() -> None:
    """Drop every cached token (tests; a process that wants to start afresh)."""
    with _cache_lock:
        _cache.clear()


def access_token(config: OAuth2Config, *, rejected: str = "") -> str:
    """A valid access token: the cached one, or a new one when it is close to expiry or the server just
    refused it (`rejected`). One refresh at a time per client: threads that wait reuse its answer."""
    if not config.refresh_token:
        if config.refresh_token_env:
            raise TokenRefused(f"no OAuth2 refresh token: the environment variable {config.refresh_token_env} "
                               "is not set", hint="set it where the workers run, or sign in again")
        raise TokenRefused("no OAuth2 refresh token: the mailbox is not signed in",
                           hint="sign in from the mailbox's Edit page")
    entry = _entry(config)
    with entry.lock:
        margin = min(REFRESH_MARGIN, entry.lifetime / 2)
        fresh = entry.access_token and entry.expires_at - margin > time.time()
        if fresh and entry.access_token != rejected:
            return entry.access_token  # still valid, or another thread refreshed it while this one waited
        if rejected and entry.access_token == rejected:
            entry.access_token, entry.expires_at = "", 0.0  # a server refused it: never offer it again
        started = time.time()
        token, expires_at, rotated = _refresh(config, entry.refresh_token or config.refresh_token)
        entry.access_token, entry.expires_at, entry.lifetime = token, expires_at, expires_at - started
        if rotated:
            entry.refresh_token = rotated
            _rotated(config, entry, rotated)
        return token


def _rotated(config: OAuth2Config, entry: _Cached, refresh_token: str) -> None:
    """The provider handed out a new refresh token: the client it belongs to is this entry's too (a config read
    after it was stored finds the same access token, not a refresh of its own), and it is kept where the old one
    was stored, when the config says where."""
    with _cache_lock:
        _cache[replace(config, refresh_token=refresh_token).cache_key] = entry
    if config.keep_rotated is None:
        log.warning("OAuth2 client %s: the provider rotated the refresh token; the new one is kept in this "
                    "process' memory only (sign in from the browser to have it stored)", config.client_id)
        return
    config.keep_rotated(refresh_token)


def _refresh(config: OAuth2Config, refresh_token: str) -> tuple[str, float, str]:
    """One refresh_token grant with authlib; (access token, expiry, rotated refresh token or "")."""
    if problem := token_url_problem(config.token_url):
        raise TokenRefused(problem, hint="set oauth2.token_url or oauth2.provider")
    session = guard(OAuth2Session(  # connects only to the address it has just checked
        config.client_id,
        config.client_secret,
        scope=config.scope or None,
        token_endpoint_auth_method="client_secret_post",
    ))
    started = time.time()
    try:
        token = session.refresh_token(config.token_url, refresh_token=refresh_token, timeout=config.timeout)
    except OAuthError as exc:
        # RFC 6749 5.2: invalid_grant (revoked, expired, wrong user), invalid_client, unauthorized_client, ...
        secret = f"the refresh token in {config.refresh_token_env}" if config.refresh_token_env else "the refresh token"
        hint = (
            f"check the client id and the secret in {config.client_secret_env or 'client_secret_env'}"
            if exc.error in ("invalid_client", "unauthorized_client")
            else f"{secret} was revoked or has expired: consent again and set the new one"
            if config.refresh_token_env
            else "the refresh token was revoked or has expired: sign in again (Mailboxes: Sign in again)"
        )
        raise TokenRefused(f"the token endpoint refused: {exc.error}" + _described(exc), hint=hint,
                           error=exc.error or "refused", endpoint=endpoint_host(config.token_url)) from None
    except requests.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise TokenUnavailable(f"the token endpoint answered HTTP {status}") from None
    except requests.RequestException as exc:
        raise TokenUnavailable(f"cannot reach the token endpoint {config.token_url}: {type(exc).__name__}") from None
    except TargetRefused as exc:
        raise TokenRefused(f"refused to connect to the token endpoint: {exc}", hint="set oauth2.token_url or "
                           "oauth2.provider", endpoint=endpoint_host(config.token_url)) from None
    finally:
        session.close()
    access = token.get("access_token") or ""
    if not access:
        raise TokenUnavailable("the token endpoint answered without an access token")
    lifetime = float(token.get("expires_in") or DEFAULT_LIFETIME)
    rotated = token.get("refresh_token") or ""
    log.info("OAuth2 access token refreshed for client %s (valid %.0f s)", config.client_id, lifetime)
    return access, started + lifetime, rotated if rotated != refresh_token else ""


def _described(exc: OAuthError) -> str:
    # The endpoint's own words, without anything that could be a token (they never echo one, but be sure).
    text = (exc.description or "").strip()
    return f" ({text[:200]})" if text and "token=" not in text.lower() else ""


# --- SASL ----------------------------------------------------------------------------------------


def xoauth2(user: str, token: str) -> str:
    """The XOAUTH2 initial response (Google, Microsoft): user=U ^A auth=Bearer T ^A ^A."""
    return f"user={user}\x01auth=Bearer {token}\x01\x01"


def oauthbearer(user: str, token: str, host: str, port: int) -> str:
    """The OAUTHBEARER initial response (RFC 7628 3.1): a GS2 header, then host, port and auth, ^A-separated."""
    authzid = user.replace("=", "=3D").replace(",", "=2C")  # RFC 5801 4: saslname
    return f"n,a={authzid},\x01host={host}\x01port={port}\x01auth=Bearer {token}\x01\x01"
