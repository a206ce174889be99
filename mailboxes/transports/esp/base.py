"""What every ESP shares: its config, the answer to a cancel, and `Provider`, the few things one ESP does
differently from another (the `sendgrid` and `brevo` modules subclass it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from anymail.exceptions import AnymailError
from anymail.utils import get_anymail_setting
from urllib3.exceptions import NewConnectionError


@dataclass(frozen=True)
class EspConfig:
    esp: str  # anymail's backend module name: "sendgrid", "brevo", "postmark", ...
    api_key: str = field(repr=False)  # never in a repr, log line or traceback
    api_url: str = ""  # esp_api_url(esp); "" = the default of anymail's backend
    timeout: float = 30.0


@dataclass(frozen=True)
class CancelAnswer:
    status: str  # "confirmed" | "refused" | "failed"
    detail: str


@dataclass(frozen=True)
class CancelRequest:
    """The one HTTP request that cancels a scheduled message, and the answers that mean it was canceled."""

    method: str
    path: str  # below the provider's API URL
    ok: tuple[int, ...]
    kwargs: dict[str, Any]


class Provider:
    """An ESP as anymail sends to it: no scheduled send (no cancel API of ours), its backend's own API URL.

    A subclass that schedules sets `cancel_window` (how long before the send time the provider still honours a
    cancel; `cancelable_until = send_at - cancel_window`, and a cancel answered later is never recorded as
    confirmed) and `max_ahead` (how far ahead it accepts a scheduled send), and implements the hooks below."""

    name = ""
    api_url = ""  # where its API lives ("" = anymail's default); a mailbox never chooses it
    cancel_window: timedelta | None = None
    max_ahead: timedelta | None = None

    def __init__(self, name: str = ""):
        if name:
            self.name = name

    @property
    def schedules(self) -> bool:
        return self.cancel_window is not None

    def before_scheduled_send(self, config: EspConfig) -> tuple[str, dict[str, Any]]:
        """Before a scheduled hand-off: (the id to cancel it by, if known now; anymail's `esp_extra`)."""
        return "", {}

    def schedule_id_after(self, *, message_id: str, schedule_id: str) -> str:
        """The id a scheduled message is canceled by, once the provider has answered the hand-off."""
        return schedule_id

    def cancel_request(self, config: EspConfig, schedule_id: str) -> CancelRequest | None:
        return None


def api_url_of(config: EspConfig, provider: Provider) -> str:
    return config.api_url or anymail_api_url(config.esp.lower()) or provider.api_url


def url_join(base: str, path: str) -> str:
    return urljoin(base if base.endswith("/") else base + "/", path)


def anymail_api_url(esp: str) -> str:
    """A deployment's override in its settings (ANYMAIL["<ESP>_API_URL"]), or ""."""
    return get_anymail_setting("api_url", esp_name=esp, default="") or ""


def nothing_sent(exc: BaseException | None) -> bool:
    """True when the request provably never reached the provider (refused, or a connect timeout)."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    if isinstance(exc, requests.ConnectionError) and exc.args:
        reason = getattr(exc.args[0], "reason", exc.args[0])  # MaxRetryError(reason=NewConnectionError(...))
        return isinstance(reason, NewConnectionError)
    return False


def answer_text(response: requests.Response | None) -> str:
    if response is None:
        return ""
    return " ".join(response.text.split())[:300]


def payload_ids(exc: AnymailError, schedule_id: str) -> str:
    """Ids known before the answer (SendGrid's anymail_id, a batch) so the operator can look it up."""
    parts = []
    message_ids = getattr(exc.payload, "message_ids", None) or {}
    if message_ids:
        parts.append("anymail_id " + ", ".join(sorted(set(message_ids.values()))))
    if schedule_id:
        parts.append(f"batch {schedule_id}")
    return f" (look up {'; '.join(parts)})" if parts else ""


def url_path(url: str) -> str:
    return urlsplit(url).path
