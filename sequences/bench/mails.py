"""Inbound mail for the IMAP benchmarks: a realistic mix, generated, reproducible (seeded)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

OUR_ADDRESS = "sales0@bench.outreach.test"
WORDS = ("pipeline quarterly update webinar invoice meeting product roadmap launch customer report team review "
         "budget forecast campaign analytics release notes security notice onboarding partner summit").split()


def _id(domain: str = "prospects.test") -> str:
    return f"<{uuid.uuid4().hex}@{domain}>"


def reply(*, sender: str, to_message_id: str, text: str = "Thanks, but we are all set for this quarter.") -> bytes:
    return (
        f"From: Ada Lovelace <{sender}>\r\nTo: {OUR_ADDRESS}\r\nSubject: Re: Quick question, Ada\r\n"
        f"Message-ID: {_id()}\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\n"
        f"In-Reply-To: {to_message_id}\r\nReferences: {to_message_id}\r\n"
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n\r\n"
        "On Mon, 30 Nov 2026, Sam from Outreach wrote:\r\n> Would a 15-minute call next week be useful?\r\n"
    ).encode()


def unsubscribe(*, sender: str, to_message_id: str) -> bytes:
    return reply(sender=sender, to_message_id=to_message_id,
                 text="Please remove me from your mailing list and do not contact me again. Unsubscribe.")


def out_of_office(*, sender: str, to_message_id: str) -> bytes:
    return (
        f"From: {sender}\r\nTo: {OUR_ADDRESS}\r\nSubject: Automatic reply: Quick question, Ada\r\n"
        f"Message-ID: {_id()}\r\nAuto-Submitted: auto-replied\r\nIn-Reply-To: {to_message_id}\r\n"
        "Date: Mon, 30 Nov 2026 10:00:00 +0000\r\n\r\nI am out of the office until Monday with limited access "
        "to email.\r\n"
    ).encode()


def hard_bounce(*, recipient: str, original_message_id: str) -> bytes:
    boundary = "dsn-" + uuid.uuid4().hex
    return (
        f"From: Mail Delivery System <MAILER-DAEMON@mx.prospects.test>\r\nTo: {OUR_ADDRESS}\r\n"
        f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: {_id('mx.prospects.test')}\r\n"
        "Auto-Submitted: auto-replied\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: multipart/report; report-type=delivery-status; boundary=\"{boundary}\"\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered to {recipient}.\r\n"
        f"--{boundary}\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.prospects.test\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nAction: failed\r\nStatus: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: {OUR_ADDRESS}\r\nTo: {recipient}\r\n"
        f"Subject: Quick question\r\nMessage-ID: {original_message_id}\r\n\r\n--{boundary}--\r\n"
    ).encode()


def unrelated(rng: random.Random) -> bytes:
    """Newsletters and notifications: the bulk of a real sales inbox, 2-30 KB, some HTML."""
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(300, 4500)))
    lines = "\r\n".join(words[i:i + 76] for i in range(0, len(words), 76))
    sender = f"news@{rng.choice(WORDS)}{rng.randint(1, 500)}.example"
    if rng.random() < 0.5:
        boundary = "alt-" + uuid.uuid4().hex
        body = (f"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"{boundary}\"\r\n\r\n"
                f"--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{lines}\r\n"
                f"--{boundary}\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><body><p>{lines}</p>"
                f"</body></html>\r\n--{boundary}--\r\n")
    else:
        body = f"Content-Type: text/plain; charset=utf-8\r\n\r\n{lines}\r\n"
    return (f"From: Newsletter <{sender}>\r\nTo: {OUR_ADDRESS}\r\nSubject: Your weekly {rng.choice(WORDS)} digest\r\n"
            f"Message-ID: {_id('news.example')}\r\nDate: Mon, 30 Nov 2026 09:00:00 +0000\r\n"
            f"List-Unsubscribe: <mailto:leave@{sender.split('@')[1]}>\r\nPrecedence: bulk\r\n{body}").encode()


@dataclass(frozen=True)
class Prospect:
    email: str
    first_message_id: str  # the Message-ID of our step 1 to them


# Per 100 messages: what a sales inbox receives during a campaign.
MIX = (("reply", 20), ("hard_bounce", 3), ("auto_reply", 5), ("unsubscribe", 2), ("unrelated", 70))


def backlog(count: int, prospects: list[Prospect], seed: int = 5) -> Iterator[tuple[str, bytes]]:
    """(kind, raw) for *count* messages; each correlated message uses a prospect of its own, in order."""
    rng = random.Random(seed)
    kinds = [kind for kind, share in MIX for _ in range(share)]
    next_prospect = 0
    for i in range(count):
        kind = kinds[i % len(kinds)]
        if kind != "unrelated" and next_prospect >= len(prospects):
            kind = "unrelated"
        if kind == "unrelated":
            yield kind, unrelated(rng)
            continue
        p = prospects[next_prospect]
        next_prospect += 1
        if kind == "reply":
            yield kind, reply(sender=p.email, to_message_id=p.first_message_id)
        elif kind == "hard_bounce":
            yield kind, hard_bounce(recipient=p.email, original_message_id=p.first_message_id)
        elif kind == "auto_reply":
            yield kind, out_of_office(sender=p.email, to_message_id=p.first_message_id)
        else:
            yield kind, unsubscribe(sender=p.email, to_message_id=p.first_message_id)


def correlated_share() -> float:
    return sum(share for kind, share in MIX if kind != "unrelated") / 100
