"""Challenge-response systems: read by the bounce check (which leaves them alone) and the auto-reply check."""

from __future__ import annotations

import re
from email.message import Message

from .evidence import is_null_sender
from .mime import DSN_TYPES, ctype_of, header_of, walk

# Challenge-response systems hold our mail until we "verify"; they are not a
# failed address and not a person, so they count as auto-replies.
_CHALLENGE_RE = re.compile(
    r"requires? (your )?confirmation|confirm this mail server|not pre-?approved|sender not (pre-?)?approved"
    r"|verify (that )?you are (a )?(human|real person|person)|prove (that )?you are (a )?human"
    r"|(added|add you|add your address) to (my|the recipient's|the) (allowed|approved|guest|safe) (senders )?list"
    r"|challenge[- ]response|click (on )?the (following )?link to (have your address added|verify|confirm)"
    r"|(boxbe|bluebottle|spamarrest|mailblocks|sendio)\b",
    re.I,
)
_CHALLENGE_HEADERS = ("X-Bluebottle-Request", "X-Boxbe-Notice", "X-Spamarrest-Challenge", "X-Challenge")
_NO_REPLY_SENDER_RE = re.compile(r"no-?reply|do-?not-?reply|mailer-daemon|postmaster|support@|notification", re.I)


def is_challenge_response(msg: Message, notification: str) -> bool:
    if any(name in msg for name in _CHALLENGE_HEADERS):
        return True
    # The wording must come from a machine: a report, or a no-reply sender.
    # A person may well write "please add me to the guest list". (The cheap
    # test first: the wording is searched in up to 20,000 characters.)
    sender = header_of(msg, "From") + " " + header_of(msg, "Return-Path")
    machine = (
        bool(_NO_REPLY_SENDER_RE.search(sender))
        or is_null_sender(msg)
        or any(ctype_of(p) in DSN_TYPES or ctype_of(p) == "multipart/report" for p in walk(msg))
    )
    return machine and bool(_CHALLENGE_RE.search(notification[:20_000]))
