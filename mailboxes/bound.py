"""Where each secret of a mailbox may go: the endpoint it was entered for, and nowhere else.

A password typed into the mailbox form, a refresh token from a sign-in or a variable an admin named is meant for
one server: the SMTP or IMAP host, port, security and username it was given with, or the token endpoint and
client of an OAuth2 grant. If a stored secret simply followed the mailbox's settings, whoever may edit a host
could point it at a server of their own and receive the secret at the next check or send. So each secret is
**bound**: `Mailbox.secret_endpoints` records, per secret, the endpoint in force when the secret was set, and
the secret is read (mailboxes.selectors.mailbox_secret) only while the mailbox still names that endpoint.
Changing any part of it asks for the secret again: a new password, a new sign-in, or an admin naming the
variable again. A refusal happens before any connection, in words that say where the secret was entered for.

An access token travels to the SMTP and IMAP servers, so a refresh token is bound to the mail servers as well
as to its token endpoint.
"""

from __future__ import annotations

from typing import Any

from .sealed import SEALED_FIELDS
from .secrets import SecretRefused

# Each secret of a mailbox: its sealed column (entered in the browser) and its environment-variable column.
SECRETS = {
    "smtp_password": ("smtp_password_sealed", "smtp_password_env"),
    "imap_password": ("imap_password_sealed", "imap_password_env"),
    "oauth2_client_secret": ("oauth2_client_secret_sealed", "oauth2_client_secret_env"),
    "oauth2_refresh_token": ("oauth2_refresh_token_sealed", "oauth2_refresh_token_env"),
}
WORDS = {which: SEALED_FIELDS[sealed] for which, (sealed, _env) in SECRETS.items()}  # "SMTP password", …
# The settings that make up each secret's endpoint (the form's fields that ask for the secret again).
ENDPOINT_FIELDS = {
    "smtp_password": ("smtp_host", "smtp_port", "smtp_security", "smtp_username", "auth"),
    "imap_password": ("imap_host", "imap_port", "imap_security", "imap_username", "auth"),
    "oauth2_client_secret": ("oauth2_provider", "oauth2_token_url", "oauth2_client_id", "auth"),
    "oauth2_refresh_token": ("oauth2_provider", "oauth2_token_url", "oauth2_client_id", "auth",
                             "smtp_host", "smtp_port", "smtp_security", "smtp_username",
                             "imap_host", "imap_port", "imap_security", "imap_username"),
}


class SecretNotBound(SecretRefused):
    """The mailbox names another endpoint than its secret was entered for: nothing is sent anywhere."""

    hint = "the secret is asked for again whenever the server, port, security, username or token URL changes"


def _server(kind: str, mailbox: Any) -> str:
    host = (getattr(mailbox, f"{kind}_host") or "").strip().lower().rstrip(".")
    if not host:
        return f"no {kind.upper()} server"
    username = getattr(mailbox, f"{kind}_username") or ""
    return (f"{kind.upper()} {host}:{getattr(mailbox, f'{kind}_port')} "
            f"({getattr(mailbox, f'{kind}_security')}{f', as {username}' if username else ''})")


def _token_endpoint(mailbox: Any) -> str:
    url = (mailbox.oauth2_token_url or "").strip() or f"{mailbox.oauth2_provider or 'no'} preset's token endpoint"
    return f"{url} for client {mailbox.oauth2_client_id or 'of the install'}"


def endpoint(mailbox: Any, which: str) -> str:
    """Where secret *which* of *mailbox* (a Mailbox, saved or not) would go, in words that also compare."""
    if which == "smtp_password":
        return f"{_server('smtp', mailbox)} with a password" if mailbox.auth != "oauth2" else "SMTP with OAuth2"
    if which == "imap_password":
        return f"{_server('imap', mailbox)} with a password" if mailbox.auth != "oauth2" else "IMAP with OAuth2"
    if which == "oauth2_client_secret":
        return _token_endpoint(mailbox)
    if which == "oauth2_refresh_token":
        return f"{_token_endpoint(mailbox)}, tokens to {_server('smtp', mailbox)} and {_server('imap', mailbox)}"
    raise KeyError(which)


def is_set(mailbox: Any, which: str) -> bool:
    sealed, env = SECRETS[which]
    return bool(getattr(mailbox, sealed) or getattr(mailbox, env))


def bound_problem(mailbox: Any, which: str) -> str:
    """Why secret *which* may not be used with the mailbox's current settings, in words; "" when it may."""
    if not is_set(mailbox, which):
        return ""
    entered_for = (mailbox.secret_endpoints or {}).get(which)
    if entered_for == endpoint(mailbox, which):
        return ""
    again = "sign in again" if which == "oauth2_refresh_token" else (
        "an admin names the variable again" if not getattr(mailbox, SECRETS[which][0]) else "enter it again")
    if entered_for is None:
        return f"the {WORDS[which]} was not entered for these settings: {again}"
    return (f"the {WORDS[which]} was entered for {entered_for}, not for "
            f"{endpoint(mailbox, which)}: {again}")


def bind(mailbox: Any, which: str) -> None:
    """Record that secret *which* was set for the mailbox's current settings (the caller saves)."""
    endpoints = dict(mailbox.secret_endpoints or {})
    if is_set(mailbox, which):
        endpoints[which] = endpoint(mailbox, which)
    else:
        endpoints.pop(which, None)
    mailbox.secret_endpoints = endpoints


def sources(mailbox: Any) -> dict[str, tuple[str | None, str | None]]:
    """Each secret's source as the instance holds it: (sealed token, variable name), None for a column not loaded
    (never read here: reading a deferred column would load it)."""
    return {which: (mailbox.__dict__.get(sealed), mailbox.__dict__.get(env))
            for which, (sealed, env) in SECRETS.items()}


def replaced(loaded: dict | None, now: dict) -> list[str]:
    """The secrets set or replaced since the instance was loaded (every set one for a new instance); a column that
    was not loaded is never taken for a replacement."""
    if loaded is None:
        return list(SECRETS)
    return [which for which in SECRETS
            if any(before is not None and before != after
                   for before, after in zip(loaded[which], now[which], strict=True))]
