"""ESP tracking events read one by one: anymail's conversion of each raw event, as its webhook view converts it,
with an event it cannot read kept as `Unreadable` instead of failing its whole batch.

anymail converts a whole batch before it hands on any event, so one event it cannot read (not an object, a
timestamp that is no number) would fail the batch and lose the good bounces and complaints beside it. The
webhook endpoints (`ui.tracking_webhooks`) and the background application of a stored batch
(`inbound.webhooks.webhook_batch_chunk_apply`, through `event_converter`) convert event by event with the same
mixin. Only the tracking webhooks of an ESP are read (inbound-mail webhooks never are); `inbound.checks` refuses
to start when one of them lacks a setting anymail needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anymail.urls import urlpatterns as anymail_urlpatterns
from django.urls import URLPattern

from .webhooks import Unreadable


class EventsConverted:
    """Mixed in before an anymail tracking view: each event converted on its own; one it cannot read is kept."""

    def esp_to_anymail_event(self, esp_event, *args, **kwargs):
        try:
            return super().esp_to_anymail_event(esp_event, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - anymail's conversion of one event: pure, any failure is its data
            return Unreadable(raw=esp_event, reason=f"could not be read: {type(exc).__name__}")


def tracking_patterns(esps) -> list[URLPattern]:
    """anymail's tracking URL patterns of these ESPs (Mandrill's combined URL included); no inbound ones."""
    wanted = {esp.lower() for esp in esps}
    return [p for p in anymail_urlpatterns
            if str(p.pattern).split("/", 1)[0] in wanted and "inbound" not in str(p.pattern)]


def event_converter(esp: str) -> Callable[[Any], Any]:
    """One raw event of ESP's tracking webhook converted as its view converts it, outside a request."""
    callback = tracking_patterns([esp])[0].callback
    view_class = callback.view_class
    converting = type(view_class.__name__, (EventsConverted, view_class), {"__module__": __name__})
    return converting(**callback.view_initkwargs).esp_to_anymail_event
