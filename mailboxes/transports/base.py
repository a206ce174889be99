"""What every transport shares: its outcomes, what a hand-off returns, and the capabilities it declares.

Transports sit at the network edge: config in, network I/O, values out. They know no models.

Each outcome says where the conversation stopped, because that decides what
the sender may do next:
- TransientError: refused before the server took the message (4xx, connection
  failure before DATA). Safe to retry, through the guard again.
- RecipientRefused: a 5xx at RCPT. Never sent. `hard` when the code says the
  address does not exist.
- PermanentError: a 5xx elsewhere (e.g. DATA rejected). Never sent.
- OutcomeUnknown: the connection failed after the message data was on its way
  (timeout, disconnect). It may have been accepted: never resend automatically.
- MailboxRefused: the mailbox as a whole cannot send (authentication, TLS or
  certificate, sender or relay policy). Never sent, and no other message of
  this mailbox would be either: the mailbox is blocked, the message waits.

A TransientError with `connection=True` (the server could not be reached at
all) says nothing about the message either; when it persists, the sender
treats it as the mailbox's failure too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


class TransportError(Exception):
    def __init__(self, message: str, *, code: int | None = None):
        super().__init__(message)
        self.code = code


class TransientError(TransportError):
    def __init__(self, message: str, *, code: int | None = None, connection: bool = False):
        super().__init__(message, code=code)
        self.connection = connection  # no conversation with the server took place


class PermanentError(TransportError):
    pass


class RecipientRefused(PermanentError):
    def __init__(self, message: str, *, code: int | None = None, hard: bool = False):
        super().__init__(message, code=code)
        self.hard = hard


class OutcomeUnknown(TransportError):
    pass


class MailboxRefused(TransportError):
    """Nothing this mailbox sends can leave until someone fixes it; `hint` says what to look at."""

    def __init__(self, message: str, *, code: int | None = None, hint: str = ""):
        super().__init__(message, code=code)
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} — {self.hint}" if self.hint else text


@dataclass(frozen=True)
class CheckStep:
    """One step of a connection check: what was tried, and the server's words or a hint."""

    step: str  # "connect", "EHLO", "STARTTLS", "AUTH", "MAIL FROM", ...
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class ProviderSchedule:
    """What a scheduled hand-off left at the provider."""

    schedule_id: str  # SendGrid batch_id; Brevo messageId
    send_at: datetime
    cancelable_until: datetime

    def as_fields(self) -> dict[str, Any]:
        return {"provider_schedule_id": self.schedule_id, "provider_send_at": self.send_at,
                "cancelable_until": self.cancelable_until}


@dataclass(frozen=True)
class Submission:
    reply: str  # the server's answer to DATA, e.g. "250 2.0.0 Ok: queued as 4F2"
    provider_message_id: str = ""
    provider_request_id: str = ""
    schedule: ProviderSchedule | None = None  # only for a scheduled send (supports_scheduled_send)


class Transport:
    """One message, one hand-off. Each transport declares what else the sender may ask of it."""

    # send(..., send_at=T) hands the message over now for delivery at T.
    supports_scheduled_send: bool = False
    # cancel(schedule_id=...) asks the provider to drop a scheduled send.
    supports_cancel: bool = False

    def send(self, *, sender: str, recipient: str, message: bytes) -> Submission:
        raise NotImplementedError

    def check(self, *, sender: str) -> list[CheckStep]:
        """Every step of a submission short of sending a message; stops at the first that fails."""
        raise NotImplementedError
