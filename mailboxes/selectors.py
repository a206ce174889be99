"""Reads about mailboxes that several callers share."""

from __future__ import annotations

from anymail.utils import get_anymail_setting
from django.conf import settings

from .models import Mailbox
from .secrets import SecretRefused, secret_from_env
from .transports.base import PermanentError, Submission, Transport
from .transports.esp import CancelAnswer, EspConfig, EspTransport, esp_api_url
from .transports.smtp import SmtpConfig, SmtpTransport

__all__ = ["RefusedTransport", "secret_from_env", "transport_for"]


class RefusedTransport(Transport):
    """A mailbox whose secret may not be read: nothing is sent or asked anywhere, and the reason says why."""

    def __init__(self, mailbox: str, problem: str):
        self.problem = f"mailbox {mailbox}: {problem}"

    def send(self, *, sender: str, recipient: str, message: bytes, **kwargs) -> Submission:
        raise PermanentError(self.problem)

    def cancel(self, *, schedule_id: str) -> CancelAnswer:
        return CancelAnswer("failed", self.problem)


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
                password=secret_from_env(mailbox.smtp_password_env),
                security=mailbox.smtp_security,
                timeout=settings.OUTREACH_SMTP_TIMEOUT,
            )
        )
    except SecretRefused as exc:
        return RefusedTransport(mailbox.name, str(exc))
