"""What Calendly and Cal.com send, read: the signature checked, the event read into a `Booking`. Pure: no ORM, no
network, the clock given.

- **Calendly** signs `<t>.<raw body>` with the subscription's signing key (HMAC-SHA256, hex) and sends
  `Calendly-Webhook-Signature: t=<unix seconds>,v1=<hex>`. A `t` more than `STALE_SECONDS` from the database clock
  is refused as a possible replay. The body is `{"event": "invitee.created" | "invitee.canceled" | …,
  "created_at", "created_by", "payload": <the invitee>}`; the invitee has `uri` (one per booking person),
  `email`, `tracking.utm_content` (the booking link's `utm_content`), `scheduled_event.start_time`,
  `old_invitee` (set when it replaces a rescheduled booking) and `rescheduled` (on the cancellation a reschedule
  makes).
- **Cal.com** signs the raw body with the webhook's secret (HMAC-SHA256, hex) in `X-Cal-Signature-256` (the
  text "no-secret-provided" when the webhook has no secret). The body is `{"triggerEvent": "BOOKING_CREATED" |
  "BOOKING_RESCHEDULED" | "BOOKING_CANCELLED" | "PING" | …, "createdAt", "payload": <the booking>}`; the booking
  has `uid` (a reschedule makes a new one), `attendees[0].email` (who booked), `metadata` (the booking link's
  `metadata[...]` parameters: `utm_content`), `startTime`. Cal.com signs no time: a replay is known by its event
  id only.

The event id (`Booking.event_id`) is the event's name and the provider's id of the person's booking: Calendly's
invitee URI, Cal.com's booking uid; failing those, the body's SHA-256.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from sequences.storable import unstorable

STALE_SECONDS = 300  # a Calendly signature's time may be this far from the database clock
CALENDLY_HEADER = "Calendly-Webhook-Signature"
CALCOM_HEADER = "X-Cal-Signature-256"
CALCOM_PING = "PING"
MAX_BODY = 1_000_000  # bytes: a booking is a few kilobytes
MAX_TEXT = 500  # characters of one value kept (an address, a token, a URI)


class Refused(Exception):
    """The request is not acted on: `status` (403 a signature, 400 a body), the reason in words."""

    def __init__(self, words: str, status: int = 403):
        super().__init__(words)
        self.status = status


@dataclass(frozen=True)
class Booking:
    event_type: str  # as the provider names it
    kind: str  # meetings.models.BookingEvent.Kind's value
    event_id: str
    email: str  # the invitee's address, normalized ("" when the event names none)
    token: str  # the booking link's token, as received ("" when none)
    start_time: datetime | None
    rescheduled: bool = False  # a booking that replaces another, or a cancellation that a reschedule made

    def minimal(self) -> dict[str, Any]:
        """What is kept of the event (BookingEvent.payload): what explains its effect, nothing of the person's."""
        return {"event_type": self.event_type, "event_id": self.event_id, "email": self.email, "token": self.token,
                "start_time": self.start_time.isoformat() if self.start_time else "", "rescheduled": self.rescheduled}


def _hex_hmac(key: str, message: bytes) -> str:
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def calendly_verify(header: str, body: bytes, key: str, *, now: float) -> None:
    """Refused unless `header` signs `body` with `key` at a time within STALE_SECONDS of `now` (unix seconds)."""
    if not header:
        raise Refused(f"no {CALENDLY_HEADER} header: Calendly signs every event of a subscription made with a "
                      "signing key")
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        name, sep, value = item.strip().partition("=")
        if sep:
            parts.setdefault(name.strip(), []).append(value.strip())
    stamp, given = (parts.get("t") or [""])[0], parts.get("v1") or []
    if not stamp.isdigit() or not given:
        raise Refused(f"{CALENDLY_HEADER} is not t=<time>,v1=<signature>")
    expected = _hex_hmac(key, stamp.encode() + b"." + body)
    if not any(hmac.compare_digest(expected, v.lower()) for v in given):
        raise Refused("the signature does not match this source's signing key (or the body was changed)")
    age = now - int(stamp)
    if age > STALE_SECONDS:
        raise Refused(f"the signature's time is {int(age)} s old, more than {STALE_SECONDS // 60} minutes: refused "
                      "as a possible replay")
    if age < -STALE_SECONDS:
        raise Refused(f"the signature's time is {int(-age)} s ahead of this server's clock, more than "
                      f"{STALE_SECONDS // 60} minutes: refused")


