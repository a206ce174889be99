"""ESP transports through django-anymail, and the scheduled-send cancel APIs anymail does not cover.

Same contract and error classes as `mailboxes.transports.base` (config in, network
I/O, values out; no models). Where the conversation stopped decides what the
sender may do next:
- TransientError: the provider did not take the message (429, 500/502/503,
  connection refused or a connect timeout before the request left). Safe to
  retry through the guard.
- PermanentError: a 4xx on the send call (bad key, bad payload). Never sent.
- OutcomeUnknown: the request left and no usable answer came back (read
  timeout, dropped connection, 504 from a gateway, a 2xx we cannot parse).
  The provider may have the message: never resent automatically.

Scheduled send: `send(..., send_at=T)` hands the message over now for
delivery at T. The provider may still cancel it until `cancelable_until`
(T minus the provider's documented lead time, table below); `cancel()` asks.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email import message_from_bytes, policy
from email.utils import formataddr, parseaddr
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import requests
from anymail.exceptions import (
    AnymailError,
    AnymailNotSupportedWarning,
    AnymailRecipientsRefused,
    AnymailRequestsAPIError,
)
from anymail.message import AnymailMessage
from anymail.utils import get_anymail_setting
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from urllib3.exceptions import NewConnectionError

from .base import (
    CheckStep,
    MailboxRefused,
    OutcomeUnknown,
    PermanentError,
    ProviderSchedule,
    RecipientRefused,
    Submission,
    TransientError,
    Transport,
)

# How long before the scheduled send time each provider still honours a
# cancel. cancelable_until = send_at - window. A cancel answered after that
# moment is never recorded as confirmed.
CANCEL_WINDOWS: dict[str, timedelta] = {
    # SendGrid, "Cancel Scheduled Sends" API reference
    # (twilio.com/docs/sendgrid/api-reference/cancel-scheduled-sends): "You can't pause or
    # cancel a batch later than 10 minutes before the scheduled send_at time"; the older
    # endpoint page adds that cancels made later "are not guaranteed to be cancelled" (the
    # API may still answer 201), so the 201 alone is not trusted past this window.
    "sendgrid": timedelta(minutes=10),
    # Brevo, "Delete scheduled emails by batchId or messageId"
    # (developers.brevo.com/reference/delete-scheduled-email-by-id) and the "Schedule emails"
    # guide (developers.brevo.com/docs/schedule-batch-sendings): no lead time is documented;
    # a scheduled message can be deleted until it is sent, and the 204 is the confirmation.
    "brevo": timedelta(0),
}

# How far ahead each provider accepts a scheduled send (same two pages:
# SendGrid "Scheduling Parameters": up to 72 hours; Brevo guide: up to 72 hours).
MAX_SCHEDULE_AHEAD: dict[str, timedelta] = {
    "sendgrid": timedelta(hours=72),
    "brevo": timedelta(hours=72),
}

# Headers of ours that must reach the recipient unchanged (threading, one-click unsubscribe).
PASSED_HEADERS = ("Message-ID", "In-Reply-To", "References", "List-Unsubscribe", "List-Unsubscribe-Post",
                  "X-Outreach-Job")
# Response headers that identify the hand-off request in the provider's logs.
# SendGrid documents X-Message-Id on the 202 of /v3/mail/send; others are tried in order.
REQUEST_ID_HEADERS = ("X-Message-Id", "X-Request-Id", "Request-Id", "CF-Ray")


# Where each provider's API lives. A mailbox never chooses (its API key would go wherever it
# pointed); only a deployment's settings may override one (ANYMAIL["<ESP>_API_URL"]). ESPs not
# listed use the default of anymail's backend for them, which is fixed in the same way.
API_URLS: dict[str, str] = {
    "sendgrid": "https://api.sendgrid.com/v3/",
    "brevo": "https://api.brevo.com/v3/",
}


def esp_api_url(esp: str) -> str:
    """The API base URL for ESP: the settings' override, else the fixed table ("" = anymail's default)."""
    esp = esp.lower()
    return _anymail_api_url(esp) or API_URLS.get(esp, "")


def supports_scheduled_cancel(esp: str) -> bool:
    """Only providers whose cancel we implement (the CANCEL_WINDOWS table) may be handed a message early."""
    return esp.lower() in CANCEL_WINDOWS


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


class EspTransport(Transport):
    """Hands one prepared MIME message to an ESP through anymail's backend for it.

    Its capabilities depend on the ESP: scheduled send and cancel only where
    we implement the provider's cancel API (supports_scheduled_cancel).
    """

    def __init__(self, config: EspConfig):
        self.config = config
        self.esp = config.esp.lower()
        self.supports_scheduled_send = self.supports_cancel = supports_scheduled_cancel(self.esp)

    # --- sending -------------------------------------------------------------------

    def send(self, *, sender: str, recipient: str, message: bytes, send_at: datetime | None = None) -> Submission:
        schedule_id = ""
        esp_extra: dict[str, Any] = {}
        if send_at is not None:
            if not self.supports_scheduled_send:
                raise PermanentError(f"{self.esp}: scheduled send without a cancel API is not allowed")
            if self.esp == "sendgrid":
                # Only a batch can be canceled: create one per message before the send.
                schedule_id = self._sendgrid_batch_create()
                esp_extra["batch_id"] = schedule_id

        email = self._anymail_message(sender=sender, recipient=recipient, message=message)
        if send_at is not None:
            email.send_at = send_at
        if esp_extra:
            email.esp_extra = esp_extra
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AnymailNotSupportedWarning)  # SendGrid: community support only
                backend = import_string(f"anymail.backends.{self.esp}.EmailBackend")(**self._backend_kwargs())
            backend.send_messages([email])
        except AnymailRecipientsRefused as exc:
            raise RecipientRefused(f"{self.esp} refused the recipient: {exc}") from exc
        except AnymailRequestsAPIError as exc:
            raise self._send_error(exc, schedule_id) from exc
        except (ImportError, ImproperlyConfigured, AnymailError) as exc:
            # Configuration or payload problems, raised before any request left.
            raise PermanentError(f"{self.esp}: {type(exc).__name__}: {exc}") from exc

        status = email.anymail_status
        response = status.esp_response
        message_id = status.message_id if isinstance(status.message_id, str) else ""
        request_id = _request_id(response)
        if self.esp == "brevo" and send_at is not None:
            schedule_id = message_id  # Brevo cancels a single scheduled message by its messageId
        schedule = None
        if send_at is not None:
            if not schedule_id:
                # Scheduled, but with nothing to cancel it by: say so rather than pretend.
                raise OutcomeUnknown(f"{self.esp} accepted a scheduled send but returned no id to cancel it by")
            schedule = ProviderSchedule(schedule_id=schedule_id, send_at=send_at,
                                        cancelable_until=send_at - CANCEL_WINDOWS[self.esp])
        code = response.status_code if response is not None else 0
        reply = f"{code} {self.esp} accepted message {message_id or '?'}"
        if schedule:
            reply += f" for delivery at {send_at.isoformat()}"
        return Submission(reply=reply, provider_message_id=message_id, provider_request_id=request_id,
                             schedule=schedule)

    def _backend_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"api_key": self.config.api_key, "timeout": self.config.timeout,
                                  "fail_silently": False}
        if self.config.api_url:
            kwargs["api_url"] = self.config.api_url
        return kwargs

    @staticmethod
    def _anymail_message(*, sender: str, recipient: str, message: bytes) -> AnymailMessage:
        """The prepared MIME message as an anymail message: same headers, same body."""
        parsed = message_from_bytes(message, policy=policy.default)
        name, _ = parseaddr(str(parsed.get("To", "")))
        text = parsed.get_body(preferencelist=("plain",))
        html = parsed.get_body(preferencelist=("html",))
        headers = {h: str(parsed[h]) for h in PASSED_HEADERS if parsed[h] is not None}
        email = AnymailMessage(
            subject=str(parsed.get("Subject", "")),
            body=text.get_content() if text is not None else "",
            from_email=str(parsed.get("From", sender)),
            to=[formataddr((name, recipient)) if name else recipient],
            headers=headers,
        )
        if html is not None:
            email.attach_alternative(html.get_content(), "text/html")
        return email

    def _send_error(self, exc: AnymailRequestsAPIError, schedule_id: str) -> Exception:
        ids = _payload_ids(exc, schedule_id)
        code = exc.status_code
        if code is None:
            cause = exc.__cause__
            if _nothing_sent(cause):
                return TransientError(f"{self.esp}: could not connect: {cause}")
            return OutcomeUnknown(f"{self.esp}: no answer to the hand-off ({type(cause).__name__}: {cause}); "
                                  f"the provider may have the message{ids}")
        if 200 <= code < 300:
            return OutcomeUnknown(f"{self.esp}: answered {code} but the answer could not be read{ids}")
        text = _answer_text(exc.response)
        if code == 504:
            # A gateway gave up waiting for the provider, which may have taken the message.
            return OutcomeUnknown(f"{self.esp}: {code} {text}{ids}", code=code)
        if code == 429 or code >= 500:
            return TransientError(f"{self.esp}: {code} {text}", code=code)
        if code in (401, 403):
            # The key, not the message: nothing of this mailbox would be accepted.
            return MailboxRefused(f"{self.esp}: {code} {text}", code=code, hint="check the mailbox's API key")
        return PermanentError(f"{self.esp}: {code} {text}", code=code)

    # --- SendGrid batches (anymail has no API for them) -------------------------------

    def _sendgrid_batch_create(self) -> str:
        """POST /v3/mail/batch -> batch_id. Sends no mail: any failure here is safe to retry."""
        try:
            response = requests.post(self._url("mail/batch"), headers=self._sendgrid_headers(), json={},
                                     timeout=self.config.timeout)
        except requests.RequestException as exc:
            raise TransientError(f"sendgrid: creating a batch failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientError(f"sendgrid: creating a batch: {response.status_code} {_answer_text(response)}",
                                 code=response.status_code)
        if response.status_code >= 300:
            raise PermanentError(f"sendgrid: creating a batch: {response.status_code} {_answer_text(response)}",
                                 code=response.status_code)
        try:
            return str(response.json()["batch_id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise TransientError(f"sendgrid: batch answer without batch_id: {_answer_text(response)}") from exc

    def _sendgrid_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config.api_key}", "Content-Type": "application/json",
                "Accept": "application/json"}

    def _url(self, path: str) -> str:
        base = self.config.api_url or esp_api_url(self.esp)
        return urljoin(base if base.endswith("/") else base + "/", path)

    # --- cancel ----------------------------------------------------------------------

    def check(self, *, sender: str) -> list[CheckStep]:
        """No provider API here checks a key without sending: the next message is the check."""
        if not self.config.api_key:
            return [CheckStep("API key", False, "no API key: the mailbox's API key variable is not set")]
        return [CheckStep("API key", True, f"set; {self.esp} confirms it with the next message")]

    def cancel(self, *, schedule_id: str) -> CancelAnswer:
        """Ask the provider to cancel a scheduled send. Only a documented success is `confirmed`."""
        if self.esp == "sendgrid":
            # POST /v3/user/scheduled_sends {"batch_id", "status": "cancel"} -> 201
            method, url, ok = "POST", self._url("user/scheduled_sends"), (201,)
            kwargs: dict[str, Any] = {"headers": self._sendgrid_headers(),
                                      "json": {"batch_id": schedule_id, "status": "cancel"}}
        elif self.esp == "brevo":
            # DELETE /v3/smtp/email/{identifier} (messageId in angle brackets) -> 204
            method, url, ok = "DELETE", self._url("smtp/email/" + quote(schedule_id, safe="")), (204,)
            kwargs = {"headers": {"api-key": self.config.api_key, "Accept": "application/json"}}
        else:  # not self.supports_cancel
            return CancelAnswer("failed", f"{self.esp}: no cancel API implemented")
        try:
            response = requests.request(method, url, timeout=self.config.timeout, **kwargs)
        except requests.RequestException as exc:
            if _nothing_sent(exc):
                return CancelAnswer("failed", f"{self.esp}: could not connect: {exc}")
            return CancelAnswer("failed", f"{self.esp}: no answer to the cancel ({type(exc).__name__}); "
                                          "the provider may or may not have canceled")
        if response.status_code in ok:
            return CancelAnswer("confirmed", f"{self.esp}: {response.status_code} {method} {_path(url)}")
        return CancelAnswer("failed", f"{self.esp}: {response.status_code} {_answer_text(response)}")


# --- helpers ------------------------------------------------------------------------------


def _nothing_sent(exc: BaseException | None) -> bool:
    """True when the request provably never reached the provider (refused, or a connect timeout)."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    if isinstance(exc, requests.ConnectionError) and exc.args:
        reason = getattr(exc.args[0], "reason", exc.args[0])  # MaxRetryError(reason=NewConnectionError(...))
        return isinstance(reason, NewConnectionError)
    return False


def _request_id(response: requests.Response | None) -> str:
    if response is None:
        return ""
    for name in REQUEST_ID_HEADERS:
        if response.headers.get(name):
            return response.headers[name]
    return ""


def _payload_ids(exc: AnymailError, schedule_id: str) -> str:
    """Ids known before the answer (SendGrid's anymail_id, a batch) so the operator can look it up."""
    parts = []
    message_ids = getattr(exc.payload, "message_ids", None) or {}
    if message_ids:
        parts.append("anymail_id " + ", ".join(sorted(set(message_ids.values()))))
    if schedule_id:
        parts.append(f"batch {schedule_id}")
    return f" (look up {'; '.join(parts)})" if parts else ""


def _answer_text(response: requests.Response | None) -> str:
    if response is None:
        return ""
    return " ".join(response.text.split())[:300]


def _path(url: str) -> str:
    return urlsplit(url).path


def _anymail_api_url(esp: str) -> str:
    return get_anymail_setting("api_url", esp_name=esp, default="") or ""

