"""Which environment variables a mailbox may read its password or API key from.

A mailbox names an environment variable instead of storing a secret. Anyone who can name one (an admin, a TOML
file) could otherwise name DJANGO_SECRET_KEY, DATABASE_URL or the erasure key and send it to an SMTP server or
URL of their own. So a name must start with OUTREACH_SECRET_ or be listed in the setting OUTREACH_SECRET_ENV_ALLOW,
and it may never be one of the install's own secrets (INSTALL_SECRETS, the OAuth clients' secrets), whatever the
allow-list says; anything else is refused when a file is loaded, when a form is saved, and again when the worker
reads the environment. A variable serves one purpose: a webhook's signing secret is no mailbox password
(sequences.secret_names keeps the two apart). Where a named secret may then go is mailboxes.bound's to say.
"""

from __future__ import annotations

import logging
import os
import re

from django.conf import settings
from django.core.exceptions import ValidationError

PREFIX = "OUTREACH_SECRET_"
NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# Mailbox fields that name an environment variable, and where they sit in a TOML [[mailbox]].
ENV_FIELDS = {
    "smtp_password_env": "smtp.password_env",
    "imap_password_env": "imap.password_env",
    "esp_api_key_env": "transport.api_key_env",
    "oauth2_client_secret_env": "oauth2.client_secret_env",
    "oauth2_refresh_token_env": "oauth2.refresh_token_env",
}

# The install's own secrets: never a mailbox's, even when listed in OUTREACH_SECRET_ENV_ALLOW.
INSTALL_SECRETS = frozenset({
    "DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "OUTREACH_ENCRYPTION_KEYS", "OUTREACH_WEBHOOK_SECRET",
    "OUTREACH_METRICS_TOKEN", "OUTREACH_HEALTH_TOKEN", "OUTREACH_ERASURE_KEY",
    "OUTREACH_SECRET_ERASURE_KEY",  # the erasure key's earlier name, still read (outreach/settings.py)
})
INSTALL_SECRET_PATTERN = re.compile(r"OUTREACH_OAUTH_[A-Z0-9_]*CLIENT_SECRET")

logger = logging.getLogger("outreach.mailboxes.secrets")


class SecretRefused(ValueError):
    """A mailbox names an environment variable outside the allow-list."""


def secret_env_problem(name: str) -> str:
    """Why NAME may not hold a mailbox secret, or "" when it may (an empty name means no secret)."""
    if not name:
        return ""
    if not NAME.fullmatch(name):
        return f"{name!r} is not an environment variable name (A-Z, 0-9, _)"
    if name in INSTALL_SECRETS or INSTALL_SECRET_PATTERN.fullmatch(name):
        return (f"{name} may not hold a mailbox secret: it is a secret of the install itself; name a variable of "
                f"its own that starts with {PREFIX}")
    if name.startswith(PREFIX) and len(name) > len(PREFIX):
        return ""
    if name in getattr(settings, "OUTREACH_SECRET_ENV_ALLOW", ()):
        return ""
    return (f"{name} may not hold a mailbox secret: name a variable that starts with {PREFIX} "
            "(or list it in the OUTREACH_SECRET_ENV_ALLOW setting)")


def validate_secret_env_name(name: str) -> None:
    """Form and model-field validator."""
    if problem := secret_env_problem(name):
        raise ValidationError(problem, code="secret_env_not_allowed")


def mailbox_config_problems(fields: dict) -> list[tuple[str, str, str]]:
    """(TOML key, value, problem) for every refused secret name in a parsed [[mailbox]], and a per-mailbox API URL."""
    problems = [(key, fields.get(field) or "", secret_env_problem(fields.get(field) or ""))
                for field, key in ENV_FIELDS.items()]
    if fields.get("esp_api_url"):
        problems.append(("transport.api_url", fields["esp_api_url"],
                         "API URLs are not set per mailbox: each ESP's is fixed (an override only in "
                         "the ANYMAIL setting <ESP>_API_URL)"))
    return [p for p in problems if p[2]]


def secret_from_env(name: str) -> str:
    """The secret in environment variable NAME; SecretRefused when the name is not allowed. Never logs the value."""
    if problem := secret_env_problem(name):
        logger.warning("refused to read a mailbox secret: %s", problem)
        raise SecretRefused(problem)
    return os.environ.get(name, "") if name else ""
