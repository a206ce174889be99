"""Reads about mailboxes that several callers share."""

from __future__ import annotations

from anymail.utils import get_anymail_setting
from django.conf import settings

from .imap.connection import ImapConfig
from .models import Auth, Mailbox
from .oauth2 import OAuth2Config, provider_defaults
from .secrets import SecretRefused, secret_from_env
from .transports.base import CheckStep, MailboxRefused, Submission, Transport
from .transports.esp import EspConfig, EspTransport, esp_api_url
from .transports.smtp import SmtpConfig, SmtpTransport

__all__ = ["RefusedTransport", "oauth2_config_for", "secret_from_env", "smtp_logs_in_with", "transport_for"]


class RefusedTransport(Transport):
    """A mailbox whose secret may not be read: nothing is sent or asked anywhere, and the reason says why.

    The mailbox's problem, not the message's: sending blocks the mailbox (its jobs wait) until it is fixed.
    """

    def __init__(self, mailbox: str, problem: str):
        self.problem = f"mailbox {mailbox}: {problem}"

    def send(self, *, sender: str, recipient: str, message: bytes, **kwargs) -> Submission:
        raise MailboxRefused(self.problem, hint="name a variable that starts with OUTREACH_SECRET_")

    def check(self, *, sender: str) -> list[CheckStep]:
        return [CheckStep("secret", False, self.problem)]


def oauth2_config_for(mailbox: Mailbox) -> OAuth2Config | None:
    """The mailbox's OAuth2 client (secrets read from the allow-listed environment), or None for a password."""
    if mailbox.auth != Auth.OAUTH2:
        return None
    preset = provider_defaults(mailbox.oauth2_provider)
    return OAuth2Config(
        token_url=mailbox.oauth2_token_url or (preset.token_url if preset else ""),
        client_id=mailbox.oauth2_client_id,
        client_secret=secret_from_env(mailbox.oauth2_client_secret_env),
        refresh_token=secret_from_env(mailbox.oauth2_refresh_token_env),
        scope=mailbox.oauth2_scope or (preset.scope if preset else ""),
        client_secret_env=mailbox.oauth2_client_secret_env,
        refresh_token_env=mailbox.oauth2_refresh_token_env,
        timeout=settings.OUTREACH_SMTP_TIMEOUT,
    )


def transport_for(mailbox: Mailbox) -> Transport:
    try:
        if mailbox.transport_kind == "anymail":
            # An ESP through django-anymail; the API base URL comes from the ESP's fixed table (or the
            # OUTREACH_ESP_API_URLS setting), never from the mailbox; the timeout is anymail's REQUESTS_TIMEOUT.
            return EspTransport(
                EspConfig(
                    esp=mailbox.esp_name,
                    api_key=secret_from_env(mailbox.esp_api_key_env),
                    api_url=esp_api_url(mailbox.esp_name),
                    timeout=float(get_anymail_setting("requests_timeout", default=30)),
                )
            )
        return SmtpTransport(
            SmtpConfig(
                host=mailbox.smtp_host,
                port=mailbox.smtp_port,
                username=mailbox.smtp_username,
                password="" if mailbox.auth == Auth.OAUTH2 else secret_from_env(mailbox.smtp_password_env),
                security=mailbox.smtp_security,
                timeout=settings.OUTREACH_SMTP_TIMEOUT,
                ca_file=mailbox.ca_file,
                password_env=mailbox.smtp_password_env,
                oauth2=oauth2_config_for(mailbox),
            )
        )
    except SecretRefused as exc:
        return RefusedTransport(mailbox.name, str(exc))


def smtp_logs_in_with(mailbox: Mailbox, oauth2: OAuth2Config | None) -> bool:
    """Whether the mailbox's SMTP login uses this very OAuth2 client and refresh token.

    Then a refusal the IMAP side met is the sending side's as well. An ESP, an SMTP relay that needs no
    login, a password login or other OAuth2 settings do not share it: an IMAP failure says nothing about them.
    """
    if oauth2 is None:
        return False
    transport = transport_for(mailbox)
    if not isinstance(transport, SmtpTransport):
        return False
    smtp = transport.config
    return bool(smtp.username) and smtp.oauth2 is not None and smtp.oauth2.cache_key == oauth2.cache_key


def imap_config_for(mailbox: Mailbox) -> ImapConfig:
    """How to reach the mailbox's IMAP server and log in (its password from the allow-listed environment)."""
    oauth2 = oauth2_config_for(mailbox)
    return ImapConfig(host=mailbox.imap_host, port=mailbox.imap_port, username=mailbox.imap_username,
                      password="" if oauth2 else secret_from_env(mailbox.imap_password_env),
                      security=mailbox.imap_security, timeout=settings.OUTREACH_IMAP_TIMEOUT, ca_file=mailbox.ca_file,
                      oauth2=oauth2)
