"""Inbound-mail classifier: pure functions, no ORM, no network. One module per check.

``classify(raw)`` sorts one inbound message into a ``Classification``:
complaint, auth_failure, bounce (hard/soft), auto_reply,
unsubscribe_request, human_reply or unrelated, and names the ``rule`` that
decided. The checks run in order of trust:

1. complaint   RFC 5965 ARF, then recurring non-ARF feedback formats     complaint.py
2. bounce      RFC 3464 DSN fields, then recurring non-standard bounce   bounce.py, bounce_prose.py,
               prose; hard or soft per recipient                         verdict.py
3. auto_reply  RFC 3834 headers, vendor headers, out-of-office subjects, autoreply.py, challenge.py
               challenge-response systems; a mail client's unsubscribe   reply.py
               mail (Auto-Submitted, yet the person's request) first
4. unrelated   newsletters / mailing-list traffic (not a response to us) unrelated.py
5. unsubscribe_request / human_reply  on the new text of a person's mail reply.py, quotes.py

Shared by the checks: mime.py (tolerant parse, parts, decoding), text.py
(notification and body text), evidence.py (addresses, ids, status codes,
report fields, the returned original), inbound.py (one message's texts,
computed once).

The hard/soft split is deliberately conservative: "hard" (suppress the
address after one event) only for reasons that cannot heal by themselves —
user unknown, host unknown, has moved, domain does not accept mail. Mailbox
full, message too large, spam/policy blocks and expired/delayed deliveries
are "soft": the suppression ledger must not act on one of them.

Decisions worth knowing (each is commented where it is enforced):

- A DSN with ``Action: delayed`` is a soft bounce; a DSN that only reports
  success (delivered/relayed/expanded) is ``unrelated``.
- "Account disabled/inactive/suspended" wording (RFC 3463 X.2.1) is soft (it
  can be switched back on); "account closed/deleted" is hard. A "user
  unknown" given in reply to DATA rather than RCPT TO is soft (a filter).
- ARF ``Feedback-Type: auth-failure`` (RFC 6591) is ``auth_failure``: not
  a complaint (nobody asked to stop, nothing is suppressed), but recorded
  with its recipient because it means our SPF/DKIM is failing. An ARF
  ``opt-out`` / ``opt-out-list`` report is an ``unsubscribe_request``.
- Newsletters and list traffic (List-Id / List-Unsubscribe / Precedence:
  list) are ``unrelated``; ``X-Auto-Response-Suppress`` alone is *not* an
  auto-reply signal.
- A body whose MIME parts nest deeper than 20 levels or number more than
  200 is not read part by part (mime.py): the message is judged on its
  header alone and the reason says so, so nesting can neither exhaust the
  parser's recursion nor hide a reply beyond what is read.

``classify`` never raises: broken MIME, bad charsets, missing headers and
huge messages degrade to a best-effort answer.
"""

from __future__ import annotations

import re
from dataclasses import replace
from email.message import Message

from ..kinds import Kind
from .autoreply import OOO_WORDING, check_auto_reply
from .bounce import check_bounce
from .complaint import check_complaint
from .inbound import Inbound
from .mime import parse_for_classify, parts_not_read
from .reply import POSSIBLE_OPTOUT, check_client_unsubscribe, check_human
from .result import Classification
from .unrelated import check_unrelated

__all__ = ["Classification", "classify"]


def classify(raw: bytes) -> Classification:
    """Classify one inbound message; never raises."""
    try:
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        msg = parse_for_classify(raw)
        if not msg.keys():
            # No header at all (a pasted body): read all of it as plain text
            # rather than lose a first line that happens to contain a colon.
            msg = parse_for_classify(b"Content-Type: text/plain; charset=utf-8\n\n" + raw)
        result = _classify(msg, raw)
        if why := parts_not_read(msg):
            # Judged on its header alone: In-Reply-To/References still tie it to what we sent, and mail that is
            # no report or automatic answer by its header is a person's mail (it stops), never "empty".
            result = replace(result, reason=f"{result.reason} ({why}: only the header was read)")
        return _sanitize(result)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return Classification(
            kind=Kind.UNRELATED, reason=f"internal error: {type(exc).__name__}", rule="internal_error"
        )


_CONTROL_CHARS_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _sanitize(result: Classification) -> Classification:
    """Text safe to store: no lone surrogates (undecodable header bytes) and
    no NUL / control characters, which PostgreSQL text columns reject."""

    def clean(text: str) -> str:
        try:
            text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "replace").decode("utf-8")
        return _CONTROL_CHARS_RE.sub("", text)

    return replace(
        result,
        recipients=tuple(clean(r) for r in result.recipients),
        original_message_ids=tuple(clean(i) for i in result.original_message_ids),
        reason=clean(result.reason)[:500],
        reply_text=clean(result.reply_text),
    )


def _classify(msg: Message, raw: bytes) -> Classification:
    mail = Inbound(msg)
    checks = (check_complaint, check_bounce, check_client_unsubscribe, check_auto_reply, check_unrelated)
    for check in checks:
        result = check(mail)
        if result is not None:
            return _heard_asking_to_stop(mail, result)
    return check_human(mail)


def _heard_asking_to_stop(mail: Inbound, result: Classification) -> Classification:
    """A mail read as an auto-reply by its words alone (no header, subject or null sender says so) was written by
    a person: when it also asks to stop, or may ("on leave till Monday; and take me off your list"), it is read
    as the person's reply, so that the address is suppressed. Fail safe: the hold an away note would give is
    lost, a follow-up to someone who asked to stop is not sent."""
    if result.rule != OOO_WORDING:
        return result
    human = check_human(mail)
    return human if human.kind == Kind.UNSUBSCRIBE_REQUEST or human.rule == POSSIBLE_OPTOUT else result
