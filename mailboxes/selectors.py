"""Reads about mailboxes that several callers share."""

from __future__ import annotations

import os

from django.conf import settings

from .models import Mailbox
from .transports import SmtpConfig, SmtpTransport


def secret_from_env(var_name: str) -> str:
    """Passwords are never stored: the mailbox names the env var that holds one."""
    return os.environ.get(var_name, "") if var_name else ""


def transport_for(mailbox: Mailbox) -> SmtpTransport:
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
