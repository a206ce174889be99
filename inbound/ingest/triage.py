"""Header-only pre-classification: which mail needs its body read at all. Pure: no database.

The body classifier is the expensive part of ingestion. Its answer matters only
for mail that may act: mail tied to something we sent (checked by the caller
against the database: our Message-IDs in In-Reply-To/References, a sender we
sent to) and machine-generated reports, which can name our message or our
recipient only inside their body (DSN, ARF, prose bounces, auto-replies).
``machine_signal`` finds the second kind from the header; every test here is
a word search in one short header value, so a crafted header costs linear time.

A header signal never decides what a message *is*: it only sends the message
on to the body classifier. A false "machine" costs time; a missed one would
leave a report unread, so the tests lean wide.
"""

from __future__ import annotations

import re
from email.message import Message
from email.utils import parseaddr

# The classifier's own senders and subjects of bounces, complaints and auto-replies, reused.
from ..classify.autoreply import _AUTOREPLY_HEADERS, _OOO_SUBJECT_PREFIX_RE, _OOO_SUBJECT_RE
from ..classify.bounce_prose import _BOUNCE_SUBJECT_RE, _DAEMON_SENDER_RE
from ..classify.challenge import _CHALLENGE_HEADERS, _NO_REPLY_SENDER_RE
from ..classify.complaint import _COMPLAINT_SUBJECT, _JMRP_HEADER, _NON_ARF_SENDERS

VALUE_LIMIT = 2000  # characters of one header value searched
# Top-level types that carry a report or an attached original (a forwarded bounce, a non-ARF complaint).
_REPORT_TYPES = re.compile(r"^\s*(multipart/(report|mixed|related|digest)|message/|text/rfc822-headers)", re.I)
_MACHINE_HEADERS = ("X-Failed-Recipients", _JMRP_HEADER, "Feedback-Type", *_AUTOREPLY_HEADERS, *_CHALLENGE_HEADERS)


def machine_signal(msg: Message) -> str:
    """The header that marks *msg* as possibly machine-generated, in words; "" when none does."""

    def value(name: str) -> str:
        return str(msg.get(name, ""))[:VALUE_LIMIT]

    auto_submitted = value("Auto-Submitted").strip().lower()
    if auto_submitted and not auto_submitted.startswith("no"):
        return f"Auto-Submitted: {auto_submitted[:40]}"
    if _REPORT_TYPES.search(value("Content-Type")):
        return f"Content-Type {value('Content-Type').split(';')[0].strip()[:60]}"
    if "Return-Path" in msg and value("Return-Path").strip() in {"<>", ""}:
        return "null return path"
    for name in _MACHINE_HEADERS:
        if name in msg:
            return f"{name} header"
    sender = value("From") + " " + value("Return-Path") + " " + value("Sender")
    if _DAEMON_SENDER_RE.search(sender) or _NO_REPLY_SENDER_RE.search(sender):
        return "sender is a mail system or a no-reply address"
    if _NON_ARF_SENDERS.search(parseaddr(value("From"))[1]):
        return "sender is a feedback loop"
    subject = value("Subject")
    for rx in (_BOUNCE_SUBJECT_RE, _OOO_SUBJECT_RE, _OOO_SUBJECT_PREFIX_RE, _COMPLAINT_SUBJECT):
        if rx.search(subject):
            return "subject of a report or an automatic reply"
    precedence = value("Precedence").strip().lower()
    listed = "List-Id" in msg or "List-Unsubscribe" in msg
    if precedence in {"bulk", "junk", "auto_reply", "auto-reply"} and not listed:
        return f"Precedence: {precedence}"
    return ""
