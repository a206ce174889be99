"""2. Bounces: RFC 3464 delivery status notifications, Amazon SES notifications, then prose (bounce_prose)."""

from __future__ import annotations

import json
import re
from email.message import Message

from ..kinds import Kind
from .bounce_prose import looks_like_bounce, prose_bounce
from .evidence import (
    EMAIL_RE,
    addresses_in,
    decode_local_parts,
    embedded_message_ids,
    normalize_msgid,
    own_reply_ids,
    parse_fields,
    status_codes_in,
    unique,
)
from .inbound import Inbound
from .mime import DSN_TYPES, MAX_SCAN, ctype_of, part_text, walk
from .result import Classification
from .verdict import Failure, attach_prose, bounce_result


def check_bounce(mail: Inbound) -> Classification | None:
    msg, notification = mail.msg, mail.notification
    if mail.challenge_response:
        return None  # the auto_reply check claims it
    for finder in (_dsn_bounce, _ses_notification, prose_bounce):
        result = finder(msg, notification)
        if result is not None:
            return result
    return None


# --- 2a. RFC 3464 delivery status notifications


def _dsn_bounce(msg: Message, notification: str) -> Classification | None:
    dsn_parts = [p for p in walk(msg) if ctype_of(p) in DSN_TYPES]
    if not dsn_parts:
        # Some gateways wrap the MTA's DSN in a message/rfc822 attachment.
        dsn_parts = [p for p in walk(msg, into_attached=True) if ctype_of(p) in DSN_TYPES]
        if not dsn_parts or not looks_like_bounce(msg, notification):
            return None
    records = []
    for part in dsn_parts:
        blocks = parse_fields(part_text(part))
        records.extend(b for b in blocks if "final-recipient" in b or "original-recipient" in b or "action" in b)
    failures, delivered = _dsn_failures(records, notification)
    ids = unique(embedded_message_ids(msg) + own_reply_ids(msg))
    if not failures:
        if delivered:
            # RFC 3464 Action: delivered / relayed / expanded — a success
            # notice; nothing failed.
            return Classification(
                kind=Kind.UNRELATED,
                original_message_ids=tuple(ids),
                reason=f"RFC 3464 DSN reports success (Action: {delivered[0]})",
                rule="dsn_success",
            )
        return None  # a report without per-recipient fields: try the prose
    return bounce_result(
        failures, ids, source="RFC 3464 DSN", rule="dsn", extra_codes=status_codes_in(notification)
    )


def _dsn_failures(records: list[dict[str, str]], notification: str) -> tuple[list[Failure], list[str]]:
    failures: list[Failure] = []
    delivered: list[str] = []
    for record in records:
        action = record.get("action", "").split()[0].lower() if record.get("action", "").strip() else ""
        status_codes = status_codes_in(record.get("status", ""))
        status = status_codes[0] if status_codes else ""
        # RFC 3464 §2.3.3 success actions; Postfix address verification
        # reports (sendmail -bv) say "deliverable".
        if action in {"delivered", "relayed", "expanded", "deliverable"} or status.startswith("2"):
            delivered.append(action or "delivered")
            continue
        # Decision: Action: delayed (still retrying) counts as a soft bounce,
        # so the timeline shows it; it never suppresses on its own.
        if action not in {"failed", "delayed", ""} or (not action and not status):
            continue
        recipient = _dsn_address(record.get("final-recipient", "")) or _dsn_address(
            record.get("original-recipient", "")
        )
        diagnostic = record.get("diagnostic-code", "")
        if ";" in diagnostic[:30]:  # "smtp; 550 5.1.1 ..." (RFC 3464 §2.3.6)
            diagnostic = diagnostic.split(";", 1)[1]
        failures.append(
            Failure(
                recipient=recipient,
                status=status,
                text=diagnostic.strip(),
                action=action or "failed",
                dsn_status=status,
            )
        )
    attach_prose(failures, notification)
    for failure in failures:
        failure.status = _remote_status(failure.status, status_codes_in(failure.text))
    return failures, delivered


def _dsn_address(value: str) -> str:
    """ "rfc822; user@example.com" -> "user@example.com" (RFC 3464 §2.3.2)."""
    if not value:
        return ""
    _, _, address = decode_local_parts(value).rpartition(";")
    address = address.strip().strip("<>").strip().lower()
    if "@" not in address:
        return ""
    found = EMAIL_RE.search(address)
    # Keep quoted local parts ("a..b"@example.org) as written.
    return address if address.startswith('"') or not found else found.group(0).lower()


