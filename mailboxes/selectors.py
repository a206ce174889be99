"""Reads about mailboxes that several callers share."""

from __future__ import annotations

from anymail.utils import get_anymail_setting
from django.conf import settings

from workspaces.scoping import workspace_scope, workspace_unscoped

from .bound import SECRETS, SecretNotBound, bound_problem
from .imap.connection import ImapConfig
from .models import Auth, Mailbox
from .oauth2 import OAuth2Config, provider_defaults
from .sealed import SEALED_FIELDS, SealedSecretUnreadable, seal, unseal
from .secrets import SecretRefused, secret_from_env
from .transports.base import CheckStep, MailboxRefused, Submission, Transport
from .transports.esp import EspConfig, EspTransport, esp_api_url
from .transports.smtp import SmtpConfig, SmtpTransport

__all__ = ["RefusedTransport", "imap_password_missing", "mailbox_secret", "oauth2_config_for", "secret_from_env",
           "secret_source", "smtp_logs_in_with", "transport_for"]


def mailbox_secret(mailbox: Mailbox, which: str) -> str:
    """One secret of the mailbox: the stored one when set, else the allow-listed environment variable's; only
    while the mailbox names the endpoint the secret was entered for (mailboxes.bound).

    SecretRefused (or its SealedSecretUnreadable) when it may not or cannot be read; never logs the value."""
    sealed, env = SECRETS[which]
    if problem := bound_problem(mailbox, which):
        raise SecretNotBound(problem)
    if token := getattr(mailbox, sealed):
        return unseal(token, what=f"{SEALED_FIELDS[sealed]} stored for mailbox {mailbox.name}")
    return secret_from_env(getattr(mailbox, env))


def secret_source(mailbox: Mailbox, which: str) -> str:
    """Where the secret comes from, in words for a page ("stored encrypted", "environment variable X", "")."""
    sealed, env = SECRETS[which]
    if getattr(mailbox, sealed):
        return "stored encrypted"
    if name := getattr(mailbox, env):
        return f"environment variable {name}"
    return ""


def imap_password_missing(mailbox: Mailbox) -> str:
    """Why the reading side has no password to log in with, in words; "" when it has one (or logs in with OAuth2).

    Found before any connection: a login is never attempted without a password."""
    if mailbox.auth == Auth.OAUTH2:
        return ""
    if mailbox.imap_password_sealed:
        try:
            mailbox_secret(mailbox, "imap_password")
        except SecretRefused as exc:
            return f"{exc}: no login attempted"
        return ""
    name = mailbox.imap_password_env
    if not name:
        return "no IMAP password is set for this mailbox: no login attempted"
    if not secret_from_env(name):
        return f"the IMAP password variable {name} is empty or not set: no login attempted"
    return ""


class RefusedTransport(Transport):
    """A mailbox whose secret may not be read: nothing is sent or asked anywhere, and the reason says why.

    The mailbox's problem, not the message's: sending blocks the mailbox (its jobs wait) until it is fixed.
    """

    def __init__(self, mailbox: str, problem: str, hint: str = "name a variable that starts with OUTREACH_SECRET_"):
        self.problem = f"mailbox {mailbox}: {problem}"
        self.hint = hint

    def send(self, *, sender: str, recipient: str, message: bytes, **kwargs) -> Submission:
        raise MailboxRefused(self.problem, hint=self.hint)

    def check(self, *, sender: str) -> list[CheckStep]:
        return [CheckStep("secret", False, f"{self.problem} — {self.hint}")]


def oauth2_config_for(mailbox: Mailbox) -> OAuth2Config | None:
    """The mailbox's OAuth2 client (secrets stored encrypted, or read from the allow-listed environment), or None
    for a password."""
    if mailbox.auth != Auth.OAUTH2:
        return None
    preset = provider_defaults(mailbox.oauth2_provider)
    return OAuth2Config(
        token_url=mailbox.oauth2_token_url or (preset.token_url if preset else ""),
        client_id=mailbox.oauth2_client_id,
        client_secret=mailbox_secret(mailbox, "oauth2_client_secret"),
        refresh_token=mailbox_secret(mailbox, "oauth2_refresh_token"),
        scope=mailbox.oauth2_scope or (preset.scope if preset else ""),
        client_secret_env=mailbox.oauth2_client_secret_env,
        refresh_token_env=mailbox.oauth2_refresh_token_env,
        timeout=settings.OUTREACH_SMTP_TIMEOUT,
        keep_rotated=_rotated_token_keeper(mailbox) if mailbox.oauth2_refresh_token_sealed else None,
    )


def _rotated_token_keeper(mailbox: Mailbox):
    """Store a rotated refresh token sealed in place of the one it replaces; not over a newer sign-in."""
    pk, before = mailbox.pk, mailbox.oauth2_refresh_token_sealed

    def keep(refresh_token: str) -> None:
        Mailbox.objects.filter(pk=pk, oauth2_refresh_token_sealed=before).update(
            oauth2_refresh_token_sealed=seal(refresh_token))

    return keep


def transport_for(mailbox: Mailbox, *, timeout: float | None = None) -> Transport:
    """How the mailbox sends: SMTP or an ESP; a RefusedTransport when a secret may not be read. *timeout*: for
    each network operation (default: OUTREACH_SMTP_TIMEOUT; the connection check's is shorter)."""
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
                password="" if mailbox.auth == Auth.OAUTH2 else mailbox_secret(mailbox, "smtp_password"),
                security=mailbox.smtp_security,
                timeout=timeout or settings.OUTREACH_SMTP_TIMEOUT,
                ca_file=mailbox.ca_file,
                password_env="" if mailbox.smtp_password_sealed else mailbox.smtp_password_env,
                oauth2=oauth2_config_for(mailbox),
            )
        )
    except (SealedSecretUnreadable, SecretNotBound) as exc:
        return RefusedTransport(mailbox.name, str(exc), exc.hint)
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


def imap_config_for(mailbox: Mailbox, *, timeout: float | None = None) -> ImapConfig:
    """How to reach the mailbox's IMAP server and log in (its password stored encrypted, or from the allow-listed
    environment)."""
    oauth2 = oauth2_config_for(mailbox)
    return ImapConfig(host=mailbox.imap_host, port=mailbox.imap_port, username=mailbox.imap_username,
                      password="" if oauth2 else mailbox_secret(mailbox, "imap_password"),
                      security=mailbox.imap_security, timeout=timeout or settings.OUTREACH_IMAP_TIMEOUT,
                      ca_file=mailbox.ca_file,
                      oauth2=oauth2)


def mailbox_workspace(mailbox_id: int):
    """A context where queries see the mailbox's workspace only (and rows written outside any workspace, as
    background work always did): what ingestion of the mailbox's mail runs in."""
    workspace_id = Mailbox._base_manager.filter(pk=mailbox_id).values_list("workspace_id", flat=True).first()
    return workspace_unscoped() if workspace_id is None else workspace_scope(workspace_id, with_unowned=True)
