"""The booking link: which person a booking made through a step's `{{ booking_link }}` came from.

`{{ booking_link }}` renders as the sequence's `booking_url` with the person's booking token as `utm_content`
(Calendly gives the UTM parameters of the link back in the invitee's `tracking.utm_content`) and, on any other
scheduling page (Cal.com), also as `metadata[utm_content]` (Cal.com gives a link's `metadata[...]` parameters
back in its webhook's `payload.metadata`). The token is the contact's id signed with the install's secret key
(salt "booking"): it needs no column, nobody can make one for another person, and a tampered one reads as none.
The receivers of the bookings (the meetings app) read it back with `booking_token_read`.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.core import signing

SALT = "booking"
PARAM = "utm_content"
CALCOM_PARAM = "metadata[utm_content]"
MAX_URL = 500  # Sequence.booking_url's length
VARIABLE = "booking_link"  # the name a step's text uses


def booking_token(contact_id: int) -> str:
    """The person's token: their contact id, signed ("42:…"); the same every time, so a preview shows what is sent."""
    return signing.Signer(salt=SALT).sign(str(contact_id))


def booking_token_read(token: str) -> int | None:
    """The contact id a token names; None for no token, or one this install did not sign."""
    try:
        value = signing.Signer(salt=SALT).unsign(str(token or "").strip())
    except signing.BadSignature:
        return None
    return int(value) if value.isdigit() else None


def is_calendly(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host == "calendly.com" or host.endswith(".calendly.com")


def booking_link(url: str, contact_id: int) -> str:
    """`url` with the person's token in its query (a token already there is replaced, other parameters kept)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in (PARAM, CALCOM_PARAM)]
    token = booking_token(contact_id)
    query.append((PARAM, token))
    if not is_calendly(url):
        query.append((CALCOM_PARAM, token))
    return urlunsplit(parts._replace(query=urlencode(query)))


def booking_context(sequence, contact) -> dict:
    """The variable a step's text may name for this person: `booking_link`, when the sequence has a booking URL
    (without one, `{{ booking_link }}` is a missing value, as any other: the job ends saying so)."""
    if sequence is None or not getattr(sequence, "booking_url", "") or contact.pk is None:
        return {}
    return {VARIABLE: booking_link(sequence.booking_url, contact.pk)}


def booking_url_problem(url: str) -> str:
    """Why `url` cannot be a sequence's booking URL, in words; "" when it can ("" itself: no booking page)."""
    if not url:
        return ""
    if len(url) > MAX_URL:
        return f"is {len(url)} characters long: at most {MAX_URL}"
    if any(ch.isspace() for ch in url) or any(ord(ch) < 32 for ch in url):
        return "holds a space or a control character"
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        return "must be an https:// address of a scheduling page (e.g. https://calendly.com/you/intro)"
    if parts.fragment:
        return "must not end in a #fragment: the person's token is added to its query"
    return ""
