"""Inbound mail for the tests, drills and benchmarks: replies, DSNs, ARF reports, out-of-office answers.

Written for the project (not taken from the corpus). Each builder's defaults
are the tests' mail; the drills and benchmarks pass their own addresses,
subjects, dates and quoted history. `backlog` is the benchmarks' reproducible
(seeded) mix of what a sales inbox receives during a campaign.
"""

from __future__ import annotations

import random
import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from mailboxes.imap.fetch import FetchedMessage

OURS = "sender0@outreach.test"  # the tests' sending address
DATE = "Sun, 29 Nov 2026 10:00:00 +0000"
QUOTED = "On Sun, Nov 29, 2026, Sales wrote:\r\n> Hello\r\n"


def new_id(domain: str = "prospect.example") -> str:
    return f"<{uuid.uuid4().hex}@{domain}>"


def date_header(when: datetime) -> str:
    """An RFC 5322 Date for an aware UTC datetime (the drills date their mail now)."""
    return f"{when:%a, %d %b %Y %H:%M:%S +0000}"


def reply(*, to_message_id: str, sender: str = "ada@example.com", name: str = "Ada", to: str = OURS,
          subject: str = "Re: Hello Ada", body: str = "Thanks, not now.", message_id: str | None = None,
          in_reply_to: bool = True, date: str = DATE, quoted: str = QUOTED) -> bytes:
    """A human reply threaded under `to_message_id` (In-Reply-To and References), as a mail client writes it."""
    threading = f"In-Reply-To: {to_message_id}\r\nReferences: {to_message_id}\r\n" if in_reply_to else ""
    return (
        f"From: {name} <{sender}>\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: {message_id or new_id()}\r\nDate: {date}\r\n{threading}"
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n\r\n{quoted}"
    ).encode()


def dsn(*, original_message_id: str, recipient: str, status: str = "5.1.1", action: str = "failed",
        diagnostic: str = "550 5.1.1 user unknown", ours: str = OURS, mta: str = "mx.example",
        notice: str = "Your message could not be delivered.", original_subject: str = "Hello",
        message_id: str | None = None, date: str | None = None) -> bytes:
    """A multipart/report delivery-status notification about `original_message_id`."""
    boundary = "dsn-" + uuid.uuid4().hex
    dated = f"Date: {date}\r\n" if date else ""
    return (
        f"From: Mail Delivery System <MAILER-DAEMON@{mta}>\r\nTo: {ours}\r\n"
        f"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: {message_id or new_id()}\r\n"
        "Auto-Submitted: auto-replied\r\n"
        f"{dated}MIME-Version: 1.0\r\n"
        f"Content-Type: multipart/report; report-type=delivery-status; boundary=\"{boundary}\"\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/plain\r\n\r\n{notice}\r\n"
        f"--{boundary}\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; {mta}\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nAction: {action}\r\nStatus: {status}\r\n"
        f"Diagnostic-Code: smtp; {diagnostic}\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/rfc822-headers\r\n\r\nFrom: {ours}\r\nTo: {recipient}\r\n"
        f"Subject: {original_subject}\r\nMessage-ID: {original_message_id}\r\n\r\n--{boundary}--\r\n"
    ).encode()


def arf(*, original_message_id: str, recipient: str) -> bytes:
    """An abuse report (RFC 5965) quoting the original message."""
    boundary = "arf-" + uuid.uuid4().hex
    return (
        f"From: feedback@isp.example\r\nTo: abuse@outreach.test\r\nSubject: Abuse report\r\nMessage-ID: {new_id()}\r\n"
        "MIME-Version: 1.0\r\n"
        f"Content-Type: multipart/report; report-type=feedback-report; boundary=\"{boundary}\"\r\n\r\n"
        f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nThis is an email abuse report.\r\n"
        f"--{boundary}\r\nContent-Type: message/feedback-report\r\n\r\n"
        "Feedback-Type: abuse\r\nUser-Agent: ISP-FBL/1.0\r\n"
        f"Version: 1\r\nOriginal-Rcpt-To: {recipient}\r\nOriginal-Mail-From: {OURS}\r\n\r\n"
        f"--{boundary}\r\nContent-Type: message/rfc822\r\n\r\nFrom: {OURS}\r\nTo: {recipient}\r\n"
        f"Subject: Hello\r\nMessage-ID: {original_message_id}\r\n\r\nHi\r\n--{boundary}--\r\n"
    ).encode()