def _remote_status(status: str, diagnostic_codes: list[str]) -> str:
    """Prefer the code the remote server itself sent (RFC 3464 §2.3.6).

    The reporting MTA's Status is often a translation (5.0.0, or Sendmail's
    5.1.1 for any RCPT failure) while Diagnostic-Code quotes the remote reply.
    """
    specific = [c for c in diagnostic_codes if not c.endswith(".0.0")]
    for code in specific:
        if not status or code[0] == status[0]:
            return code
    return status or (diagnostic_codes[0] if diagnostic_codes else "")


# --- 2b. Amazon SES notifications delivered as e-mail (SNS subscription)


_SES_START_RE = re.compile(r'\{\s*"(?:notificationType|eventType|Type)"\s*:')


def _ses_notification(msg: Message, notification: str) -> Classification | None:
    data = _ses_payload(notification)
    if data is None:
        return None
    ses_type = str(data.get("notificationType") or data.get("eventType") or "").lower()  # SES's words, not a Kind
    mail = data.get("mail") if isinstance(data.get("mail"), dict) else {}
    ids = _ses_message_ids(mail)
    if ses_type == "complaint":
        complaint = data.get("complaint") if isinstance(data.get("complaint"), dict) else {}
        recipients = [str(r.get("emailAddress", "")) for r in complaint.get("complainedRecipients", []) or []]
        return Classification(
            kind=Kind.COMPLAINT,
            recipients=tuple(unique(addresses_in(",".join(recipients)))),
            original_message_ids=tuple(ids),
            reason=f"Amazon SES complaint notification ({complaint.get('complaintFeedbackType') or 'no type'})",
            rule="ses_complaint",
        )
    if ses_type != "bounce":
        return None
    bounce = data.get("bounce") if isinstance(data.get("bounce"), dict) else {}
    failures = []
    for rcpt in bounce.get("bouncedRecipients", []) or []:
        if not isinstance(rcpt, dict):
            continue
        text = str(rcpt.get("diagnosticCode") or "")
        listed = status_codes_in(str(rcpt.get("status") or ""))
        status = _remote_status(listed[0] if listed else "", status_codes_in(text))
        if not status and str(bounce.get("bounceType")) == "Transient":
            status = "4.0.0"
        address = addresses_in(str(rcpt.get("emailAddress", "")))
        action = str(rcpt.get("action") or "failed").lower()
        failures.append(
            Failure(
                recipient=address[0] if address else "",
                status=status,
                text=text,
                action=action if action in {"failed", "delayed"} else "failed",
                dsn_status=listed[0] if listed else "",
            )
        )
    if not failures:
        return None
    return bounce_result(
        failures, ids, source=f"Amazon SES bounce notification ({bounce.get('bounceType')})", rule="ses_bounce"
    )


def _ses_payload(notification: str) -> dict | None:
    """The SES event, bare or inside an SNS envelope (JSON whose "Message" is JSON)."""
    for match in _SES_START_RE.finditer(notification[:MAX_SCAN]):
        data = _loads_prefix(notification[match.start() :])
        if not isinstance(data, dict):
            continue
        if data.get("Type") == "Notification" and isinstance(data.get("Message"), str):
            # Amazon SNS delivers the SES event as a JSON string in "Message".
            try:
                data = json.loads(data["Message"])
            except ValueError:
                continue
            if not isinstance(data, dict):
                continue
        if data.get("notificationType") or data.get("eventType"):
            return data
    return None


def _loads_prefix(text: str) -> object:
    # The JSON may be followed by an SNS footer, or wrapped over lines.
    candidate = text.replace("\r", "")
    for attempt in (candidate, candidate.replace("\n", "")):
        try:
            return json.JSONDecoder().raw_decode(attempt)[0]
        except ValueError:
            continue
    return None


def _ses_message_ids(mail: dict) -> list[str]:
    ids = []
    for header in mail.get("headers", []) or []:
        if isinstance(header, dict) and str(header.get("name", "")).lower() == "message-id":
            ids.append(normalize_msgid(str(header.get("value", ""))))
    common = mail.get("commonHeaders") if isinstance(mail.get("commonHeaders"), dict) else {}
    ids.append(normalize_msgid(str(common.get("messageId", ""))))
    return unique(ids)
