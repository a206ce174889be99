"""Reads about mailboxes that several callers share."""

from __future__ import annotations

import os

from anymail.utils import get_anymail_setting
from django.conf import settings

from .models import Mailbox
from .transports.esp import EspConfig, EspTransport
from .transports.smtp import SmtpConfig, SmtpTransport


def secret_from_env(var_name: str) -> str:
    """Passwords are never stored: the mailbox names the env var that holds one."""
    return os.environ.get(var_name, "") if var_name else ""


def transport_for(mailbox: Mailbox) -> SmtpTransport | EspTransport:
    if mailbox.transport_kind == "anymail":
        # An ESP through django-anymail; the request timeout is anymail's REQUESTS_TIMEOUT setting.
        return EspTransport(
            EspConfig(
                esp=mailbox.esp_name,
                api_key=secret_from_env(mailbox.esp_api_key_env),
                api_url=mailbox.esp_api_url,
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
            ca_file=mailbox.ca_file,
            password_env=mailbox.smtp_password_env,
        )
    )
