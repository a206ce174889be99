"""1. Complaints (RFC 5965 ARF and recurring non-ARF feedback loops)."""

from __future__ import annotations

import re
from email.message import Message

from ..kinds import Kind
from .evidence import (
    addresses_in,
    embedded_headers,
    embedded_message_ids,
    embedded_recipients,
    normalize_msgid,
    own_reply_ids,
    parse_fields,
    unique,
)
from .inbound import Inbound
from .mime import ctype_of, header_of, part_text, walk
from .result import Classification


def check_complaint(mail: Inbound) -> Classification | None:
    msg = mail.msg
    report = _feedback_report_part(msg)
    if report is not None:
        return _arf_complaint(msg, report)
    return _non_arf_complaint(msg)


def _feedback_report_part(msg: Message) -> Message | None:
    for part in walk(msg):
        if ctype_of(part) == "message/feedback-report":
            return part
    return None


# Feedback types (RFC 5965 §7.3 registry) that are not a person's complaint.
# "not-spam" and "delivery" come from the ARF drafts and report no problem.
_NOT_COMPLAINT_FEEDBACK = {"delivery", "not-spam"}
# RFC 6591: a receiver's report that our mail failed SPF/DKIM/ADSP. Nobody
# complained, so nothing is suppressed; but it names the recipient and the
# failing message, and means our authentication is broken: its own kind.
_AUTH_FAILURE_FEEDBACK = {"auth-failure", "dkim", "spf"}
# The ARF drafts' "opt-out" / "opt-out-list" types: the recipient asked to
# stop through the feedback loop, an unsubscribe request, not a spam
# complaint. (The drafts' Removal-Recipient field names the address to drop;
# abuse reports carry it too, so it names the recipient, not the kind.)
_OPT_OUT_FEEDBACK = {"opt-out", "opt-out-list", "unsubscribe"}


def _arf_complaint(msg: Message, report: Message) -> Classification | None:
    fields: dict[str, str] = {}
    for block in parse_fields(part_text(report)):
        for key, value in block.items():
            fields[key] = fields[key] + "\n" + value if key in fields else value
    feedback_type = fields.get("feedback-type", "").split()[0].lower() if fields.get("feedback-type") else ""
    ids = embedded_message_ids(msg)
    if fields.get("original-message-id"):
        ids.append(normalize_msgid(fields["original-message-id"]))
    ids = unique(ids + own_reply_ids(msg))
    if feedback_type in _NOT_COMPLAINT_FEEDBACK:
        return Classification(
            kind=Kind.UNRELATED,
            original_message_ids=tuple(ids),
            reason=f"RFC 5965 ARF Feedback-Type: {feedback_type} is not a complaint",
            rule="arf_not_complaint",
        )
    removal = _field_addresses(fields, "removal-recipient")
    recipients, source = removal, "Removal-Recipient"
    if not recipients:
        recipients, source = _field_addresses(fields, "original-rcpt-to"), "Original-Rcpt-To"
    if not recipients:
        recipients, source = embedded_recipients(msg), "embedded To"
    if feedback_type in _AUTH_FAILURE_FEEDBACK:
        kind, rule, standard = Kind.AUTH_FAILURE, "arf_auth_failure", "RFC 6591"
    elif feedback_type in _OPT_OUT_FEEDBACK:
        kind, rule, standard = Kind.UNSUBSCRIBE_REQUEST, "arf_opt_out", "ARF opt-out report"
    else:
        kind, rule, standard = Kind.COMPLAINT, "arf", "RFC 5965 ARF"
    return Classification(
        kind=kind,
        recipients=tuple(unique(recipients)),
        original_message_ids=tuple(ids),
        reason=f"{standard} Feedback-Type: {feedback_type or 'missing'}; recipient from {source}",
        rule=rule,
    )


def _field_addresses(fields: dict[str, str], name: str) -> list[str]:
    found: list[str] = []
    for value in fields.get(name, "").split("\n"):
        found.extend(addresses_in(value))
    return unique(found)


# Hotmail/Outlook.com JMRP forwards the complained-about mail with this header
# on top; it recurs across all their non-ARF reports.
_JMRP_HEADER = "X-HmXmrOriginalRecipient"
# Old AOL "scomp" and other pre-ARF loops: a report sender plus the original
# mail attached. Matching on the sender alone would be too loose, so an
# attached message is required too.
_NON_ARF_SENDERS = re.compile(r"^(scomp@aol\.net|staff@hotmail\.com|feedbackloop@|fbl@|abuse-report@)", re.I)
_COMPLAINT_SUBJECT = re.compile(r"complaint about message from|abuse report|spam report|feedback[- ]loop", re.I)


def _non_arf_complaint(msg: Message) -> Classification | None:
    holders = [msg, *embedded_headers(msg)]
    for holder in holders:
        value = header_of(holder, _JMRP_HEADER)
        if value:
            ids = embedded_message_ids(msg) if holder is not msg else [normalize_msgid(header_of(msg, "Message-ID"))]
            return Classification(
                kind=Kind.COMPLAINT,
                recipients=tuple(unique(addresses_in(value))),
                original_message_ids=tuple(unique(ids + own_reply_ids(msg))),
                reason=f"Hotmail/Outlook JMRP complaint ({_JMRP_HEADER})",
                rule="jmrp",
            )
    sender = ",".join(addresses_in(header_of(msg, "From")))
    if _NON_ARF_SENDERS.search(sender) and _COMPLAINT_SUBJECT.search(header_of(msg, "Subject")):
        if embedded_headers(msg):
            return Classification(
                kind=Kind.COMPLAINT,
                recipients=tuple(embedded_recipients(msg)),
                original_message_ids=tuple(unique(embedded_message_ids(msg) + own_reply_ids(msg))),
                reason=f"non-ARF feedback-loop report from {sender}",
                rule="non_arf_fbl",
            )
    return None