def out_of_office(*, to_message_id: str, sender: str = "ada@example.com", to: str = OURS,
                  subject: str = "Out of Office: Hello Ada", text: str = "I am away until Monday.",
                  message_id: str | None = None, date: str | None = None) -> bytes:
    """An RFC 3834 automatic answer (Auto-Submitted: auto-replied) to `to_message_id`."""
    dated = f"Date: {date}\r\n" if date else ""
    return (
        f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n"
        f"Message-ID: {message_id or new_id()}\r\nAuto-Submitted: auto-replied\r\nIn-Reply-To: {to_message_id}\r\n"
        f"{dated}\r\n{text}\r\n"
    ).encode()


def fetched(raw: bytes, *, uid: int) -> FetchedMessage:
    """What the IMAP poller hands to inbound_record for one message, received now."""
    return FetchedMessage(uid=uid, internaldate=timezone.now(), raw=raw, size=len(raw), flags=())


def drill_reply(*, to_message_id: str, sender: str, to: str, subject: str = "Re: Hello") -> bytes:
    """The drills' human reply: dated now, under drill.invalid."""
    return reply(to_message_id=to_message_id, sender=sender, name="Drill Prospect", to=to, subject=subject,
                 message_id=f"<drill-reply.{secrets.token_hex(8)}@drill.invalid>", date=date_header(timezone.now()),
                 quoted="On an earlier day, the drill wrote:\r\n> Hello\r\n")


# --- the benchmarks' inbox ----------------------------------------------------------------

BENCH_ADDRESS = "sales0@bench.outreach.test"
BENCH_DATE = "Mon, 30 Nov 2026 10:00:00 +0000"
BENCH_DOMAIN = "prospects.test"
WORDS = ("pipeline quarterly update webinar invoice meeting product roadmap launch customer report team review "
         "budget forecast campaign analytics release notes security notice onboarding partner summit").split()


BENCH_QUOTED = "On Mon, 30 Nov 2026, Sam from Outreach wrote:\r\n> Would a 15-minute call next week be useful?\r\n"


def bench_reply(*, sender: str, to_message_id: str,
                text: str = "Thanks, but we are all set for this quarter.") -> bytes:
    """A prospect's answer to the bench's step 1, quoting it."""
    return reply(to_message_id=to_message_id, sender=sender, name="Ada Lovelace", to=BENCH_ADDRESS,
                 subject="Re: Quick question, Ada", body=text, message_id=new_id(BENCH_DOMAIN), date=BENCH_DATE,
                 quoted=BENCH_QUOTED)


def _bench_unsubscribe(*, sender: str, to_message_id: str) -> bytes:
    return bench_reply(sender=sender, to_message_id=to_message_id,
                       text="Please remove me from your mailing list and do not contact me again. Unsubscribe.")


def _bench_out_of_office(*, sender: str, to_message_id: str) -> bytes:
    return out_of_office(to_message_id=to_message_id, sender=sender, to=BENCH_ADDRESS,
                         subject="Automatic reply: Quick question, Ada", message_id=new_id(BENCH_DOMAIN),
                         text="I am out of the office until Monday with limited access to email.", date=BENCH_DATE)


def _bench_hard_bounce(*, recipient: str, original_message_id: str) -> bytes:
    return dsn(original_message_id=original_message_id, recipient=recipient, ours=BENCH_ADDRESS,
               mta="mx.prospects.test", notice=f"Your message could not be delivered to {recipient}.",
               original_subject="Quick question", message_id=new_id("mx.prospects.test"), date=BENCH_DATE)


def newsletter(rng: random.Random) -> bytes:
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
    return (f"From: Newsletter <{sender}>\r\nTo: {BENCH_ADDRESS}\r\nSubject: Your weekly {rng.choice(WORDS)} digest\r\n"
            f"Message-ID: {new_id('news.example')}\r\nDate: Mon, 30 Nov 2026 09:00:00 +0000\r\n"
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
            yield kind, newsletter(rng)
            continue
        p = prospects[next_prospect]
        next_prospect += 1
        if kind == "reply":
            yield kind, bench_reply(sender=p.email, to_message_id=p.first_message_id)
        elif kind == "hard_bounce":
            yield kind, _bench_hard_bounce(recipient=p.email, original_message_id=p.first_message_id)
        elif kind == "auto_reply":
            yield kind, _bench_out_of_office(sender=p.email, to_message_id=p.first_message_id)
        else:
            yield kind, _bench_unsubscribe(sender=p.email, to_message_id=p.first_message_id)


def correlated_share() -> float:
    return sum(share for kind, share in MIX if kind != "unrelated") / 100