def calcom_verify(header: str, body: bytes, secret: str) -> None:
    """Refused unless `header` is the hex HMAC-SHA256 of `body` with `secret`."""
    if not header or header == "no-secret-provided":
        raise Refused(f"no {CALCOM_HEADER} signature: give the Cal.com webhook this source's secret")
    if not hmac.compare_digest(_hex_hmac(secret, body), header.strip().lower()):
        raise Refused("the signature does not match this source's secret (or the body was changed)")


def body_json(body: bytes) -> dict[str, Any]:
    """The event as JSON; Refused (400) for anything else."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise Refused("the body is not JSON", status=400) from None
    if not isinstance(data, dict):
        raise Refused("the body is not a JSON object (an event)", status=400)
    return data


def _text(value: Any) -> str:
    """A string of the event, as a row can hold it: "" for anything else, or for text with a NUL or a lone
    surrogate (signed by the provider or not, no column takes it); at most MAX_TEXT characters."""
    if not isinstance(value, str) or unstorable(value):
        return ""
    return value.strip()[:MAX_TEXT]


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _when(value: Any) -> datetime | None:
    try:
        return parse_datetime(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _event_id(name: str, key: str, body: bytes) -> str:
    return f"{name}:{key}"[:300] if key else f"{name}:sha256:{hashlib.sha256(body).hexdigest()}"[:300]


CALENDLY_KINDS = {"invitee.created": "booked", "invitee.canceled": "canceled"}
CALCOM_KINDS = {"BOOKING_CREATED": "booked", "BOOKING_RESCHEDULED": "rescheduled", "BOOKING_CANCELLED": "canceled"}


def calendly_read(data: dict[str, Any], body: bytes) -> Booking:
    name = _text(data.get("event"))[:60]
    if not name:
        raise Refused("no `event`: not a Calendly webhook event", status=400)
    invitee = _table(data.get("payload"))
    kind = CALENDLY_KINDS.get(name, "other")
    rescheduled = bool(invitee.get("old_invitee")) if kind == "booked" else invitee.get("rescheduled") is True
    return Booking(event_type=name, kind=kind, event_id=_event_id(name, _text(invitee.get("uri")), body),
                   email=_text(invitee.get("email")).lower(),
                   token=_text(_table(invitee.get("tracking")).get("utm_content")),
                   start_time=_when(_table(invitee.get("scheduled_event")).get("start_time")),
                   rescheduled=rescheduled)


def calcom_read(data: dict[str, Any], body: bytes) -> Booking:
    name = _text(data.get("triggerEvent"))[:60]
    if not name:
        raise Refused("no `triggerEvent`: not a Cal.com webhook event", status=400)
    booking = _table(data.get("payload"))
    attendees = booking.get("attendees")
    first = _table(attendees[0]) if isinstance(attendees, list) and attendees else {}
    email = _text(first.get("email")) or _text(_table(_table(booking.get("responses")).get("email")).get("value"))
    token = (_text(_table(booking.get("metadata")).get("utm_content"))
             or _text(_table(booking.get("tracking")).get("utm_content")))
    key = _text(booking.get("uid")) or (str(booking["bookingId"]) if isinstance(booking.get("bookingId"), int) else "")
    kind = CALCOM_KINDS.get(name, "other")
    return Booking(event_type=name, kind=kind, event_id=_event_id(name, key, body), email=email.lower(), token=token,
                   start_time=_when(booking.get("startTime")), rescheduled=kind == "rescheduled")
