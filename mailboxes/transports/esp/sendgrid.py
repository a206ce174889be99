"""SendGrid: a scheduled message is canceled through the batch it was sent in (anymail has no API for batches)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import requests

from ..base import PermanentError, TransientError
from .base import CancelRequest, EspConfig, Provider, answer_text, api_url_of, url_join


class SendGrid(Provider):
    name = "sendgrid"
    api_url = "https://api.sendgrid.com/v3/"
    # "Cancel Scheduled Sends" API reference (twilio.com/docs/sendgrid/api-reference/cancel-scheduled-sends):
    # "You can't pause or cancel a batch later than 10 minutes before the scheduled send_at time"; the older
    # endpoint page adds that cancels made later "are not guaranteed to be cancelled" (the API may still answer
    # 201), so the 201 alone is not trusted past this window.
    cancel_window = timedelta(minutes=10)
    # "Scheduling Parameters": up to 72 hours ahead.
    max_ahead = timedelta(hours=72)

    def before_scheduled_send(self, config: EspConfig) -> tuple[str, dict[str, Any]]:
        """Only a batch can be canceled: one per message, created before the send."""
        batch_id = self._batch_create(config)
        return batch_id, {"batch_id": batch_id}

    def cancel_request(self, config: EspConfig, schedule_id: str) -> CancelRequest:
        # POST /v3/user/scheduled_sends {"batch_id", "status": "cancel"} -> 201
        return CancelRequest("POST", "user/scheduled_sends", (201,),
                             {"headers": _headers(config), "json": {"batch_id": schedule_id, "status": "cancel"}})

    def _batch_create(self, config: EspConfig) -> str:
        """POST /v3/mail/batch -> batch_id. Sends no mail: any failure here is safe to retry."""
        try:
            response = requests.post(url_join(api_url_of(config, self), "mail/batch"), headers=_headers(config),
                                     json={}, timeout=config.timeout)
        except requests.RequestException as exc:
            raise TransientError(f"sendgrid: creating a batch failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientError(f"sendgrid: creating a batch: {response.status_code} {answer_text(response)}",
                                 code=response.status_code)
        if response.status_code >= 300:
            raise PermanentError(f"sendgrid: creating a batch: {response.status_code} {answer_text(response)}",
                                 code=response.status_code)
        try:
            return str(response.json()["batch_id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise TransientError(f"sendgrid: batch answer without batch_id: {answer_text(response)}") from exc


def _headers(config: EspConfig) -> dict[str, str]:
    return {"Authorization": f"Bearer {config.api_key}", "Content-Type": "application/json",
            "Accept": "application/json"}
