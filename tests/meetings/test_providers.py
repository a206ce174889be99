"""The signatures and payloads of Calendly and Cal.com, read by meetings.providers (pure: no database)."""

from __future__ import annotations

import time

import pytest

from meetings.providers import (
    CALCOM_HEADER,
    CALENDLY_HEADER,
    STALE_SECONDS,
    Refused,
    body_json,
    calcom_read,
    calcom_verify,
    calendly_read,
    calendly_verify,
)
from tests.meetings.payloads import (
    CALCOM_SECRET,
    CALENDLY_KEY,
    body_of,
    calcom_event,
    calcom_headers,
    calendly_event,
    calendly_headers,
)

pytestmark = pytest.mark.one_database("pure parsing and signatures")


def test_a_calendly_signature_checks_out_only_with_its_key_its_body_and_a_fresh_time():
    body = body_of(calendly_event("invitee.created", "ada@acme.test", token="7:abc"))
    now = time.time()
    header = calendly_headers(body)[CALENDLY_HEADER]
    calendly_verify(header, body, CALENDLY_KEY, now=now)  # no exception: accepted

    refusals = {
        "wrong key": (calendly_headers(body, key="another-key-0123456789")[CALENDLY_HEADER], body, now),
        "changed body": (header, body.replace(b"ada@", b"eve@"), now),
        "no header": ("", body, now),
        "no v1": (header.split(",")[0], body, now),
        "stale": (calendly_headers(body, at=int(now) - STALE_SECONDS - 1)[CALENDLY_HEADER], body, now),
        "ahead": (calendly_headers(body, at=int(now) + STALE_SECONDS + 60)[CALENDLY_HEADER], body, now),
    }
    words = {}
    for name, (h, b, at) in refusals.items():
        with pytest.raises(Refused) as refused:
            calendly_verify(h, b, CALENDLY_KEY, now=at)
        assert refused.value.status == 403
        words[name] = str(refused.value)
    assert "does not match" in words["wrong key"] and "does not match" in words["changed body"]
    assert "more than 5 minutes" in words["stale"] and "replay" in words["stale"]
    assert "ahead" in words["ahead"]
    # Four minutes old is still fresh (a slow delivery, not a replay).
    calendly_verify(calendly_headers(body, at=int(now) - 240)[CALENDLY_HEADER], body, CALENDLY_KEY, now=now)


def test_a_calcom_signature_is_the_hex_hmac_of_the_body():
    body = body_of(calcom_event("BOOKING_CREATED", "ada@acme.test"))
    calcom_verify(calcom_headers(body)[CALCOM_HEADER], body, CALCOM_SECRET)
    for header, b in ((calcom_headers(body, secret="not-the-secret-000")[CALCOM_HEADER], body),
                      (calcom_headers(body)[CALCOM_HEADER], body + b" "), ("no-secret-provided", body), ("", body)):
        with pytest.raises(Refused):
            calcom_verify(header, b, CALCOM_SECRET)


def test_calendly_events_are_read_as_documented():
    created = calendly_event("invitee.created", "Ada@Acme.test", token="12:sig", invitee="AHT4VZ5PQYFOSTFB")
    booking = calendly_read(created, body_of(created))
    assert booking.kind == "booked" and booking.event_type == "invitee.created"
    assert booking.event_id == ("invitee.created:https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/"
                                "invitees/AHT4VZ5PQYFOSTFB")
    assert (booking.email, booking.token, booking.rescheduled) == ("ada@acme.test", "12:sig", False)
    assert booking.start_time.isoformat() == "2026-12-10T15:00:00+00:00"
    # What is kept: ids, address, token, time; never the name or the answers to the booking questions.
    kept = booking.minimal()
    assert "Ada Lovelace" not in str(kept) and "Pricing" not in str(kept)

    canceled = calendly_event("invitee.canceled", "ada@acme.test", invitee="AHT4VZ5PQYFOSTFB", rescheduled=True)
    booking = calendly_read(canceled, body_of(canceled))
    assert (booking.kind, booking.rescheduled) == ("canceled", True)
    assert booking.event_id.startswith("invitee.canceled:")  # the same invitee: another event
    other = calendly_event("invitee_no_show.created", "ada@acme.test")
    assert calendly_read(other, body_of(other)).kind == "other"


def test_calcom_events_are_read_as_its_send_payload_writes_them():
    created = calcom_event("BOOKING_CREATED", "Ada@Acme.test", token="12:sig", uid="bFJeNb2uX8ANpT3JL5EfXw")
    booking = calcom_read(created, body_of(created))
    assert (booking.kind, booking.event_id) == ("booked", "BOOKING_CREATED:bFJeNb2uX8ANpT3JL5EfXw")
    assert (booking.email, booking.token) == ("ada@acme.test", "12:sig")
    assert booking.start_time.isoformat() == "2026-12-10T15:00:00+00:00"
    moved = calcom_event("BOOKING_RESCHEDULED", "ada@acme.test", uid="newUid")
    assert (calcom_read(moved, body_of(moved)).kind, calcom_read(moved, body_of(moved)).rescheduled) == (
        "rescheduled", True)
    canceled = calcom_event("BOOKING_CANCELLED", "ada@acme.test", uid="bFJeNb2uX8ANpT3JL5EfXw")
    assert calcom_read(canceled, body_of(canceled)).kind == "canceled"
    assert calcom_read(canceled, body_of(canceled)).token == ""


def test_a_body_that_is_no_event_is_refused_in_words():
    for body in (b"not json", b"[1, 2]", b"\xff\xfe"):
        with pytest.raises(Refused) as refused:
            body_json(body)
        assert refused.value.status == 400
    with pytest.raises(Refused, match="not a Calendly webhook event"):
        calendly_read({"payload": {}}, b"{}")
    with pytest.raises(Refused, match="not a Cal.com webhook event"):
        calcom_read({"payload": {}}, b"{}")
