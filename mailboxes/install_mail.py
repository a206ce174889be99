"""The install's own mail: messages to the install's users (weekly reports, notices), never to contacts.

It is not a mailbox: it has no sequence, no pace and no reply view, and it never sends to a contact. Its server
comes from the environment (`OUTREACH_INSTALL_SMTP_*`, docs/configuration.md). With no server named, each
message is written as an .eml file under `OUTREACH_INSTALL_OUTBOX` (var/outbox), so a local run loses nothing
and sends nothing; the pages that send such mail say where it went (`where()`).

The password is used only with the host it was given for, and never in clear to a host that is not this
machine (mailboxes.tls.cleartext_login_problem), like a mailbox's.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.backends.smtp import EmailBackend as SmtpBackend

from mailboxes.tls import NO_TLS, cleartext_login_problem, tls_context

log = logging.getLogger("outreach.install_mail")

SECURITIES = ("starttls", "tls", NO_TLS)


class InstallMailError(Exception):
    """The install's mail could not be handed off, in words for the page or the log."""


@dataclass(frozen=True)
class Attachment:
    filename: str
    content: bytes | str
    mimetype: str


@dataclass(frozen=True)
class InstallMessage:
    to: tuple[str, ...]
    subject: str
    text: str
    html: str = ""
    attachments: tuple[Attachment, ...] = field(default_factory=tuple)


def where() -> str:
    """Where the install's mail goes, in words: the server and sender, or the outbox folder."""
    host = settings.OUTREACH_INSTALL_SMTP_HOST
    sender = settings.OUTREACH_INSTALL_MAIL_FROM
    if not host:
        return (f"written as files to {settings.OUTREACH_INSTALL_OUTBOX} (no OUTREACH_INSTALL_SMTP_HOST is set), "
                f"from {sender}")
    return f"sent through {host}:{settings.OUTREACH_INSTALL_SMTP_PORT} from {sender}"


def _to_outbox(email: EmailMultiAlternatives) -> None:
    """No server named: the message as an .eml file (a mail client opens it), one per message, never overwritten."""
    outbox = Path(settings.OUTREACH_INSTALL_OUTBOX)
    outbox.mkdir(parents=True, exist_ok=True)
    name = f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}.eml"
    (outbox / name).write_bytes(email.message().as_bytes())


def _connection():
    host = settings.OUTREACH_INSTALL_SMTP_HOST
    security = settings.OUTREACH_INSTALL_SMTP_SECURITY.strip().lower()
    if security not in SECURITIES:
        raise InstallMailError(f"OUTREACH_INSTALL_SMTP_SECURITY must be one of {', '.join(SECURITIES)}, "
                               f"not {security!r}")
    username = settings.OUTREACH_INSTALL_SMTP_USERNAME
    problem = cleartext_login_problem(protocol="SMTP", host=host, security=security, logs_in=bool(username))
    if problem:
        raise InstallMailError(f"the install's mail: {problem}")
    connection = SmtpBackend(
        alias="install", host=host, port=settings.OUTREACH_INSTALL_SMTP_PORT,
        username=username or None, password=settings.OUTREACH_INSTALL_SMTP_PASSWORD if username else None,
        use_tls=security == "starttls", use_ssl=security == "tls", timeout=settings.OUTREACH_SMTP_TIMEOUT)
    if security != NO_TLS:
        connection.ssl_context = tls_context(settings.OUTREACH_INSTALL_SMTP_CA_FILE)
    return connection


def send(message: InstallMessage) -> None:
    """Hand one message to the install's server (or the outbox); InstallMailError in words when it fails."""
    recipients = [address for address in message.to if address]
    if not recipients:
        raise InstallMailError("no recipient has an email address")
    email = EmailMultiAlternatives(message.subject, message.text, settings.OUTREACH_INSTALL_MAIL_FROM, recipients)
    if message.html:
        email.attach_alternative(message.html, "text/html")
    for attachment in message.attachments:
        email.attach(attachment.filename, attachment.content, attachment.mimetype)
    if not settings.OUTREACH_INSTALL_SMTP_HOST:
        try:
            _to_outbox(email)
        except OSError as exc:
            raise InstallMailError(f"the install's outbox {settings.OUTREACH_INSTALL_OUTBOX} cannot be written: "
                                   f"{exc}") from exc
        return
    try:
        _connection().send_messages([email])
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors; a refused login, a closed connection
        log.warning("install mail to %s failed: %s", ", ".join(recipients), exc)
        raise InstallMailError(f"the install's mail server refused or could not be reached: {exc}") from exc
