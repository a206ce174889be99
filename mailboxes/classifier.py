"""Inbound-mail classifier: pure functions, no ORM, no network.

``classify(raw)`` sorts one inbound message into a ``Classification``:
complaint, bounce (hard/soft), auto_reply, unsubscribe_request,
human_reply or unrelated. The checks run in order of trust:

1. complaint   RFC 5965 ARF, then recurring non-ARF feedback formats
2. bounce      RFC 3464 DSN fields, then recurring non-standard bounce prose
3. auto_reply  RFC 3834 headers, vendor headers, out-of-office subjects,
               challenge-response systems
4. unrelated   newsletters / mailing-list traffic (not a response to us)
5. unsubscribe_request / human_reply  on the new text of a person's mail

The hard/soft split is deliberately conservative: "hard" (suppress the
address after one event) only for reasons that cannot heal by themselves —
user unknown, host unknown, has moved, domain does not accept mail. Mailbox
full, message too large, spam/policy blocks and expired/delayed deliveries
are "soft": the suppression ledger must not act on one of them.

``classify`` never raises: broken MIME, bad charsets, missing headers and
huge messages degrade to a best-effort answer.
"""

from __future__ import annotations

import email
import email.header
import email.policy
import email.utils
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from email.message import EmailMessage, Message
from html.parser import HTMLParser

HUMAN_REPLY = "human_reply"
AUTO_REPLY = "auto_reply"
BOUNCE = "bounce"
COMPLAINT = "complaint"
UNSUBSCRIBE_REQUEST = "unsubscribe_request"
UNRELATED = "unrelated"

HARD = "hard"
SOFT = "soft"

# Regexes run over at most this many characters of any one text: a huge
# attachment must not make classification slow, and everything a bounce or a
# reply needs to say is said near the top.
_MAX_SCAN = 200_000
_MAX_PARTS = 200
_MAX_DEPTH = 20


@dataclass(frozen=True)
class Classification:
    kind: str  # HUMAN_REPLY, AUTO_REPLY, BOUNCE, COMPLAINT, UNSUBSCRIBE_REQUEST, UNRELATED
    bounce_type: str = ""  # HARD, SOFT or "" (only for bounce)
    recipients: tuple[str, ...] = ()  # failed / complained-about addresses, lowercased
    status_codes: tuple[str, ...] = ()  # RFC 3463 codes found, e.g. ("5.1.1",)
    original_message_ids: tuple[str, ...] = ()  # "<...>" ids of our original message
    reason: str = ""  # short human-readable why
    reply_text: str = ""  # human replies: new text without quoted history
    # Per-recipient HARD/SOFT, parallel to ``recipients`` (bounces only). A
    # multi-recipient DSN can mix "user unknown" and "mailbox full"; the
    # overall ``bounce_type`` is HARD only when every failed recipient is hard.
    recipient_types: tuple[str, ...] = ()


# ---------------------------------------------------------------------------
# Public entry points


def parse_message(raw: bytes) -> EmailMessage:
    """Parse tolerantly: modern policy first, compat32 when headers defeat it.

    ``email.policy.default`` parses header values lazily and some malformed
    headers raise only when read, so every header is read once here.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogateescape")
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        _touch_headers(msg)
        return msg  # type: ignore[return-value]
    except Exception:
        return email.message_from_bytes(  # type: ignore[return-value]
            raw, _class=EmailMessage, policy=email.policy.compat32
        )


def classify(raw: bytes) -> Classification:
    """Classify one inbound message; never raises."""
    try:
        msg = parse_message(raw)
        return _classify(msg, raw)
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return Classification(
            kind=UNRELATED, reason=f"internal error: {type(exc).__name__}"
        )


def _classify(msg: Message, raw: bytes) -> Classification:
    for check in (_check_complaint, _check_bounce, _check_auto_reply, _check_unrelated):
        result = check(msg)
        if result is not None:
            return result
    return _check_human(msg)


# ---------------------------------------------------------------------------
# Safe message access


def _touch_headers(msg: Message) -> None:
    for part in _walk(msg, into_attached=True):
        for name in part.keys():
            for value in part.get_all(name, []):
                str(value)
        part.get_content_type()
        part.get_params()


def _walk(msg: Message, *, into_attached: bool = False) -> Iterator[Message]:
    """Depth-first parts, bounded; optionally not entering message/rfc822.

    The returned original inside a bounce or complaint is *our* mail; looking
    for the failure reason or the reply text in it would find our own words.
    """
    stack: list[tuple[Message, int]] = [(msg, 0)]
    seen = 0
    while stack and seen < _MAX_PARTS:
        part, depth = stack.pop(0)
        seen += 1
        yield part
        if depth >= _MAX_DEPTH or not part.is_multipart():
            continue
        if not into_attached and _ctype(part) in _ATTACHED_MESSAGE_TYPES:
            continue
        try:
            children = part.get_payload()
        except Exception:
            continue
        if isinstance(children, list):
            stack[0:0] = [(c, depth + 1) for c in children if isinstance(c, Message)]


_ATTACHED_MESSAGE_TYPES = {"message/rfc822", "message/global", "message/partial"}
_HEADERS_TYPES = {"text/rfc822-headers", "message/rfc822-headers", "message/global-headers"}
_DSN_TYPES = {"message/delivery-status", "message/global-delivery-status"}


def _ctype(part: Message) -> str:
    try:
        return part.get_content_type().lower()
    except Exception:
        return "text/plain"


def _param(part: Message, name: str) -> str:
    try:
        value = part.get_param(name)
    except Exception:
        return ""
    if isinstance(value, tuple):  # RFC 2231 (charset, language, value)
        value = value[2]
    return str(value or "").lower()


def _header(msg: Message, name: str) -> str:
    """One header as decoded text ('' when absent or unreadable)."""
    values = _headers(msg, name)
    return values[0] if values else ""


def _headers(msg: Message, name: str) -> list[str]:
    try:
        values = msg.get_all(name) or []
        return [_decode_header_value(v) for v in values]
    except Exception:
        return []


def _decode_header_value(value: object) -> str:
    text = str(value)
    if "=?" not in text:
        return " ".join(text.split())
    try:
        chunks = email.header.decode_header(text)
        out = []
        for data, charset in chunks:
            if isinstance(data, bytes):
                out.append(_decode_bytes(data, charset))
            else:
                out.append(data)
        return " ".join("".join(out).split())
    except Exception:
        return " ".join(text.split())


def _decode_bytes(data: bytes, charset: str | None) -> str:
    for candidate in (charset, "utf-8"):
        if not candidate:
            continue
        try:
            return data.decode(candidate)
        except (LookupError, UnicodeDecodeError, TypeError):
            continue
    return data.decode("latin-1", "replace")


def _part_text(part: Message) -> str:
    """Decoded text of a leaf part, whatever its charset or encoding says."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if payload is None:
        try:
            raw_payload = part.get_payload()
        except Exception:
            return ""
        if isinstance(raw_payload, list):  # message/* parsed into sub-messages
            return "\n".join(_message_as_text(m) for m in raw_payload if isinstance(m, Message))
        return str(raw_payload or "")[:_MAX_SCAN]
    if not isinstance(payload, bytes):
        return str(payload)[:_MAX_SCAN]
    return _decode_bytes(payload[:_MAX_SCAN], _param(part, "charset") or None)


