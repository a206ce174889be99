"""SMTP submission with smtplib: one connection per message, reporting where a failure happened."""

from __future__ import annotations

import re
import smtplib
import ssl
from dataclasses import dataclass

from ..kinds import HARD_STATUS_CODES
from .base import (
    OutcomeUnknown,
    PermanentError,
    RecipientRefused,
    Submission,
    TransientError,
    Transport,
    TransportError,
)


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    username: str = ""
    password: str = ""
    security: str = "none"  # none | starttls | tls
    timeout: float = 30.0
    local_hostname: str | None = None


ENHANCED = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")


def is_hard_bounce(code: int, text: str) -> bool:
    match = ENHANCED.search(text)
    if match:
        # Only codes that mean the address itself is bad; others, like 5.7.1
        # policy or relay refusals, say nothing certain about the address.
        return match.group(0) in HARD_STATUS_CODES
    return code in (550, 551, 553)


def envelope_address(address: str) -> str:
    """An address for MAIL FROM / RCPT TO: its domain in IDNA (punycode); the local part as given."""
    local, sep, domain = address.rpartition("@")
    if not sep or domain.isascii():
        return address
    return f"{local}@{domain.encode('idna').decode('ascii')}"


def _text(reply: bytes | str) -> str:
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


class SmtpTransport(Transport):
    """Submits one message over SMTP with smtplib, reporting where a failure happened."""

    supports_scheduled_send = False  # SMTP has no "deliver later"
    supports_cancel = False  # nothing to cancel once DATA is accepted

    def __init__(self, config: SmtpConfig):
        self.config = config

    def send(self, *, sender: str, recipient: str, message: bytes) -> Submission:
        cfg = self.config
        try:
            if cfg.security == "tls":
                client: smtplib.SMTP = smtplib.SMTP_SSL(
                    cfg.host, cfg.port, timeout=cfg.timeout, local_hostname=cfg.local_hostname,
                    context=ssl.create_default_context(),
                )
            else:
                client = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout, local_hostname=cfg.local_hostname)
        except (OSError, smtplib.SMTPException) as exc:
            raise TransientError(f"cannot connect to {cfg.host}:{cfg.port}: {exc}") from exc
        try:
            return self._converse(client, sender, recipient, message)
        finally:
            try:
                client.quit()
            except Exception:  # noqa: BLE001 - the outcome is already decided
                client.close()

    def _converse(self, client: smtplib.SMTP, sender: str, recipient: str, message: bytes) -> Submission:
        cfg = self.config
        try:
            client.ehlo_or_helo_if_needed()
            if cfg.security == "starttls":
                client.starttls(context=ssl.create_default_context())
                client.ehlo()
            if cfg.username:
                client.login(cfg.username, cfg.password)
            try:
                sender, recipient = envelope_address(sender), envelope_address(recipient)
            except UnicodeError as exc:
                raise PermanentError(f"address cannot be sent: {exc}") from exc
            options: list[str] = []
            if not (sender.isascii() and recipient.isascii()):
                # A non-ASCII local part travels only as SMTPUTF8 (RFC 6531), and only where the server offers it.
                if not client.has_extn("smtputf8"):
                    raise PermanentError(f"the server does not offer SMTPUTF8, needed for {recipient!r}")
                options.append("SMTPUTF8")
            code, reply = client.mail(sender, options)
            if code != 250:
                raise self._refusal(code, reply, "MAIL FROM")
            code, reply = client.rcpt(recipient)
            if code not in (250, 251):
                if 500 <= code < 600:
                    text = _text(reply)
                    raise RecipientRefused(f"{code} {text}", code=code, hard=is_hard_bounce(code, text))
                raise self._refusal(code, reply, "RCPT TO")
        except TransportError:
            raise
        except smtplib.SMTPAuthenticationError as exc:
            raise PermanentError(f"authentication failed: {exc.smtp_code} {_text(exc.smtp_error)}",
                                 code=exc.smtp_code) from exc
        except (OSError, smtplib.SMTPException) as exc:
            # Nothing of the message has been sent yet.
            raise TransientError(f"SMTP failed before DATA: {exc}") from exc
        except (UnicodeError, ValueError) as exc:
            # smtplib refused to put the command on the wire (e.g. a non-ASCII address): nothing was sent.
            raise PermanentError(f"SMTP refused before DATA: {type(exc).__name__}: {exc}") from exc

        # The DATA command itself, before any byte of the message: a failure here is one like any other.
        try:
            code, reply = client.docmd("DATA")
        except (OSError, smtplib.SMTPException) as exc:
            raise TransientError(f"SMTP failed at DATA, before the message: {exc}") from exc
        if code != 354:
            raise self._refusal(code, reply, "DATA")
        # From here on the server may have the message: a broken connection is an unknown outcome.
        try:
            code, reply = self._send_data(client, message)
        except (OSError, smtplib.SMTPException) as exc:
            raise OutcomeUnknown(f"connection failed during DATA: {type(exc).__name__}: {exc}") from exc
        if code != 250:
            raise self._refusal(code, reply, "DATA")
        return Submission(reply=f"{code} {_text(reply)}")

    @staticmethod
    def _send_data(client: smtplib.SMTP, message: bytes) -> tuple[int, bytes]:
        """The message after a 354, as smtplib.SMTP.data sends it (dot-stuffed, CRLF.CRLF)."""
        data = smtplib._quote_periods(message)
        if data[-2:] != smtplib.bCRLF:
            data += smtplib.bCRLF
        client.send(data + b"." + smtplib.bCRLF)
        return client.getreply()

    @staticmethod
    def _refusal(code: int, reply: bytes | str, stage: str) -> TransportError:
        text = f"{code} {_text(reply)} (at {stage})"
        if 400 <= code < 500:
            return TransientError(text, code=code)
        return PermanentError(text, code=code)


