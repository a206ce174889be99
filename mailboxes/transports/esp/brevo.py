"""Brevo: a scheduled message is canceled by the messageId the hand-off answered with."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

from .base import CancelRequest, EspConfig, Provider


class Brevo(Provider):
    name = "brevo"
    api_url = "https://api.brevo.com/v3/"
    # "Delete scheduled emails by batchId or messageId" (developers.brevo.com/reference/delete-scheduled-email-by-id)
    # and the "Schedule emails" guide (developers.brevo.com/docs/schedule-batch-sendings): no lead time is
    # documented; a scheduled message can be deleted until it is sent, and the 204 is the confirmation.
    cancel_window = timedelta(0)
    # The same guide: up to 72 hours ahead.
    max_ahead = timedelta(hours=72)

    def schedule_id_after(self, *, message_id: str, schedule_id: str) -> str:
        return message_id  # Brevo cancels a single scheduled message by its messageId

    def cancel_request(self, config: EspConfig, schedule_id: str) -> CancelRequest:
        # DELETE /v3/smtp/email/{identifier} (messageId in angle brackets) -> 204
        return CancelRequest("DELETE", "smtp/email/" + quote(schedule_id, safe=""), (204,),
                             {"headers": {"api-key": config.api_key, "Accept": "application/json"}})
