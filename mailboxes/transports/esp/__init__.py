"""ESP transports through django-anymail, and the scheduled-send cancel APIs anymail does not cover.

One module per provider on a shared base, as django-anymail has one backend per ESP:

| module        | what it holds                                                                      |
|---------------|------------------------------------------------------------------------------------|
| `base`        | `Provider` (what an ESP may differ in), the config, the cancel's answer, helpers   |
| `sendgrid`    | SendGrid: its API's address, a batch per scheduled message, the batch's cancel     |
| `brevo`       | Brevo: its API's address, the cancel of one scheduled message by its messageId     |
| `registry`    | which provider class serves an ESP name; every other anymail ESP is a plain `Provider` |
| `transport`   | `EspTransport`: the hand-off through anymail's backend, the cancel, the check      |

Adding a provider's scheduled send: a module with a `Provider` subclass (its cancel window and how far ahead
it schedules, with the provider's documentation cited), named in `registry.PROVIDERS`.

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
(T minus the provider's documented lead time); `cancel()` asks.
"""

from __future__ import annotations

from .base import CancelAnswer, EspConfig
from .registry import API_URLS, CANCEL_WINDOWS, MAX_SCHEDULE_AHEAD, esp_api_url, supports_scheduled_cancel
from .transport import EspTransport

__all__ = [
    "API_URLS",
    "CANCEL_WINDOWS",
    "MAX_SCHEDULE_AHEAD",
    "CancelAnswer",
    "EspConfig",
    "EspTransport",
    "esp_api_url",
    "supports_scheduled_cancel",
]
