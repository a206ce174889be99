"""Inbound mail the drills feed to ingestion, built like tests/mailboxes/mails.reply.

Kept here (not imported from tests/) so that `drill race` runs on a deployment
that ships without the test suite.
"""

from __future__ import annotations

import secrets

from django.utils import timezone

from mailboxes.imap import FetchedMessage


def reply(*, to_message_id: str, sender: str, to: str, subject: str = "Re: Hello") -> bytes:
    """A human reply threaded under `to_message_id` (In-Reply-To and References), as a mail client writes it."""
    message_id = f"<drill-reply.{secrets.token_hex(8)}@drill.invalid>"
    return (
        f"From: Drill Prospect <{sender}>\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: {message_id}\r\nDate: {timezone.now():%a, %d %b %Y %H:%M:%S +0000}\r\n"
        f"In-Reply-To: {to_message_id}\r\nReferences: {to_message_id}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\nThanks, not now.\r\n\r\n"
        "On an earlier day, the drill wrote:\r\n> Hello\r\n"
    ).encode()


def fetched(raw: bytes, *, uid: int) -> FetchedMessage:
    """What the IMAP poller hands to inbound_record for one message."""
    return FetchedMessage(uid=uid, internaldate=timezone.now(), raw=raw, size=len(raw), flags=())
