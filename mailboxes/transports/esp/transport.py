"""`EspTransport`: one prepared MIME message handed to an ESP through anymail's backend for it, and the cancel of
a scheduled one; what differs between ESPs is asked of their `Provider` (`registry.provider`)."""

from __future__ import annotations

import warnings
from datetime import datetime
from email import message_from_bytes, policy
from email.utils import formataddr, parseaddr
from typing import Any

import requests
from anymail.exceptions import (
    AnymailError,
    AnymailNotSupportedWarning,
    AnymailRecipientsRefused,
    AnymailRequestsAPIError,
)
from anymail.message import AnymailMessage
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ..base import (
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
from .base import CancelAnswer, EspConfig, answer_text, api_url_of, nothing_sent, payload_ids, url_join, url_path
from .registry import provider

# Headers of ours that must reach the recipient unchanged (threading, one-click unsubscribe).
PASSED_HEADERS = ("Message-ID", "In-Reply-To", "References", "List-Unsubscribe", "List-Unsubscribe-Post",
                  "X-Outreach-Job")
# Response headers that identify the hand-off request in the provider's logs.
# SendGrid documents X-Message-Id on the 202 of /v3/mail/send; others are tried in order.
REQUEST_ID_HEADERS = ("X-Message-Id", "X-Request-Id", "Request-Id", "CF-Ray")


class EspTransport(Transport):
    """Hands one prepared MIME message to an ESP through anymail's backend for it.

    Its capabilities depend on the ESP: scheduled send and cancel only where
    we implement the provider's cancel API (its `Provider` has a cancel window).
    """

    def __init__(self, config: EspConfig):
        self.config = config
        self.esp = config.esp.lower()
        self.provider = provider(self.esp)
        self.supports_scheduled_send = self.supports_cancel = self.provider.schedules

    # --- sending -------------------------------------------------------------------

    def send(self, *, sender: str, recipient: str, message: bytes, send_at: datetime | None = None) -> Submission:
        schedule_id = ""
        esp_extra: dict[str, Any] = {}
        if send_at is not None:
            if not self.supports_scheduled_send:
                raise PermanentError(f"{self.esp}: scheduled send without a cancel API is not allowed")
            schedule_id, esp_extra = self.provider.before_scheduled_send(self.config)

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
        schedule = None
        if send_at is not None:
            schedule_id = self.provider.schedule_id_after(message_id=message_id, schedule_id=schedule_id)
            if not schedule_id:
                # Scheduled, but with nothing to cancel it by: say so rather than pretend.
                raise OutcomeUnknown(f"{self.esp} accepted a scheduled send but returned no id to cancel it by")
            schedule = ProviderSchedule(schedule_id=schedule_id, send_at=send_at,
                                        cancelable_until=send_at - self.provider.cancel_window)
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
        ids = payload_ids(exc, schedule_id)
        code = exc.status_code
        if code is None:
            cause = exc.__cause__
            if nothing_sent(cause):
                return TransientError(f"{self.esp}: could not connect: {cause}")
            return OutcomeUnknown(f"{self.esp}: no answer to the hand-off ({type(cause).__name__}: {cause}); "
                                  f"the provider may have the message{ids}")
        if 200 <= code < 300:
            return OutcomeUnknown(f"{self.esp}: answered {code} but the answer could not be read{ids}")
        text = answer_text(exc.response)
        if code == 504:
            # A gateway gave up waiting for the provider, which may have taken the message.
            return OutcomeUnknown(f"{self.esp}: {code} {text}{ids}", code=code)
        if code == 429 or code >= 500:
            return TransientError(f"{self.esp}: {code} {text}", code=code)
        if code in (401, 403):
            # The key, not the message: nothing of this mailbox would be accepted.
            return MailboxRefused(f"{self.esp}: {code} {text}", code=code, hint="check the mailbox's API key")
        return PermanentError(f"{self.esp}: {code} {text}", code=code)

    # --- check and cancel --------------------------------------------------------------

    def check(self, *, sender: str) -> list[CheckStep]:
        """No provider API here checks a key without sending: the next message is the check."""
        if not self.config.api_key:
            return [CheckStep("API key", False, "no API key: the mailbox's API key variable is not set")]
        return [CheckStep("API key", True, f"set; {self.esp} confirms it with the next message")]

    def cancel(self, *, schedule_id: str) -> CancelAnswer:
        """Ask the provider to cancel a scheduled send. Only a documented success is `confirmed`."""
        request = self.provider.cancel_request(self.config, schedule_id)
        if request is None:  # not self.supports_cancel
            return CancelAnswer("failed", f"{self.esp}: no cancel API implemented")
        url = url_join(api_url_of(self.config, self.provider), request.path)
        try:
            response = requests.request(request.method, url, timeout=self.config.timeout, **request.kwargs)
        except requests.RequestException as exc:
            if nothing_sent(exc):
                return CancelAnswer("failed", f"{self.esp}: could not connect: {exc}")
            return CancelAnswer("failed", f"{self.esp}: no answer to the cancel ({type(exc).__name__}); "
                                          "the provider may or may not have canceled")
        if response.status_code in request.ok:
            return CancelAnswer("confirmed", f"{self.esp}: {response.status_code} {request.method} {url_path(url)}")
        return CancelAnswer("failed", f"{self.esp}: {response.status_code} {answer_text(response)}")


def _request_id(response: requests.Response | None) -> str:
    if response is None:
        return ""
    for name in REQUEST_ID_HEADERS:
        if response.headers.get(name):
            return response.headers[name]
    return ""
