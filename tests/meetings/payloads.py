"""Booking events shaped as Calendly and Cal.com document and send them, signed as they sign them.

Calendly: the webhook payload of `invitee.created` / `invitee.canceled` (developer.calendly.com, "Webhook
payloads"; the invitee resource with its `scheduled_event` and `tracking`), signed with
`Calendly-Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. Cal.com: `{"triggerEvent",
"createdAt", "payload"}` as its sendPayload writes it (calcom/cal.com packages/features/webhooks/lib/sendPayload.ts),
signed with `X-Cal-Signature-256: <hex HMAC-SHA256 of the body>`. The signing here is written from those
descriptions, independently of meetings.providers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
import uuid

CALENDLY_KEY = "calendly-signing-key-5c1d0e3a9b7f4e21a8d6"  # noqa: S105 - a test's
CALCOM_SECRET = "calcom-webhook-secret-7f3b2a91c4d8e6f0"  # noqa: S105 - a test's


def calendly_event(event: str, email: str, *, token: str | None = None, invitee: str = "", rescheduled=False,
                   start: str = "2026-12-10T15:00:00.000000Z") -> dict:
    invitee = invitee or uuid.uuid4().hex[:16].upper()
    scheduled = "GBGBDCAADAEDCRZ2"
    return {
        "created_at": "2026-12-06T10:15:02.000000Z",
        "created_by": "https://api.calendly.com/users/AAAAAAAAAAAAAAAA",
        "event": event,
        "payload": {
            "cancel_url": f"https://calendly.com/cancellations/{invitee}",
            "created_at": "2026-12-06T10:15:01.818274Z",
            "email": email,
            "event": f"https://api.calendly.com/scheduled_events/{scheduled}",
            "first_name": None,
            "last_name": None,
            "name": "Ada Lovelace",
            "new_invitee": None,
            "no_show": None,
            "old_invitee": None,
            "payment": None,
            "questions_and_answers": [{"answer": "Pricing", "position": 0,
                                       "question": "What would you like to discuss?"}],
            "reconfirmation": None,
            "reschedule_url": f"https://calendly.com/reschedulings/{invitee}",
            "rescheduled": rescheduled,
            "routing_form_submission": None,
            "scheduled_event": {
                "created_at": "2026-12-06T10:15:01.792692Z",
                "end_time": "2026-12-10T15:30:00.000000Z",
                "event_guests": [],
                "event_memberships": [{"user": "https://api.calendly.com/users/AAAAAAAAAAAAAAAA",
                                       "user_email": "sam@outreach.test"}],
                "event_type": "https://api.calendly.com/event_types/GFH3KADHMS65FY6I",
                "invitees_counter": {"active": 1, "limit": 1, "total": 1},
                "location": {"join_url": "https://meet.google.com/abc-defg-hij", "status": "pushed",
                             "type": "google_conference"},
                "name": "30 Minute Meeting",
                "start_time": start,
                "status": "active" if event == "invitee.created" else "canceled",
                "updated_at": "2026-12-06T10:15:02.221345Z",
                "uri": f"https://api.calendly.com/scheduled_events/{scheduled}",
            },
            "status": "active" if event == "invitee.created" else "canceled",
            "text_reminder_number": None,
            "timezone": "Europe/London",
            "tracking": {"utm_campaign": None, "utm_source": None, "utm_medium": None, "utm_content": token,
                         "utm_term": None, "salesforce_uuid": None},
            "updated_at": "2026-12-06T10:15:02.221345Z",
            "uri": f"https://api.calendly.com/scheduled_events/{scheduled}/invitees/{invitee}",
        },
    }


def calcom_event(trigger: str, email: str, *, token: str | None = None, uid: str = "",
                 start: str = "2026-12-10T15:00:00Z") -> dict:
    metadata = {"videoCallUrl": "https://app.cal.com/video/bFJeNb2uX8ANpT3JL5EfXw"}
    if token is not None:
        metadata["utm_content"] = token  # the link's metadata[utm_content]
    payload = {
        "type": "30min",
        "title": "30 Min Meeting between Sam and Ada",
        "description": "",
        "additionalNotes": "",
        "customInputs": {},
        "startTime": start,
        "endTime": "2026-12-10T15:30:00Z",
        "organizer": {"id": 5, "name": "Sam", "email": "sam@outreach.test", "username": "sam",
                      "timeZone": "Europe/London", "language": {"locale": "en"}, "timeFormat": "h:mma",
                      "utcOffset": 0},
        "responses": {"name": {"label": "your_name", "value": "Ada Lovelace"},
                      "email": {"label": "email_address", "value": email},
                      "notes": {"label": "additional_notes", "value": "Looking forward"},
                      "guests": {"label": "additional_guests", "value": []}},
        "userFieldsResponses": {},
        "attendees": [{"email": email, "name": "Ada Lovelace", "timeZone": "Europe/London",
                       "language": {"locale": "en"}, "utcOffset": 0}],
        "location": "integrations:daily",
        "destinationCalendar": None,
        "hideCalendarNotes": False,
        "requiresConfirmation": None,
        "eventTypeId": 7,
        "uid": uid or uuid.uuid4().hex[:22],
        "conferenceData": {},
        "appsStatus": [],
        "eventTitle": "30 Min Meeting",
        "eventDescription": "",
        "price": 0,
        "currency": "usd",
        "length": 30,
        "bookingId": 91,
        "metadata": metadata,
        "status": "CANCELLED" if trigger == "BOOKING_CANCELLED" else "ACCEPTED",
    }
    if trigger == "BOOKING_RESCHEDULED":
        payload |= {"rescheduleUid": "oldBookingUid123", "rescheduleStartTime": "2026-12-09T15:00:00Z",
                    "rescheduleEndTime": "2026-12-09T15:30:00Z", "rescheduledBy": email}
    if trigger == "BOOKING_CANCELLED":
        payload |= {"cancellationReason": "Something came up", "cancelledBy": email}
    return {"triggerEvent": trigger, "createdAt": "2026-12-06T10:15:02.538Z", "payload": payload}


def body_of(event: dict) -> bytes:
    return json.dumps(event).encode()


def calendly_headers(body: bytes, *, key: str = CALENDLY_KEY, at: int | None = None) -> dict[str, str]:
    t = str(int(time.time()) if at is None else at)
    signature = hmac.new(key.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "Calendly-Webhook-Signature": f"t={t},v1={signature}"}


def calcom_headers(body: bytes, *, secret: str = CALCOM_SECRET) -> dict[str, str]:
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-Cal-Signature-256": signature}


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """A POST with urllib, as a provider makes it: (status, the answer's text)."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the live server on loopback
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