def _message_as_text(msg: Message) -> str:
    try:
        return msg.as_string(policy=email.policy.compat32.clone(max_line_length=0))
    except Exception:
        try:
            return str(msg)
        except Exception:
            return ""


def _addresses(value: str) -> list[str]:
    try:
        pairs = email.utils.getaddresses([value])
    except Exception:
        pairs = []
    found = [addr.strip().lower() for _, addr in pairs if "@" in addr]
    return found or [m.lower() for m in _EMAIL_RE.findall(value)]


_EMAIL_RE = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+"
)
_MSGID_RE = re.compile(r"<[^<>\s]{1,250}@[^<>\s]{1,250}>")
# RFC 3463 enhanced status code; not part of an IP address or version number.
_STATUS_RE = re.compile(r"(?<![\w.])([245])\.(\d{1,3})\.(\d{1,3})(?!\.?\d)(?!\w)")
# RFC 5321 reply code at the start of an SMTP response.
_REPLY_CODE_RE = re.compile(r"(?<![\w.:/-])([245][0-5]\d)(?=[ -]\S)")


def _status_codes(text: str) -> list[str]:
    return _unique(".".join(m.groups()) for m in _STATUS_RE.finditer(text[:_MAX_SCAN]))


def _unique(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out


def _normalize_msgid(value: str) -> str:
    value = value.strip()
    if not value:
        return ""
    found = _MSGID_RE.search(value)
    if found:
        return found.group(0)
    token = value.split()[0].strip("<>")
    return f"<{token}>" if "@" in token else ""


def _own_reply_ids(msg: Message) -> list[str]:
    """In-Reply-To and References of the message itself (RFC 5322 §3.6.4)."""
    ids: list[str] = []
    for name in ("In-Reply-To", "References"):
        for value in _headers(msg, name):
            ids.extend(_MSGID_RE.findall(value))
    return _unique(ids)


# ---------------------------------------------------------------------------
# Embedded original message (inside DSN / ARF)


def _embedded_headers(msg: Message) -> list[Message]:
    """Header blocks of the returned original: message/rfc822 or text/rfc822-headers."""
    found: list[Message] = []
    for part in _walk(msg, into_attached=True):
        ctype = _ctype(part)
        if part is msg:
            continue
        if ctype in _ATTACHED_MESSAGE_TYPES:
            try:
                inner = part.get_payload()
            except Exception:
                continue
            if isinstance(inner, list):
                found.extend(m for m in inner[:1] if isinstance(m, Message))
            elif isinstance(inner, str):
                found.append(_parse_headers_text(_part_text(part)))
        elif ctype in _HEADERS_TYPES:
            found.append(_parse_headers_text(_part_text(part)))
    return found


def _parse_headers_text(text: str) -> Message:
    try:
        return email.message_from_string(text.lstrip()[:_MAX_SCAN], policy=email.policy.compat32)
    except Exception:
        return Message()


def _embedded_message_ids(msg: Message, inline_text: str = "") -> list[str]:
    ids = []
    for headers in _embedded_headers(msg):
        ids.append(_normalize_msgid(_header(headers, "Message-ID")))
    # Non-MIME bounces quote the original headers inline after a marker.
    for match in _INLINE_MSGID_RE.finditer(inline_text[:_MAX_SCAN]):
        ids.append(_normalize_msgid(match.group(1)))
    return _unique(ids)


_INLINE_MSGID_RE = re.compile(r"^[ \t>]*Message-ID:[ \t]*(\S[^\r\n]{0,300})", re.I | re.M)


# ---------------------------------------------------------------------------
# 1. Complaints (RFC 5965 ARF and recurring non-ARF feedback loops)


def _check_complaint(msg: Message) -> Classification | None:
    report = _feedback_report_part(msg)
    if report is not None:
        return _arf_complaint(msg, report)
    return _non_arf_complaint(msg)


def _feedback_report_part(msg: Message) -> Message | None:
    for part in _walk(msg):
        if _ctype(part) == "message/feedback-report":
            return part
    return None


def _parse_fields(text: str) -> list[dict[str, str]]:
    """Parse RFC 822-style field blocks (DSN, ARF) into dicts, one per block.

    Blocks are separated by blank lines (RFC 3464 §2.1). Badly formed reports
    omit the blank line, so a repeated field also starts a new block.
    Multi-valued fields (Original-Rcpt-To) are joined with "\n".
    """
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = ""
    for line in text[:_MAX_SCAN].splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
            current, last = {}, ""
            continue
        if line[0] in " \t" and last:
            current[last] += " " + line.strip()
            continue
        name, sep, value = line.partition(":")
        name = name.strip().lower()
        if not sep or not re.fullmatch(r"[a-z0-9-]{1,60}", name):
            continue
        if name in current and name in _DSN_RECORD_KEYS:
            blocks.append(current)
            current = {}
        if name in current:
            current[name] += "\n" + value.strip()
        else:
            current[name] = value.strip()
        last = name
    if current:
        blocks.append(current)
    return blocks


_DSN_RECORD_KEYS = {"final-recipient", "action", "status"}

# RFC 5965 §7.3 feedback types that are user complaints. "auth-failure"
# (RFC 6591) reports a DKIM/SPF failure, not a person pressing "spam", and
# "delivery" reports are not complaints either.
_NOT_COMPLAINT_FEEDBACK = {"auth-failure", "delivery", "not-spam"}


def _arf_complaint(msg: Message, report: Message) -> Classification | None:
    fields: dict[str, str] = {}
    for block in _parse_fields(_part_text(report)):
        for key, value in block.items():
            fields[key] = fields[key] + "\n" + value if key in fields else value
    feedback_type = fields.get("feedback-type", "").split()[0].lower() if fields.get("feedback-type") else ""
    ids = _embedded_message_ids(msg)
    if fields.get("original-message-id"):
        ids.append(_normalize_msgid(fields["original-message-id"]))
    ids = _unique(ids + _own_reply_ids(msg))
    if feedback_type in _NOT_COMPLAINT_FEEDBACK:
        return Classification(
            kind=UNRELATED,
            original_message_ids=tuple(ids),
            reason=f"RFC 5965 ARF Feedback-Type: {feedback_type} is not a complaint",
        )
    recipients: list[str] = []
    for value in fields.get("original-rcpt-to", "").split("\n"):
        recipients.extend(_addresses(value))
    source = "Original-Rcpt-To"
    if not recipients:
        recipients, source = _embedded_recipients(msg), "embedded To"
    return Classification(
        kind=COMPLAINT,
        recipients=tuple(_unique(recipients)),
        original_message_ids=tuple(ids),
        reason=f"RFC 5965 ARF Feedback-Type: {feedback_type or 'missing'}; recipient from {source}",
    )


def _embedded_recipients(msg: Message) -> list[str]:
    out: list[str] = []
    for headers in _embedded_headers(msg):
        for name in ("To", "X-RCPT-TO", "X-Original-To", "Delivered-To"):
            out.extend(_addresses(_header(headers, name)))
            if out:
                return _unique(out)
    return []


# Hotmail/Outlook.com JMRP forwards the complained-about mail with this header
# on top; it recurs across all their non-ARF reports.
_JMRP_HEADER = "X-HmXmrOriginalRecipient"
# Old AOL "scomp" and other pre-ARF loops: a report sender plus the original
# mail attached. Matching on the sender alone would be too loose, so an
# attached message is required too.
_NON_ARF_SENDERS = re.compile(r"^(scomp@aol\.net|staff@hotmail\.com|feedbackloop@|fbl@|abuse-report@)", re.I)
_COMPLAINT_SUBJECT = re.compile(r"complaint about message from|abuse report|spam report|feedback[- ]loop", re.I)


def _non_arf_complaint(msg: Message) -> Classification | None:
    holders = [msg, *_embedded_headers(msg)]
    for holder in holders:
        value = _header(holder, _JMRP_HEADER)
        if value:
            ids = _embedded_message_ids(msg) if holder is not msg else [
                _normalize_msgid(_header(msg, "Message-ID"))
            ]
            return Classification(
                kind=COMPLAINT,
                recipients=tuple(_unique(_addresses(value))),
                original_message_ids=tuple(_unique(ids + _own_reply_ids(msg))),
                reason=f"Hotmail/Outlook JMRP complaint ({_JMRP_HEADER})",
            )
    sender = ",".join(_addresses(_header(msg, "From")))
    if _NON_ARF_SENDERS.search(sender) and _COMPLAINT_SUBJECT.search(_header(msg, "Subject")):
        if _embedded_headers(msg):
            return Classification(
                kind=COMPLAINT,
                recipients=tuple(_embedded_recipients(msg)),
                original_message_ids=tuple(_unique(_embedded_message_ids(msg) + _own_reply_ids(msg))),
                reason=f"non-ARF feedback-loop report from {sender}",
            )
    return None


# ---------------------------------------------------------------------------
# 2. Bounces


@dataclass
class _Failure:
    recipient: str
    status: str  # RFC 3463 code or ""
    text: str  # diagnostic text used to judge hard/soft
    action: str = ""


def _check_bounce(msg: Message) -> Classification | None:
    notification = _notification_text(msg)
    if _is_challenge_response(msg, notification):
        return None  # auto_reply check will claim it
    for finder in (_dsn_bounce, _ses_notification, _prose_bounce):
        result = finder(msg, notification)
        if result is not None:
            return result
    return None


def _notification_text(msg: Message) -> str:
    """Human-readable text of a bounce, without the returned original."""
    texts = []
    for part in _walk(msg):
        ctype = _ctype(part)
        if part.is_multipart() or ctype in _DSN_TYPES or ctype in _HEADERS_TYPES:
            continue
        if ctype in _ATTACHED_MESSAGE_TYPES or not ctype.startswith("text/"):
            continue
        text = _part_text(part)
        if ctype == "text/html":
            text = _html_to_text(text)
        texts.append(text)
        if sum(len(t) for t in texts) > _MAX_SCAN:
            break
    return _cut_returned_copy("\n".join(texts))


# Markers after which a non-MIME bounce quotes the original message.
_RETURNED_COPY_RE = re.compile(
    r"^[ \t>*-]*(?:"
    r"below this line is a copy of the message"
    r"|-* ?this is a copy of the message"
    r"|below is a copy of the original message"
    r"|original message follows"
    r"|(?:unsent|returned|undelivered|original|rejected) message follows"
    r"|-+ ?(?:original|returned|undelivered|unsent) message ?-+"
    r"|message headers follow"
    r"|the (?:original )?(?:message|message headers?|header of the original message) (?:is|are|was|were) (?:following|attached|included|below|as follows)"
    r"|content-type: message/rfc822"
    r")",
    re.I | re.M,
)


def _cut_returned_copy(text: str) -> str:
    match = _RETURNED_COPY_RE.search(text)
    return text[: match.start()] if match else text


# --- 2a. RFC 3464 delivery status notifications


def _dsn_bounce(msg: Message, notification: str) -> Classification | None:
    dsn_parts = [p for p in _walk(msg) if _ctype(p) in _DSN_TYPES]
    if not dsn_parts:
        return None
    records = []
    for part in dsn_parts:
        blocks = _parse_fields(_part_text(part))
        records.extend(b for b in blocks if "final-recipient" in b or "original-recipient" in b or "action" in b)
    failures, delivered = _dsn_failures(records, notification)
    ids = _unique(_embedded_message_ids(msg) + _own_reply_ids(msg))
    if not failures:
        if delivered:
            # RFC 3464 Action: delivered / relayed / expanded — a success
            # notice, nothing failed.
            return Classification(
                kind=UNRELATED,
                original_message_ids=tuple(ids),
                reason=f"RFC 3464 DSN reports success (Action: {delivered[0]})",
            )
        return None  # report without per-recipient fields: try the prose
    return _bounce_result(failures, ids, source="RFC 3464 DSN", extra_codes=_status_codes(notification))


def _dsn_failures(records: list[dict[str, str]], notification: str) -> tuple[list[_Failure], list[str]]:
    failures: list[_Failure] = []
    delivered: list[str] = []
    single = len(records) == 1
    for record in records:
        action = record.get("action", "").split()[0].lower() if record.get("action") else ""
        status_codes = _status_codes(record.get("status", ""))
        status = status_codes[0] if status_codes else ""
        if action in {"delivered", "relayed", "expanded"} or (not action and status.startswith("2")):
            delivered.append(action or "delivered")
            continue
        if action not in {"failed", "delayed", ""} or (not action and not status):
            continue
        recipient = _dsn_address(record.get("final-recipient", "")) or _dsn_address(
            record.get("original-recipient", "")
        )
        diagnostic = record.get("diagnostic-code", "")
        diagnostic = diagnostic.split(";", 1)[1] if ";" in diagnostic[:20] else diagnostic
        # Without a Diagnostic-Code the reason is only in the prose; with one
        # recipient the whole prose is about it.
        text = diagnostic if diagnostic.strip() or not single else notification
        status = _more_specific_status(status, _status_codes(diagnostic))
        failures.append(_Failure(recipient=recipient, status=status, text=text, action=action or "failed"))
    return failures, delivered


def _dsn_address(value: str) -> str:
    """"rfc822; user@example.com" -> "user@example.com" (RFC 3464 §2.3.2)."""
    if not value:
        return ""
    _, _, address = value.rpartition(";")
    address = address.strip().strip("<>").strip().lower()
    if "@" not in address:
        return ""
    found = _EMAIL_RE.search(address)
    # Keep quoted local parts ("a..b"@example.org) as written.
    return address if address.startswith('"') or not found else found.group(0).lower()


def _more_specific_status(status: str, candidates: list[str]) -> str:
    """Many MTAs put 5.0.0 in Status and the real code in Diagnostic-Code."""
    for code in candidates:
        if not status or (status.endswith(".0.0") and code[0] == status[0] and not code.endswith(".0.0")):
            return code
    return status


# --- 2b. Amazon SES notifications delivered as e-mail (SNS subscription)


def _ses_notification(msg: Message, notification: str) -> Classification | None:
    start = notification.find('{"notificationType"')
    if start < 0:
        start = notification.find('{"eventType"')
    if start < 0:
        return None
    data = _loads_prefix(notification[start:])
    if not isinstance(data, dict):
        return None
    kind = str(data.get("notificationType") or data.get("eventType") or "").lower()
    mail = data.get("mail") if isinstance(data.get("mail"), dict) else {}
    ids = _ses_message_ids(mail)
    if kind == "complaint":
        complaint = data.get("complaint") or {}
        recipients = [str(r.get("emailAddress", "")).lower() for r in complaint.get("complainedRecipients", [])]
        return Classification(
            kind=COMPLAINT,
            recipients=tuple(_unique(_addresses(",".join(recipients)))),
            original_message_ids=tuple(ids),
            reason=f"Amazon SES complaint notification ({complaint.get('complaintFeedbackType') or 'no type'})",
        )
    if kind != "bounce":
        return None
    bounce = data.get("bounce") or {}
    failures = []
    for rcpt in bounce.get("bouncedRecipients", []):
        if not isinstance(rcpt, dict):
            continue
        text = str(rcpt.get("diagnosticCode") or "")
        status = _more_specific_status(str(rcpt.get("status") or ""), _status_codes(text))
        if not text and str(bounce.get("bounceType")) == "Transient":
            status = status or "4.0.0"
        failures.append(_Failure(recipient=str(rcpt.get("emailAddress", "")).lower(), status=status, text=text))
    if not failures:
        return None
    return _bounce_result(failures, ids, source=f"Amazon SES bounce notification ({bounce.get('bounceType')})")


def _loads_prefix(text: str) -> object:
    # The JSON may be followed by an SNS footer, or wrapped over lines.
    candidate = text.replace("\r", "")
    try:
        return json.JSONDecoder().raw_decode(candidate)[0]
    except ValueError:
        pass
    try:
        return json.JSONDecoder().raw_decode(candidate.replace("\n", ""))[0]
    except ValueError:
        return None


def _ses_message_ids(mail: dict) -> list[str]:
    ids = []
    for header in mail.get("headers", []) or []:
        if isinstance(header, dict) and str(header.get("name", "")).lower() == "message-id":
            ids.append(_normalize_msgid(str(header.get("value", ""))))
    common = mail.get("commonHeaders") if isinstance(mail.get("commonHeaders"), dict) else {}
    ids.append(_normalize_msgid(str(common.get("messageId", ""))))
    return _unique(ids)


# --- 2c. Non-standard bounces (prose from qmail, Exim, Postfix, Sendmail, ...)

_DAEMON_SENDER_RE = re.compile(
    r"mailer-daemon|mail-daemon|mailerdaemon|postmaster|post_master|mail delivery (subsystem|system)"
    r"|mail administrator|ndr administrator|nobody@|bounce[sd]?@",
    re.I,
)
_BOUNCE_SUBJECT_RE = re.compile(
    r"undeliver|undelivered|returned mail|returning message|mail delivery fail|delivery (status )?notification"
    r"|delivery fail|failure notice|failed delivery|delivery failure|non[- ]?delivery|could not be delivered"
    r"|not delivered|delivery problem|mail system error|delivery status|delayed mail|mail failure"
    r"|returned to sender|error sending your mail|unzustellbar|nicht zustellbar|non remis|non recapitabile"
    r"|no entregado|onbestelbaar|não entregue",
    re.I,
)
_BOUNCE_BODY_RE = re.compile(
    r"this is the qmail-send program"
    r"|created automatically by mail delivery software"
    r"|this is the mail system at host"
    r"|this is the mailer-daemon"
    r"|this is the (dragonfly mail agent|.{0,40}mail delivery agent)"
    r"|(permanent|temporary|transient) (fatal )?errors?"
    r"|could not be delivered to one or more"
    r"|(message|mail) (could not|couldn't|cannot|can't|was not|wasn't) (be )?deliver"
    r"|delivery to the following recipients? (failed|has been delayed)"
    r"|did not reach the following recipient"
    r"|was not delivered to"
    r"|unable to deliver (your )?message"
    r"|an error (has occurred|occurred) while attempting to deliver"
    r"|there was an error delivering your mail"
    r"|transcript of session follows"
    r"|remote host said:"
    r"|smtp error from remote mail server"
    r"|delivery has failed to these recipients"
    r"|i'm afraid i wasn't able to deliver"
    r"|your message was rejected"
    r"|delivery (to .{1,80} )?(has been )?delayed"
    r"|(still being|will be) retried"
    r"|not yet been delivered",
    re.I,
)


def _prose_bounce(msg: Message, notification: str) -> Classification | None:
    failed_header = ",".join(_headers(msg, "X-Failed-Recipients"))
    if not (failed_header or _looks_like_bounce(msg, notification)):
        return None
    failures = _prose_failures(msg, notification, failed_header)
    ids = _unique(_embedded_message_ids(msg, _returned_copy_text(msg)) + _own_reply_ids(msg))
    source = "X-Failed-Recipients" if failed_header else "bounce prose"
    if not failures:
        recipients = _flufl_recipients(msg)
        if not recipients:
            recipients = _embedded_recipients(msg) or _inline_original_to(msg)
        failures = [_Failure(recipient=r, status="", text=notification) for r in recipients]
        source += " (recipient from fallback)"
    if not failures:
        failures = [_Failure(recipient="", status="", text=notification)]
    return _bounce_result(failures, ids, source=source, extra_codes=_status_codes(notification))


def _looks_like_bounce(msg: Message, notification: str) -> bool:
    sender = _header(msg, "From") + " " + _header(msg, "Sender")
    null_sender = _header(msg, "Return-Path").strip() in {"<>", ""} and "Return-Path" in msg
    daemon = bool(_DAEMON_SENDER_RE.search(sender)) or null_sender
    subject = bool(_BOUNCE_SUBJECT_RE.search(_header(msg, "Subject")))
    body = bool(_BOUNCE_BODY_RE.search(notification[:20_000]))
    # One signal alone is not enough: a person may write "returned mail" in a
    # subject, and autoresponders also send from a null return path.
    return (daemon and (subject or body)) or (subject and body)


def _returned_copy_text(msg: Message) -> str:
    texts = []
    for part in _walk(msg):
        if not part.is_multipart() and _ctype(part).startswith("text/"):
            text = _part_text(part)
            match = _RETURNED_COPY_RE.search(text)
            if match:
                texts.append(text[match.start():])
    return "\n".join(texts)


def _inline_original_to(msg: Message) -> list[str]:
    copy = _returned_copy_text(msg)
    match = re.search(r"^To:[ \t]*([^\r\n]{1,500})", copy, re.M | re.I)
    return _unique(_addresses(match.group(1))) if match else []


def _prose_failures(msg: Message, notification: str, failed_header: str) -> list[_Failure]:
    ours = _our_addresses(msg)
    if failed_header:
        recipients = [a for a in _addresses(failed_header) if a not in ours]
    else:
        recipients = _prose_recipients(notification, ours)
    if not recipients:
        return []
    segments = _segments(notification, recipients)
    failures = []
    for recipient in recipients:
        text = segments.get(recipient) or notification
        codes = _status_codes(text)
        failures.append(_Failure(recipient=recipient, status=_pick_status(codes), text=text))
    return failures


def _our_addresses(msg: Message) -> set[str]:
    """Addresses on the bounce itself: the daemon and us, never the failed one."""
    found: set[str] = set()
    for name in ("From", "To", "Return-Path", "Delivered-To", "Reply-To", "Sender", "Errors-To"):
        for value in _headers(msg, name):
            found.update(_addresses(value))
    return found


# Where an MTA names the failed address, strongest first.
_RECIPIENT_PATTERNS = [
    # qmail / Postfix / Sendmail: "<user@example.com>:" or "<user@example.com>" alone on a line
    re.compile(r"^[ \t]*<(?P<a>[^<>\s]+@[^<>\s]+)>[ \t]*(?::|\(expanded from|\.{3}|$)", re.M),
    # SMTP transcript: "RCPT TO:<user@example.com>"
    re.compile(r"RCPT TO:[ \t]*<(?P<a>[^<>\s]+@[^<>\s]+)>", re.I),
    # "550 5.1.1 <user@example.com>... User unknown"
    re.compile(r"\b[45]\d\d[ -]+(?:[45]\.\d{1,3}\.\d{1,3}[ \t]+)?<?(?P<a>[^<>\s:;,]+@[^<>\s:;,]+?)>?(?:\.{3}|:|[ \t])", re.I),
    # "user@example.com: 550 ..." / "user@example.com" alone on a line
    re.compile(r"^[ \t]*(?P<a>[^<>\s:;,()\"]+@[^<>\s:;,()\"]+)[ \t]*(?::|$| on | \(|\s+[45]\d\d[ -])", re.M),
]
_LOOSE_RECIPIENT_CONTEXT = re.compile(
    r"(?:to|recipients?|address(?:es)?|user|for|mailbox|account)[\s:]{0,5}(?:\(s\))?[\s:]{0,5}[\"<(]?$", re.I
)


def _prose_recipients(notification: str, ours: set[str]) -> list[str]:
    text = notification[:_MAX_SCAN]
    for pattern in _RECIPIENT_PATTERNS:
        found = [_clean_address(m.group("a")) for m in pattern.finditer(text)]
        found = [a for a in found if a and a not in ours and not _is_daemon_address(a)]
        if found:
            return _unique(found)
    # Last resort: an address right after "to"/"recipient"/"address".
    loose = []
    for match in _EMAIL_RE.finditer(text):
        before = text[max(0, match.start() - 40): match.start()]
        address = match.group(0).lower()
        if address not in ours and not _is_daemon_address(address) and _LOOSE_RECIPIENT_CONTEXT.search(before):
            loose.append(address)
    return _unique(loose)


def _clean_address(value: str) -> str:
    found = _EMAIL_RE.search(value.strip().strip("<>.,;:'\""))
    return found.group(0).lower() if found else ""


def _is_daemon_address(address: str) -> bool:
    local = address.split("@", 1)[0]
    return local in {"mailer-daemon", "postmaster", "mailerdaemon", "mail-daemon"}


def _segments(text: str, recipients: list[str]) -> dict[str, str]:
    """Split the prose into one stretch per recipient when several failed."""
    if len(recipients) < 2:
        return {}
    lowered = text.lower()
    starts = []
    for recipient in recipients:
        position = lowered.find(recipient)
        if position >= 0:
            starts.append((position, recipient))
    starts.sort()
    segments = {}
    for index, (position, recipient) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        segments[recipient] = text[position: min(end, position + 2000)]
    return segments


def _pick_status(codes: list[str]) -> str:
    """Prefer a specific code (5.1.1) over a generic one (5.0.0)."""
    specific = [c for c in codes if not c.endswith(".0.0")]
    return (specific or codes or [""])[0]


def _flufl_recipients(msg: Message) -> list[str]:
    """flufl.bounce as a last resort for the address only, never hard/soft.

    It reports mailbox-full as permanent and raises on a message without
    From:, hence the wide try.
    """
    try:
        from flufl.bounce import all_failures

        compat = email.message_from_bytes(msg.as_bytes(policy=email.policy.compat32))
        temporary, permanent = all_failures(compat)
    except Exception:
        return []
    found = []
    for value in list(permanent) + list(temporary):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        found.extend(_addresses(text))
    return _unique(found)


# --- 2d. Hard or soft


@dataclass(frozen=True)
class _Verdict:
    bounce_type: str
    why: str


# Soft even with a 5.x.x code: a full mailbox empties (RFC 3463 X.2.2 is
# "persistent transient" in practice, and some MTAs send 5.x.x for it).
_MAILBOX_FULL_RE = re.compile(
    r"mailbox (is )?full|mailbox.{0,30}(is )?full|over ?quota|quota (exceeded|full)|exceed(s|ed)? (the |his |her |their |its )?"
    r"(storage|quota|mailbox)|insufficient (system )?storage|disk quota|mail ?(box|folder) (is )?full"
    r"|mailfolder is full|not enough (storage|space)|out of (storage|space)|storage (limit|full)"
    r"|boîte (aux lettres )?pleine|postfach (ist )?voll|buzón lleno|casella (piena|.{0,20}piena)",
    re.I,
)
# Permanent reasons tied to the address itself: suppress after one event.
_HARD_STRONG_RE = re.compile(
    r"user ?unknown|unknown (user|recipient|local[- ]part|mailbox|address)|recipient unknown|address unknown"
    r"|no such (user|recipient|mailbox|account|address|local user|person)"
    r"|(user|recipient|mailbox|account|address|e-?mail address)( name)? (is )?(not found|not recognized|invalid)"
    r"|(user|recipient|mailbox|account|address|e-?mail account|email address) (that you tried to reach )?(does not|doesn't|did not) exist"
    r"|does not exist|doesn't exist|not listed in (the )?(domino )?directory|not a valid (mailbox|recipient|user)"
    r"|invalid (recipient|mailbox|user|address)|unknown or illegal alias|address rejected: user unknown"
    r"|no mailbox here|mailbox not found|not our customer|recipient address rejected: access denied"
    r"|doesn't have an? .{1,40} account|user doesn't have|not have an account|addressee unknown"
    r"|host (or domain name )?(not found|unknown)|unknown host|domain (not found|does not exist|unknown)"
    r"|no such domain|invalid domain|unrouteable|unroutable|domain name not found|nxdomain|no mx"
    r"|has moved|user has moved|no longer (valid|active|available|in use|exists|with|employed|accepts?)"
    r"|does not accept (e-?)?mail|null mx|domain does not accept"
    r"|utilisateur inconnu|adresse inconnue|destinataire inconnu|n'existe pas|unbekannt|existiert nicht"
    r"|usuario desconocido|no existe|utente sconosciuto|non esiste|desconhecido|não existe|onbekend",
    re.I,
)
# Reasons that may heal or are about us (content, reputation, rate, route).
_SOFT_RE = re.compile(
    r"too (large|big)|size (limit|exceed)|exceeds? (the )?(maximum )?(message )?size|message size"
    r"|spam|junk|blocked|block ?list|black ?list|blacklisted|listed (in|on|at|by)|\brbl\b|dnsbl|spamhaus"
    r"|reputation|policy|prohibited|not (allowed|permitted|authorized)|relay(ing)? (access )?denied"
    r"|relay not permitted|unauthenticated|authentication|\bspf\b|\bdkim\b|\bdmarc\b|reverse dns|\bptr\b"
    r"|rdns|greylist|gr[ae]ylisted|try (again )?later|temporar|rate limit|too many|exceeded (the )?(rate|limit)"
    r"|expired|time ?out|timed out|retry time|deferred|delayed|connection (refused|reset|lost)|network"
    r"|name ?server|servfail|\btls\b|starttls|virus|malware|content (rejected|filter)|suspicious"
    r"|loop|hop count|service unavailable|system (error|busy)|resources|not member|refused"
    r"|sender (address )?(rejected|denied|verify|domain)|dns (error|failure)|lookup fail",
    re.I,
)
# Weaker permanent wording; only after the soft reasons have had their say.
_HARD_WEAK_RE = re.compile(
    r"mailbox (is )?(unavailable|not available|disabled|inactive)|account (is |has been )?"
    r"(disabled|deactivated|inactive|closed|terminated|suspended|discontinued|removed|deleted)"
    r"|disabled recipient|recipient (address )?(rejected|not accepted|invalid)|address (rejected|invalid)"
    r"|is disabled|inactive (user|account|mailbox)|mailbox .{0,20}(disabled|deactivated)",
    re.I,
)
# RFC 3463 codes that name the address or domain as permanently bad.
_HARD_CODES = {
    "5.1.0": "other address status",
    "5.1.1": "bad destination mailbox address",
    "5.1.2": "bad destination system address",
    "5.1.3": "bad destination mailbox address syntax",
    "5.1.6": "destination mailbox has moved",
    "5.1.10": "recipient address has null MX (RFC 7505)",
    "5.4.4": "unable to route (no such domain)",
}


def _bounce_verdict(failure: _Failure) -> _Verdict:
    status, text, action = failure.status, failure.text[:20_000], failure.action
    if action == "delayed":
        return _Verdict(SOFT, "DSN Action: delayed")
    if status.startswith("4") or _only_transient_replies(text, status):
        return _Verdict(SOFT, "transient (4.x.x) failure")
    if _MAILBOX_FULL_RE.search(text) or status in {"5.2.2", "5.2.3"}:
        return _Verdict(SOFT, "mailbox full / over quota")
    match = _HARD_STRONG_RE.search(text)
    if match:
        return _Verdict(HARD, match.group(0).lower())
    match = _SOFT_RE.search(text)
    if match:
        return _Verdict(SOFT, match.group(0).lower())
    match = _HARD_WEAK_RE.search(text)
    if match:
        return _Verdict(HARD, match.group(0).lower())
    if status in _HARD_CODES:
        return _Verdict(HARD, _HARD_CODES[status])
    # Permanent but unexplained (5.0.0, 5.5.x, 5.7.x, ...): one such event is
    # not enough to suppress an address.
    return _Verdict(SOFT, "permanent failure without a recognised address reason")


def _only_transient_replies(text: str, status: str) -> bool:
    if status:
        return False
    codes = {m.group(1)[0] for m in _REPLY_CODE_RE.finditer(text[:20_000])}
    return codes == {"4"}


def _bounce_result(
    failures: list[_Failure], ids: list[str], *, source: str, extra_codes: list[str] | None = None
) -> Classification:
    verdicts = [_bounce_verdict(f) for f in failures]
    recipients, types = [], []
    for failure, verdict in zip(failures, verdicts):
        if failure.recipient and failure.recipient not in recipients:
            recipients.append(failure.recipient)
            types.append(verdict.bounce_type)
    overall = HARD if verdicts and all(v.bounce_type == HARD for v in verdicts) else SOFT
    codes = _unique([f.status for f in failures] + (extra_codes or []))
    first = failures[0]
    action = f" Action: {first.action}" if first.action else ""
    status = f" Status: {first.status}" if first.status else ""
    return Classification(
        kind=BOUNCE,
        bounce_type=overall,
        recipients=tuple(recipients),
        status_codes=tuple(c for c in codes if c[0] in "45"),
        original_message_ids=tuple(ids),
        reason=f"{source}{action}{status} ({verdicts[0].why})",
        recipient_types=tuple(types),
    )


# ---------------------------------------------------------------------------
# 3. Auto-replies (RFC 3834) and challenge-response systems

# Challenge-response systems hold our mail until we "verify"; they are not a
# failed address and not a person, so they count as auto-replies.
_CHALLENGE_RE = re.compile(
    r"requires? (your )?confirmation|confirm this mail server|whitelist|white-list|pre-?approved"
    r"|verify (that )?you are (a )?(human|real person|person)|prove (that )?you are (a )?human"
    r"|allowed (senders )?list|approved senders|guest list|challenge[- ]response"
    r"|click (on )?the (following )?link to (have your address added|verify|confirm|deliver)"
    r"|boxbe|bluebottle|spamarrest|sender verification|verify your (e-?mail|address|identity) to",
    re.I,
)
_CHALLENGE_HEADERS = ("X-Bluebottle-Request", "X-Boxbe-Notice", "X-Spamarrest-Challenge", "X-Challenge")


def _is_challenge_response(msg: Message, notification: str) -> bool:
    if any(name in msg for name in _CHALLENGE_HEADERS):
        return True
    return bool(_CHALLENGE_RE.search(notification[:20_000]))


_OOO_SUBJECT_RE = re.compile(
    r"out of (the )?office|\booo\b|auto(matic|matische|matisch|matica|mática|matyczna|matická)?[ _-]?"
    r"(reply|response|respons|antwort|antwoord|risposta|respuesta|resposta|odpowied|réponse|odpověď|svar)"
    r"|auto[- ]?reply|autoreply|autorespon|away from (the |my )?(office|desk)|on (vacation|holiday|leave)"
    r"|vacation (reply|message|notice)|abwesen|außer haus|ausser haus|nicht im büro|réponse automatique"
    r"|absence|absent|fuera de la oficina|ausente|fuori (ufficio|sede)|assente|afwezig|niet aanwezig"
    r"|buiten kantoor|fora do escritório|nieobecn|poza biurem|frånvaro|autosvar|fravær|poissa"
    r"|nepřítom|自動返信|不在|自动回复|автоответ|автоматический ответ|вне офиса|otomatik yanıt",
    re.I,
)
# Strong first-person wording only: a person may mention a holiday in passing.
_OOO_BODY_RE = re.compile(
    r"this is an? automat(ed|ic) (reply|response|message|notification)"
    r"|i am (currently )?(out of (the )?office|away from (the )?office|on (annual |parental |maternity )?(leave|vacation|holiday))"
    r"|i('m| am) (currently )?out of (the )?office"
    r"|i will be out of (the )?office|with (limited|no) access to (my )?e-?mail"
    r"|ich bin (derzeit |zurzeit |momentan |bis )?.{0,40}(nicht im büro|abwesend|im urlaub)"
    r"|je suis (actuellement )?absent|estoy (actualmente )?fuera de la oficina|sono (attualmente )?fuori ufficio"
    r"|ik ben (momenteel )?(afwezig|niet aanwezig|met vakantie)",
    re.I,
)


def _check_auto_reply(msg: Message) -> Classification | None:
    ids = tuple(_unique(_own_reply_ids(msg) + _embedded_message_ids(msg)))
    reason = _auto_reply_reason(msg)
    if reason:
        return Classification(kind=AUTO_REPLY, original_message_ids=ids, reason=reason)
    return None


def _auto_reply_reason(msg: Message) -> str:
    auto_submitted = _header(msg, "Auto-Submitted").lower()
    # RFC 3834 §5: any value other than "no" marks an automatic message.
    if auto_submitted and not auto_submitted.startswith("no"):
        return f"RFC 3834 Auto-Submitted: {auto_submitted}"
    for name in ("X-Autoreply", "X-Autorespond", "X-Autoresponder", "X-Auto-Reply"):
        if _header(msg, name):
            return f"{name} header"
    suppress = _header(msg, "X-Auto-Response-Suppress").lower()
    if suppress and re.search(r"\b(all|oof|autoreply)\b", suppress):
        return f"Exchange X-Auto-Response-Suppress: {suppress}"
    notification = _notification_text(msg)
    if _is_challenge_response(msg, notification):
        return "challenge-response system"
    subject = _header(msg, "Subject")
    if _OOO_SUBJECT_RE.search(subject):
        return f"out-of-office subject: {subject[:80]}"
    precedence = _header(msg, "Precedence").lower()
    is_list = bool(_header(msg, "List-Id") or _header(msg, "List-Unsubscribe"))
    # Autoresponders mark their own mail Precedence: bulk/junk (RFC 3834 §3.1.8
    # asks responders to honour it); with list headers it is a newsletter.
    if precedence in {"bulk", "junk", "auto_reply", "auto-reply"} and not is_list:
        return f"Precedence: {precedence}"
    if _OOO_BODY_RE.search(_reply_text(msg)[:3000]):
        return "out-of-office wording"
    # RFC 3834 §3.3 / RFC 5321 §4.5.5: automatic mail goes out with a null
    # return path; a person's mail never does.
    if "Return-Path" in msg and _header(msg, "Return-Path").strip() in {"<>", ""}:
        return "null return path (Return-Path: <>)"
    return ""


# ---------------------------------------------------------------------------
# 4. Unrelated traffic


def _check_unrelated(msg: Message) -> Classification | None:
    precedence = _header(msg, "Precedence").lower()
    is_list = bool(_header(msg, "List-Id") or _header(msg, "List-Unsubscribe"))
    replying = bool(_header(msg, "In-Reply-To"))
    # Decision: newsletters and mailing-list posts (List-Id/List-Unsubscribe,
    # RFC 2369/2919, or Precedence: list/bulk) are "unrelated", not
    # auto-replies: they answer nothing we sent and must not stop a sequence.
    # A list post that replies to a thread (In-Reply-To) is left to the human
    # check so correlation can still match it.
    if (is_list and not replying) or precedence == "list" and not replying:
        return Classification(kind=UNRELATED, reason="newsletter / mailing-list traffic")
    if not msg.keys() and not _reply_text(msg).strip():
        return Classification(kind=UNRELATED, reason="empty message")
    return None


# ---------------------------------------------------------------------------
# 5. Human replies and unsubscribe requests

_UNSUBSCRIBE_SUBJECT_RE = re.compile(r"^\s*((re|aw|sv|fw|fwd|wg|tr|rv)\s*:\s*)*(unsubscribe|remove( me)?|opt[ -]?out|stop)\b", re.I)
_UNSUBSCRIBE_RE = re.compile(
    r"\bunsubscribe\b|\bremove me\b|\bremove (my|this|our) (e-?mail|address|name|contact)"
    r"|\btake (me|us|my (e-?mail|address)) off\b|\bstop (e-?mailing|emailing|sending|contacting|writing)\b"
    r"|\b(do not|don't|dont|never) (e-?mail|contact|write to|message) (me|us)( again)?\b"
    r"|\bopt(-| )?(me )?out\b|\bplease remove\b|\bno more e-?mails\b|\bnot interested[,.! -]+(please )?remove\b"
    r"|\b(abmelden|austragen|abbestellen)\b|keine (weiteren )?(e-?mails|nachrichten)"
    r"|désabonn|désinscri|retirez[- ]moi|ne plus recevoir|me désinscrire"
    r"|dar(me)? de baja|no me (envíe|envíen|escriba|contacte)|eliminar(me)? de (su|la|vuestra) lista"
    r"|cancellami|disiscriv|rimuovetemi|rimuovermi|non (scrivermi|contattarmi)"
    r"|uitschrijven|afmelden|verwijder (mij|me)|descadastr|remover da lista|cancelar (a )?inscrição"
    r"|wypisz mnie|usuń mnie|wypisać",
    re.I,
)
# Footers that mention unsubscribing are not a request.
_FOOTER_LINE_RE = re.compile(r"https?://|mailto:|to unsubscribe from|you received this|click here|manage (your )?subscription", re.I)


def _check_human(msg: Message) -> Classification:
    text = _reply_text(msg)
    ids = tuple(_own_reply_ids(msg))
    subject = _header(msg, "Subject")
    if _UNSUBSCRIBE_SUBJECT_RE.search(subject) and len(text) < 500:
        return Classification(
            kind=UNSUBSCRIBE_REQUEST, original_message_ids=ids, reason=f"subject asks to unsubscribe: {subject[:80]}", reply_text=text
        )
    phrase = _unsubscribe_phrase(text)
    if phrase:
        return Classification(
            kind=UNSUBSCRIBE_REQUEST, original_message_ids=ids, reason=f"reply asks to stop: {phrase!r}", reply_text=text
        )
    return Classification(kind=HUMAN_REPLY, original_message_ids=ids, reason="person's mail", reply_text=text)


def _unsubscribe_phrase(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    # Requests to stop are short and come first; signatures and disclaimers
    # further down often mention "unsubscribe" without asking for anything.
    for line in lines[:8]:
        if line.strip() in {"--", "-- "} or _FOOTER_LINE_RE.search(line):
            continue
        match = _UNSUBSCRIBE_RE.search(line)
        if match:
            return match.group(0)
    return ""


def _reply_text(msg: Message) -> str:
    body = _body_text(msg)
    return extract_reply_text(body)


def _body_text(msg: Message) -> str:
    plain, html = "", ""
    for part in _walk(msg):
        ctype = _ctype(part)
        if part.is_multipart() or _is_attachment(part):
            continue
        if ctype == "text/plain" and not plain:
            plain = _part_text(part)
        elif ctype == "text/html" and not html:
            html = _part_text(part)
    if plain.strip():
        return plain
    return _html_to_text(html) if html else ""


def _is_attachment(part: Message) -> bool:
    try:
        disposition = (part.get("Content-Disposition") or "").lower()
    except Exception:
        return False
    return disposition.startswith("attachment")


# Lines that start the quoted history, in the styles of common clients.
_QUOTE_HEADER_RES = [
    re.compile(r"^[ \t>]*-*\s*On\b.{0,300}\bwrote\s*:?\s*$", re.I | re.S),  # Gmail, Apple, Thunderbird
    re.compile(r"^[ \t]*Am\b.{0,300}\bschrieb\b.{0,100}:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*Le\b.{0,300}\ba écrit\s*:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*El\b.{0,300}\bescribió\s*:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*Il\b.{0,300}\bha scritto\s*:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*Op\b.{0,300}\bschreef\b.{0,100}:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*Em\b.{0,300}\bescreveu\s*:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*W dniu\b.{0,300}\bpisze\s*:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*(Den|På)\b.{0,300}\bskrev\b.{0,100}:\s*$", re.I | re.S),
    re.compile(r"^[ \t]*\d{4}[/.-]\d{1,2}[/.-]\d{1,2}.{0,200}<[^>\s]+@[^>\s]+>:?\s*$", re.S),  # Gmail, some locales
]
_SEPARATOR_RE = re.compile(
    r"^[ \t]*(-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|mensaje original"
    r"|messaggio originale|oorspronkelijk bericht|mensagem original|wiadomość oryginalna|oryginalna wiadomość"
    r"|forwarded message|weitergeleitete nachricht)\s*-*|_{10,}|begin forwarded message:|-{5,}\s*mail original\s*-*)\s*$",
    re.I,
)
_FROM_LINE_RE = re.compile(r"^[ \t>]*\*?(from|von|de|da|van|od|fra|från)\s*:\*?\s*\S", re.I)
_HEADER_BLOCK_LINE_RE = re.compile(
    r"^[ \t>]*\*?(sent|date|to|subject|cc|gesendet|datum|an|betreff|envoyé|objet|à|enviado|asunto|para"
    r"|inviato|oggetto|verzonden|onderwerp|aan|data|wysłano|temat|sendt|skickat|ämne)\s*:", re.I
)


def extract_reply_text(body: str) -> str:
    """The new text of a reply: everything above the quoted history.

    Best effort over the common client styles: "On ... wrote:", localized
    variants, "-----Original Message-----", Outlook "From:/Sent:" blocks and
    ">"-quoted lines. A bottom-posted reply (quote first) keeps the text below.
    """
    lines = body[:_MAX_SCAN].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cut = _quote_start(lines)
    head = lines[:cut] if cut is not None else lines
    kept = [line for line in head if not line.lstrip().startswith(">")]
    text = "\n".join(kept).strip()
    if not text and cut is not None:
        # Bottom-posting: the reply follows the quote.
        tail = [line for line in lines[cut + 1:] if not line.lstrip().startswith(">")]
        text = "\n".join(tail).strip()
    return text


def _quote_start(lines: list[str]) -> int | None:
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if _SEPARATOR_RE.match(line):
            return index
        if _FROM_LINE_RE.match(line) and _is_header_block(lines, index):
            return index
        if stripped.startswith(">") and _rest_is_quoted(lines, index):
            return index
        # "On <date>, <name> <addr> wrote:" wraps over up to three lines.
        window = " ".join(part.strip() for part in lines[index: index + 3])
        for pattern in _QUOTE_HEADER_RES:
            for span in (stripped, " ".join(part.strip() for part in lines[index: index + 2]), window):
                if len(span) <= 400 and pattern.match(span):
                    return index
    return None


def _is_header_block(lines: list[str], index: int) -> bool:
    following = [line for line in lines[index + 1: index + 7] if line.strip()]
    return sum(1 for line in following if _HEADER_BLOCK_LINE_RE.match(line)) >= 2


def _rest_is_quoted(lines: list[str], index: int) -> bool:
    """A ">" block that runs to the end (allowing a signature) is history."""
    rest = [line for line in lines[index:] if line.strip()]
    quoted = sum(1 for line in rest if line.lstrip().startswith(">"))
    return quoted >= max(1, int(len(rest) * 0.7))


class _TextExtractor(HTMLParser):
    """HTML to plain text; skips quoted history (<blockquote>, gmail_quote) and non-text."""

    _SKIP = {"style", "script", "head", "title", "blockquote"}
    _QUOTE_CLASSES = ("gmail_quote", "yahoo_quoted", "moz-cite-prefix")
    _BREAK = {"br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip_tag = ""  # tag that opened the skipped region
        self.skip_depth = 0  # nesting of skip_tag inside that region

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip_tag:
            if tag == self.skip_tag:
                self.skip_depth += 1
            return
        classes = " ".join(v or "" for k, v in attrs if k == "class")
        if tag in self._SKIP or any(c in classes for c in self._QUOTE_CLASSES):
            self.skip_tag, self.skip_depth = tag, 1
        elif tag in self._BREAK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skip_tag:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if self.skip_depth <= 0:
                    self.skip_tag = ""
            return
        if tag in self._BREAK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip_tag:
            self.parts.append(data)


def _html_to_text(html: str) -> str:
    parser = _TextExtractor()
    try:
        parser.feed(html[:_MAX_SCAN])
        parser.close()
    except Exception:
        return re.sub(r"<[^>]{0,2000}>", " ", html[:_MAX_SCAN])
    text = "".join(parser.parts).replace("\xa0", " ")
    return re.sub(r"\n{3,}", "\n\n", text)
