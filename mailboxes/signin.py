"""OAuth sign-in from the browser (RFC 6749 authorization code with PKCE, RFC 7636), at the network edge.

An operator presses "Sign in with Google" (Microsoft, or a generic OAuth2 provider) on a mailbox's page; the
provider's consent page sends the browser back to `<OUTREACH_PUBLIC_URL>/mailboxes/oauth/callback/` with a
code, which is exchanged here (with the PKCE verifier) for a refresh token; the userinfo endpoint names the
account that consented. The caller stores the refresh token sealed (mailboxes.sealed); access tokens go on
being refreshed by mailboxes.oauth2. Google and Microsoft use the install's client (OUTREACH_OAUTH_GOOGLE_* and
OUTREACH_OAUTH_MICROSOFT_*); a generic provider the client id and secret stored on the mailbox.
Nothing here logs a code, a token, a verifier or a secret.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import requests
from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session

from .oauth2 import endpoint_host, provider_defaults, token_url_problem
from .targets import TargetRefused, guard


@dataclass(frozen=True)
class SigninEndpoints:
    authorize_url: str
    userinfo_url: str
    scope: str  # the sign-in's: mail access, and who signed in
    extra: tuple[tuple[str, str], ...] = ()  # more parameters of the authorization request


SIGNIN = {
    "google": SigninEndpoints("https://accounts.google.com/o/oauth2/v2/auth",
                              "https://openidconnect.googleapis.com/v1/userinfo",
                              "https://mail.google.com/ openid email",
                              (("access_type", "offline"), ("prompt", "consent"))),
    "microsoft": SigninEndpoints("https://login.microsoftonline.com/organizations/oauth2/v2.0/authorize",
                                 "https://graph.microsoft.com/oidc/userinfo",
                                 "https://outlook.office.com/IMAP.AccessAsUser.All "
                                 "https://outlook.office.com/SMTP.Send offline_access openid email"),
}
PROVIDER_LABELS = {"google": "Google", "microsoft": "Microsoft", "generic": "OAuth2 provider"}


class SigninError(Exception):
    """The sign-in did not give a refresh token; the message is fit for the operator (never a secret)."""


@dataclass(frozen=True)
class SigninClient:
    provider: str
    authorize_url: str
    token_url: str
    userinfo_url: str
    client_id: str
    client_secret: str = field(default="", repr=False)
    scope: str = ""
    extra: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SignedIn:
    refresh_token: str = field(repr=False)
    identity: str  # the account's address, from the userinfo endpoint


def install_client(provider: str) -> tuple[str, str]:
    """The install's client id and secret for a preset provider (environment), ("", "") when not configured."""
    prefix = f"OUTREACH_OAUTH_{provider.upper()}_"
    return os.environ.get(prefix + "CLIENT_ID", ""), os.environ.get(prefix + "CLIENT_SECRET", "")


def signin_client(*, provider: str, client_id: str, client_secret: str, authorize_url: str = "",
                  token_url: str = "", userinfo_url: str = "", scope: str = "") -> SigninClient:
    """The client of a sign-in: a preset's endpoints (the install's client unless one is given), or the given."""
    if provider in SIGNIN:
        preset, tokens = SIGNIN[provider], provider_defaults(provider)
        moved = [url for url, own in ((authorize_url, preset.authorize_url), (token_url, tokens.token_url),
                                      (userinfo_url, preset.userinfo_url)) if url and url != own]
        if moved and not client_id:
            # The install's client (its secret, and the tokens it gets) goes only to the provider's own endpoints.
            raise SigninError(f"the install's {PROVIDER_LABELS[provider]} client signs in only at "
                              f"{PROVIDER_LABELS[provider]}'s own endpoints, not at {', '.join(moved)}: "
                              "give the mailbox a client of its own")
        own_id, own_secret = install_client(provider)
        client = SigninClient(provider, authorize_url or preset.authorize_url, token_url or tokens.token_url,
                              userinfo_url or preset.userinfo_url, client_id or own_id,
                              client_secret if client_id else own_secret, scope or preset.scope, preset.extra)
    else:
        client = SigninClient("generic", authorize_url, token_url, userinfo_url, client_id, client_secret,
                              scope or "openid email offline_access")
    missing = [name for name in ("authorize_url", "token_url", "userinfo_url", "client_id")
               if not getattr(client, name)]
    if missing:
        hint = (f" (set OUTREACH_OAUTH_{provider.upper()}_CLIENT_ID and _CLIENT_SECRET)"
                if provider in SIGNIN and "client_id" in missing else "")
        raise SigninError(f"the sign-in needs {', '.join(m.replace('_', ' ') for m in missing)}{hint}")
    for url in (client.authorize_url, client.token_url, client.userinfo_url):
        if problem := token_url_problem(url):
            raise SigninError(problem.replace("a client secret and a refresh token travel", "secrets travel"))
    return client


def authorization_request(client: SigninClient, *, redirect_uri: str) -> tuple[str, str, str]:
    """(URL of the consent page, state, PKCE code verifier): the caller binds state and verifier to the session."""
    verifier = generate_token(64)
    with OAuth2Session(client.client_id, client.client_secret, scope=client.scope, redirect_uri=redirect_uri,
                       code_challenge_method="S256") as session:
        url, state = session.create_authorization_url(client.authorize_url, code_verifier=verifier,
                                                      **dict(client.extra))
    return url, state, verifier


def exchange(client: SigninClient, *, code: str, verifier: str, redirect_uri: str, timeout: float = 30.0) -> SignedIn:
    """The code for tokens (with the verifier), then who signed in; SigninError with the provider's words."""
    where = endpoint_host(client.token_url)
    with guard(OAuth2Session(client.client_id, client.client_secret, scope=client.scope, redirect_uri=redirect_uri,
                             token_endpoint_auth_method="client_secret_post")) as session:
        try:
            token = session.fetch_token(client.token_url, code=code, code_verifier=verifier, timeout=timeout)
        except OAuthError as exc:
            raise SigninError(f"{where} refused the code: {exc.error}"
                              + (f" ({exc.description[:200]})" if exc.description else "")) from None
        except requests.RequestException as exc:
            raise SigninError(f"cannot reach {where}: {type(exc).__name__}") from None
        except TargetRefused as exc:
            raise SigninError(f"refused to connect to {where}: {exc}") from None
        refresh = token.get("refresh_token") or ""
        if not refresh:
            raise SigninError(f"{where} gave no refresh token: the sign-in must ask for offline access")
        try:
            answer = session.get(client.userinfo_url, timeout=timeout)
            answer.raise_for_status()
            info = answer.json()
        except (requests.RequestException, ValueError, TargetRefused) as exc:
            raise SigninError(f"cannot read who signed in from {endpoint_host(client.userinfo_url)}: "
                              f"{type(exc).__name__}") from None
    identity = info.get("email") or info.get("preferred_username") or info.get("upn") or ""
    if not identity:
        raise SigninError("the provider did not say which account signed in (no email in its userinfo)")
    return SignedIn(refresh, identity)
