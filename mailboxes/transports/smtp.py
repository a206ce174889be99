"""SMTP submission with smtplib: one connection per message, reporting where a failure happened."""

from __future__ import annotations

import re
import smtplib
import ssl
from dataclasses import dataclass, field

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
    password: str = field(default="", repr=False)  # never in a repr, log line or traceback
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
            code, reply = client.mail(sender)
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

        # From here on the server may have the message: a broken connection is an unknown outcome.
        try:
            code, reply = client.data(message)
        except smtplib.SMTPDataError as exc:
            raise self._refusal(exc.smtp_code, exc.smtp_error, "DATA") from exc
        except (OSError, smtplib.SMTPException) as exc:
            raise OutcomeUnknown(f"connection failed during DATA: {type(exc).__name__}: {exc}") from exc
        if code != 250:
            raise self._refusal(code, reply, "DATA")
        return Submission(reply=f"{code} {_text(reply)}")

    @staticmethod
    def _refusal(code: int, reply: bytes | str, stage: str) -> TransportError:
        text = f"{code} {_text(reply)} (at {stage})"
        if 400 <= code < 500:
            return TransientError(text, code=code)
        return PermanentError(text, code=code)


