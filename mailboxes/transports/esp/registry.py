"""Which `Provider` serves an ESP name, and the tables the rest of the product reads from them."""

from __future__ import annotations

from datetime import timedelta

from .base import Provider, anymail_api_url
from .brevo import Brevo
from .sendgrid import SendGrid

PROVIDERS: dict[str, Provider] = {p.name: p for p in (SendGrid(), Brevo())}

# How long before the scheduled send time each provider still honours a cancel (the providers' modules cite
# their documentation), and how far ahead each accepts a scheduled send.
CANCEL_WINDOWS: dict[str, timedelta] = {n: p.cancel_window for n, p in PROVIDERS.items() if p.schedules}
MAX_SCHEDULE_AHEAD: dict[str, timedelta] = {n: p.max_ahead for n, p in PROVIDERS.items() if p.max_ahead}

# Where each provider's API lives. A mailbox never chooses (its API key would go wherever it pointed); only a
# deployment's settings may override one (ANYMAIL["<ESP>_API_URL"]). ESPs not listed use the default of anymail's
# backend for them, which is fixed in the same way.
API_URLS: dict[str, str] = {n: p.api_url for n, p in PROVIDERS.items() if p.api_url}


def provider(esp: str) -> Provider:
    """The provider for an anymail ESP name; a plain `Provider` (sends now, cancels nothing) when none of ours."""
    esp = esp.lower()
    return PROVIDERS.get(esp) or Provider(esp)


def esp_api_url(esp: str) -> str:
    """The API base URL for ESP: the settings' override, else the fixed table ("" = anymail's default)."""
    esp = esp.lower()
    return anymail_api_url(esp) or API_URLS.get(esp, "")


def supports_scheduled_cancel(esp: str) -> bool:
    """Only providers whose cancel we implement may be handed a message early."""
    return esp.lower() in CANCEL_WINDOWS
