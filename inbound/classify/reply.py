"""5. Human replies and unsubscribe requests.

The wording that makes a reply an unsubscribe request, and what does not (negated requests, questions about
someone else, footers), is in stop_wording.py: the replies inbox reads the same. Precision first: a false
request suppresses a person who wanted to talk; a missed one is still a human reply and stops the sequence.
"""

from __future__ import annotations

import re

from mailboxes.kinds import Kind

from .evidence import own_reply_ids
from .inbound import Inbound
from .mime import header_of
from .optout import data_request
from .result import Classification
from .stop_wording import UNSUBSCRIBE_SUBJECT_RE, unsubscribe_phrase

# Mail clients' one-click unsubscribe (Apple Mail and others answer a
# List-Unsubscribe mailto: for the user, RFC 2369 / RFC 8058's intent) is
# machine-sent and marked Auto-Submitted, but it is the person's request.
_CLIENT_UNSUBSCRIBE_BODY_RE = re.compile(
    r"(generated|sent) (automatically )?(by|from) .{0,60}\bto unsubscribe\b"
    r"|\bto unsubscribe (you |this address )?from (this|the|a|your) (mailing )?list"
    r"|\bunsubscribe request\b|\brequest(ed)? to unsubscribe\b",
    re.I,
)
_LIST_HEADERS = {"list-unsubscribe", "list-unsubscribe-post", "list-id"}


def check_client_unsubscribe(mail: Inbound) -> Classification | None:
    """An unsubscribe mail a client sent on the person's behalf: before the auto-reply check claims it."""
    msg = mail.msg
    auto_submitted = header_of(msg, "Auto-Submitted").lower()
    if not auto_submitted or auto_submitted.startswith("no") or header_of(msg, "List-Id"):
        return None
    subject = header_of(msg, "Subject")
    names = {str(name).lower() for name in msg.keys()}
    unsubscribe_header = any("unsubscribe" in name for name in names - _LIST_HEADERS)
    if not (
        UNSUBSCRIBE_SUBJECT_RE.search(subject)
        or _CLIENT_UNSUBSCRIBE_BODY_RE.search(mail.reply_text[:3000])
        or (unsubscribe_header and "unsubscribe" in subject.lower())
    ):
        return None
    return Classification(
        kind=Kind.UNSUBSCRIBE_REQUEST,
        original_message_ids=tuple(own_reply_ids(msg)),
        reason=f"unsubscribe mail sent by the person's mail client (Auto-Submitted: {auto_submitted})",
        reply_text=mail.reply_text,
        rule="client_unsubscribe",
    )


def check_human(mail: Inbound) -> Classification:
    msg, text = mail.msg, mail.reply_text
    ids = tuple(own_reply_ids(msg))
    subject = header_of(msg, "Subject")
    rule = reason = ""
    if demand := data_request(text) or data_request(subject):
        # Read as an opt-out: the address is suppressed; the words say a legal deadline runs.
        rule, reason = "data_request", f"data-protection request (erasure, access or objection): {demand!r}"
    elif UNSUBSCRIBE_SUBJECT_RE.search(subject):
        rule, reason = "unsubscribe_subject", f"subject asks to unsubscribe: {subject[:80]}"
    elif phrase := unsubscribe_phrase(text):
        rule, reason = "unsubscribe_text", f"reply asks to stop: {phrase!r}"
    if reason:
        return Classification(
            kind=Kind.UNSUBSCRIBE_REQUEST, original_message_ids=ids, reason=reason, reply_text=text, rule=rule
        )
    return Classification(
        kind=Kind.HUMAN_REPLY, original_message_ids=ids, reason="person's mail", reply_text=text, rule="human"
    )

