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

Decisions worth knowing (each is commented where it is enforced):

- A DSN with ``Action: delayed`` is a soft bounce; a DSN that only reports
  success (delivered/relayed/expanded) is ``unrelated``.
- "Account disabled/inactive/suspended" wording (RFC 3463 X.2.1) is soft (it
  can be switched back on); "account closed/deleted" is hard. A "user
  unknown" given in reply to DATA rather than RCPT TO is soft (a filter).
- ARF ``Feedback-Type: auth-failure`` (RFC 6591) is ``unrelated``, not a
  complaint.
- Newsletters and list traffic (List-Id / List-Unsubscribe / Precedence:
  list) are ``unrelated``; ``X-Auto-Response-Suppress`` alone is *not* an
  auto-reply signal.

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
from dataclasses import dataclass, replace
from email.message import EmailMessage, Message
from functools import cached_property
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
# What a bounce has to say about the failure fits well within this.
_MAX_NOTIFICATION = 50_000
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
    raw = _repair_boundary(raw)
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        _touch_headers(msg)
        return msg  # type: ignore[return-value]
    except Exception:
        return email.message_from_bytes(  # type: ignore[return-value]
            raw, _class=EmailMessage, policy=email.policy.compat32
        )


_CONTENT_TYPE_FIELD_RE = re.compile(rb"^content-type:[ \t]*multipart/[^\n]*(?:\n[ \t][^\n]*)*", re.I | re.M)
_BOUNDARY_PARAM_RE = re.compile(rb'(boundary\s*=\s*)("[^"\r\n]*"|[^;\s]*)', re.I)
_DELIMITER_RE = re.compile(rb"^--([^\s]{1,200})[ \t]*\r?$", re.M)


def _repair_boundary(raw: bytes) -> bytes:
    """Use the delimiter the body really has when the declared one never occurs.

    RFC 2046 §5.1.1 requires the body to use the declared boundary; some MTAs
    rewrite one and not the other, which leaves the whole report unparsed.
    """
    ends = [i for i in (raw.find(b"\n\n"), raw.find(b"\r\n\r\n")) if i >= 0]
    if not ends:
        return raw
    head_end = min(ends)
    head, body = raw[:head_end], raw[head_end:]
    content_type = _CONTENT_TYPE_FIELD_RE.search(head)
    if not content_type:
        return raw
    match = _BOUNDARY_PARAM_RE.search(head, content_type.start(), content_type.end())
    if not match:
        return raw
    declared = match.group(2).strip(b'"')
    if not declared or b"--" + declared in body:
        return raw
    found = _DELIMITER_RE.search(body)
    if not found or found.group(1).endswith(b"--"):
        return raw
    fixed = head[: match.start(2)] + b'"' + found.group(1) + b'"' + head[match.end(2) :]
    return fixed + body


def classify(raw: bytes) -> Classification:
    """Classify one inbound message; never raises."""
    try:
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        msg = _parse_for_classify(raw)
        if not msg.keys():
            # No header at all (a pasted body): read all of it as plain text
            # rather than lose a first line that happens to contain a colon.
            msg = _parse_for_classify(b"Content-Type: text/plain; charset=utf-8\n\n" + raw)
        return _sanitize(_classify(msg, raw))
    except Exception as exc:  # noqa: BLE001 - the contract is "never raises"
        return Classification(kind=UNRELATED, reason=f"internal error: {type(exc).__name__}")


def _parse_for_classify(raw: bytes) -> Message:
    """compat32 parse: headers stay raw strings, decoded here on demand.

    The modern policy re-parses a header on every access (about a millisecond
    each for Received/DKIM lines), which made classification ~10x slower and
    can raise lazily; the helpers below decode RFC 2047 words themselves.
    """
    return email.message_from_bytes(_repair_boundary(raw), policy=email.policy.compat32)


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


class _Inbound:
    """One parsed message plus the texts several checks read (computed once)."""

    def __init__(self, msg: Message) -> None:
        self.msg = msg

    @cached_property
    def notification(self) -> str:
        return _notification_text(self.msg)

    @cached_property
    def challenge_response(self) -> bool:
        return _is_challenge_response(self.msg, self.notification)

    @cached_property
    def reply_text(self) -> str:
        return extract_reply_text(_body_text(self.msg))


def _classify(msg: Message, raw: bytes) -> Classification:
    mail = _Inbound(msg)
    for check in (_check_complaint, _check_bounce, _check_auto_reply, _check_unrelated):
        result = check(mail)
        if result is not None:
            return result
    return _check_human(mail)


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
_HEADERS_TYPES = {"text/rfc822-headers", "text/rfc822-header", "message/rfc822-headers", "message/global-headers"}
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
    """Header blocks of the returned original: message/rfc822 or text/rfc822-headers.

    Only originals attached to this report, not messages nested inside them.
    """
    found: list[Message] = []
    for part in _walk(msg):
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


def _check_complaint(mail: _Inbound) -> Classification | None:
    msg = mail.msg
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
            ids = _embedded_message_ids(msg) if holder is not msg else [_normalize_msgid(_header(msg, "Message-ID"))]
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
    text: str  # the diagnostic for this recipient (Diagnostic-Code or its prose)
    context: str = ""  # surrounding prose: which SMTP command failed, etc.
    action: str = ""  # RFC 3464 Action, "" outside a DSN
    whole: str = ""  # all the prose, when this is the only failure


def _check_bounce(mail: _Inbound) -> Classification | None:
    msg, notification = mail.msg, mail.notification
    if mail.challenge_response:
        return None  # the auto_reply check claims it
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
        if part.is_multipart() or ctype in _HEADERS_TYPES:
            continue
        # A multipart whose boundary could not be read is left as one string.
        if not ctype.startswith("text/") and not ctype.startswith("multipart/"):
            continue
        if _is_attachment(part) and texts:
            continue
        text = _part_text(part)
        if ctype == "text/html":
            text = _html_to_text(text)
        texts.append(text)
        if sum(len(t) for t in texts) > _MAX_NOTIFICATION:
            break
    return _cut_returned_copy("\n".join(texts)[:_MAX_NOTIFICATION])


# Markers after which a non-MIME bounce quotes the original message.
_RETURNED_COPY_RE = re.compile(
    r"^[ \t>*-]*(?:"
    r"(?:below (?:this line )?is|included is|here is|attached is|following is) a copy of the (?:original )?"
    r"(?:message|headers?)"
    r"|-* ?this is a copy of the message"
    r"|original message (follows|headers)"
    r"|(?:unsent|returned|undelivered|original|rejected) message (follows|headers)"
    r"|-+ ?(?:original|returned|undelivered|unsent) (?:message|mail)(?: ?-+| info)?[ \t]*$"
    r"|message headers follow"
    r"|the (?:original )?(?:message|message headers?|header of the original message) (?:is|are|was|were)"
    r" (?:following|attached|included|below|as follows)"
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
        # Some gateways wrap the MTA's DSN in a message/rfc822 attachment.
        dsn_parts = [p for p in _walk(msg, into_attached=True) if _ctype(p) in _DSN_TYPES]
        if not dsn_parts or not _looks_like_bounce(msg, notification):
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
            # notice; nothing failed.
            return Classification(
                kind=UNRELATED,
                original_message_ids=tuple(ids),
                reason=f"RFC 3464 DSN reports success (Action: {delivered[0]})",
            )
        return None  # a report without per-recipient fields: try the prose
    return _bounce_result(failures, ids, source="RFC 3464 DSN", extra_codes=_status_codes(notification))


def _dsn_failures(records: list[dict[str, str]], notification: str) -> tuple[list[_Failure], list[str]]:
    failures: list[_Failure] = []
    delivered: list[str] = []
    for record in records:
        action = record.get("action", "").split()[0].lower() if record.get("action", "").strip() else ""
        status_codes = _status_codes(record.get("status", ""))
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
            _Failure(recipient=recipient, status=status, text=diagnostic.strip(), action=action or "failed")
        )
    _attach_prose(failures, notification)
    for failure in failures:
        failure.status = _remote_status(failure.status, _status_codes(failure.text))
    return failures, delivered


def _attach_prose(failures: list[_Failure], notification: str) -> None:
    """Give each failure the prose about its recipient.

    The stretch runs from the line naming the recipient to the line naming the
    next one, so boilerplate above the list is left out; a lone recipient
    whose address the prose never repeats gets all of it.
    """
    recipients = [f.recipient for f in failures if f.recipient]
    segments = _segments(notification, recipients)
    for failure in failures:
        prose = segments.get(failure.recipient, "")
        if len(failures) == 1:
            failure.whole = notification
            prose = prose or notification
        failure.context = prose
        if not failure.text:
            failure.text = prose


def _dsn_address(value: str) -> str:
    """ "rfc822; user@example.com" -> "user@example.com" (RFC 3464 §2.3.2)."""
    if not value:
        return ""
    _, _, address = value.rpartition(";")
    address = address.strip().strip("<>").strip().lower()
    if "@" not in address:
        return ""
    found = _EMAIL_RE.search(address)
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
        complaint = data.get("complaint") if isinstance(data.get("complaint"), dict) else {}
        recipients = [str(r.get("emailAddress", "")) for r in complaint.get("complainedRecipients", []) or []]
        return Classification(
            kind=COMPLAINT,
            recipients=tuple(_unique(_addresses(",".join(recipients)))),
            original_message_ids=tuple(ids),
            reason=f"Amazon SES complaint notification ({complaint.get('complaintFeedbackType') or 'no type'})",
        )
    if kind != "bounce":
        return None
    bounce = data.get("bounce") if isinstance(data.get("bounce"), dict) else {}
    failures = []
    for rcpt in bounce.get("bouncedRecipients", []) or []:
        if not isinstance(rcpt, dict):
            continue
        text = str(rcpt.get("diagnosticCode") or "")
        status = _remote_status(str(rcpt.get("status") or ""), _status_codes(text))
        if not status and str(bounce.get("bounceType")) == "Transient":
            status = "4.0.0"
        address = _addresses(str(rcpt.get("emailAddress", "")))
        failures.append(_Failure(recipient=address[0] if address else "", status=status, text=text))
    if not failures:
        return None
    return _bounce_result(failures, ids, source=f"Amazon SES bounce notification ({bounce.get('bounceType')})")


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
            ids.append(_normalize_msgid(str(header.get("value", ""))))
    common = mail.get("commonHeaders") if isinstance(mail.get("commonHeaders"), dict) else {}
    ids.append(_normalize_msgid(str(common.get("messageId", ""))))
    return _unique(ids)


# --- 2c. Non-standard bounces (prose from qmail, Exim, Postfix, Sendmail, ...)

_DAEMON_SENDER_RE = re.compile(
    r"mailer-daemon|mail-daemon|mailerdaemon|postmaster|post_master|mail delivery (subsystem|system)"
    r"|mail administrator|ndr administrator",
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
# Wording only an MTA writes: enough on its own.
_MTA_SIGNATURE_RE = re.compile(
    r"this is the qmail-send program"
    r"|created automatically by mail delivery software"
    r"|this is the mail system at host"
    r"|this is the mailer-daemon"
    r"|this is the dragonfly mail agent"
    r"|transcript of session follows"
    r"|following addresses had (permanent|transient) (fatal |delivery )?errors"
    r"|smtp error from remote mail server"
    r"|remote host said:"
    r"|delivery has failed to these recipients"
    r"|i'm afraid i wasn't able to deliver",
    re.I,
)
# Wording a bounce uses but a person might too: needs another signal.
_BOUNCE_BODY_RE = re.compile(
    r"(permanent|temporary|transient) (fatal )?errors?"
    r"|could not be delivered"
    r"|(message|mail) (could not|couldn't|cannot|can't|was not|wasn't) (be )?deliver"
    r"|delivery to the following recipients? (failed|has been delayed)"
    r"|did not reach the following recipient"
    r"|was not delivered to"
    r"|(unable|failed) to deliver"
    r"|an error (has occurred|occurred) while attempting to deliver"
    r"|there was an error delivering your mail"
    r"|rcpt to:"
    r"|your message was rejected"
    r"|delivery (to .{1,80} )?(has been )?delayed"
    r"|(still being|will be) retried"
    r"|not yet been delivered"
    r"|following recipients? (could not|cannot) be reached",
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
        recipients = _flufl_recipients(msg) or _embedded_recipients(msg) or _inline_original_to(msg)
        failures = [_Failure(recipient=r, status="", text=notification, context=notification) for r in recipients]
        source += " (recipient from fallback)"
    if not failures:
        failures = [_Failure(recipient="", status="", text=notification, context=notification)]
    for failure in failures:
        failure.status = failure.status or _pick_status(_status_codes(failure.text))
    return _bounce_result(failures, ids, source=source, extra_codes=_status_codes(notification))


def _on_lowered(rx: re.Pattern[str]) -> re.Pattern[str]:
    """*rx* without re.I, for text passed through str.lower() first.

    CPython's re runs a long case-insensitive alternation several times slower
    than the same alternation on lowercased text. Only for yes/no searches:
    lowering can change offsets ("İ" becomes two characters).
    """
    literal = re.sub(r"\\.", "", rx.pattern)
    if re.search("[A-Z]", literal):
        raise ValueError(f"pattern has an uppercase literal: {rx.pattern[:60]}")
    return re.compile(rx.pattern, rx.flags & ~re.I)


def _looks_like_bounce(msg: Message, notification: str) -> bool:
    head = notification[:20_000].lower()
    if _MTA_SIGNATURE_LOWER.search(head):
        return True
    sender = _header(msg, "From") + " " + _header(msg, "Sender")
    daemon = bool(_DAEMON_SENDER_RE.search(sender))
    # RFC 5321 §4.5.5: DSNs go out with a null reverse-path, but so do
    # RFC 3834 auto-replies; it only supports other evidence.
    null_sender = _is_null_sender(msg)
    subject = bool(_BOUNCE_SUBJECT_RE.search(_header(msg, "Subject")))
    body = bool(_BOUNCE_BODY_LOWER.search(head))
    # One weak signal alone is not enough: a person may write "returned mail"
    # in a subject, and an out-of-office may say "no longer with the company".
    # A person's reply to us carries In-Reply-To; a bounce does not.
    if ((daemon or null_sender) and (subject or body)) or (subject and body):
        return True
    replying = bool(_header(msg, "In-Reply-To"))
    if not (daemon or (body and not replying)):
        return False
    # A failure reason backs the one signal; it is the costliest test, so it runs last.
    return bool(_MAILBOX_FULL_LOWER.search(head) or _HARD_STRONG_LOWER.search(head))


_MTA_SIGNATURE_LOWER = _on_lowered(_MTA_SIGNATURE_RE)
_BOUNCE_BODY_LOWER = _on_lowered(_BOUNCE_BODY_RE)


def _returned_copy_text(msg: Message) -> str:
    texts = []
    for part in _walk(msg):
        if not part.is_multipart() and _ctype(part).startswith("text/"):
            text = _part_text(part)
            match = _RETURNED_COPY_RE.search(text)
            if match:
                texts.append(text[match.start() :])
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
    failures = [_Failure(recipient=r, status="", text="") for r in _unique(recipients)]
    _attach_prose(failures, notification)
    return failures


def _our_addresses(msg: Message) -> set[str]:
    """Addresses on the bounce itself: the daemon and us, never the failed one."""
    found: set[str] = set()
    for name in ("From", "To", "Return-Path", "Delivered-To", "Reply-To", "Sender", "Errors-To"):
        for value in _headers(msg, name):
            found.update(_addresses(value))
    return found


# Where an MTA names the failed address. All of these are structural.
_RECIPIENT_PATTERNS = [
    # qmail / Postfix / Sendmail: "<user@example.com>:" or "<user@example.com>" alone on a line
    re.compile(r"^[ \t]*<(?P<a>[^<>\s]+@[^<>\s]+)>[ \t]*(?::|\(expanded from|\.{3}|$)", re.M),
    # SMTP transcript: "RCPT TO:<user@example.com>"
    re.compile(r"RCPT TO:[ \t]*<(?P<a>[^<>\s]+@[^<>\s]+)>", re.I),
    # "550 5.1.1 <user@example.com>... User unknown"
    re.compile(r"\b[45]\d\d[ -]+(?:[45]\.\d{1,3}\.\d{1,3}[ \t]+)?<(?P<a>[^<>\s]+@[^<>\s]+)>(?:\.{3}|:|[ \t])", re.I),
    # "user@example.com: 550 ..." / "user@example.com" alone (or "... on <date>") on a line
    re.compile(
        r"^[ \t]*(?P<a>[^<>\s:;,()\"\[\]]+@[^<>\s:;,()\"\[\]]+?)[ \t]*(?::|$| on | \(|<mailto:|\s+[45]\d\d[ -]|\s+\[)",
        re.M,
    ),
]
_LOOSE_RECIPIENT_CONTEXT = re.compile(
    r"(?:\bto|recipients?|address(?:es)?|user|for|mailbox|account)[\s:]{0,5}(?:\(s\))?[\s:]{0,5}[\"<(]?$", re.I
)


def _prose_recipients(notification: str, ours: set[str]) -> list[str]:
    text = notification[:_MAX_SCAN]
    positioned: list[tuple[int, str]] = []
    for pattern in _RECIPIENT_PATTERNS:
        for match in pattern.finditer(text):
            address = _clean_address(match.group("a"))
            if address and address not in ours and not _is_daemon_address(address):
                positioned.append((match.start("a"), address))
    if positioned:
        return _unique(address for _, address in sorted(positioned))
    # Last resort: an address right after "to" / "recipient" / "address".
    loose = []
    for match in _EMAIL_RE.finditer(text):
        before = text[max(0, match.start() - 40) : match.start()]
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
    """One stretch of prose per recipient: from its first mention to the next one's."""
    lowered = text.lower()
    starts = []
    for recipient in _unique(recipients):
        position = lowered.find(recipient)
        if position >= 0:
            # Start at the beginning of that line: "RCPT TO:<x>" context.
            line_start = lowered.rfind("\n", 0, position) + 1
            starts.append((line_start, recipient))
    starts.sort()
    segments = {}
    for index, (position, recipient) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        segments[recipient] = text[position : min(max(end, position + 1), position + 3000)]
    return segments


def _pick_status(codes: list[str]) -> str:
    """Prefer a specific code (5.1.1) over a generic one (5.0.0)."""
    specific = [c for c in codes if not c.endswith(".0.0")]
    return (specific or codes or [""])[0]


def _flufl_recipients(msg: Message) -> list[str]:
    """flufl.bounce as a last resort for the address only, never for hard/soft.

    It reports mailbox-full as permanent, and some detectors raise on a
    message without From: (skipped here; the wide try covers the rest).
    """
    if not _addresses(_header(msg, "From")):
        return []
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
    r"mailbox (is )?full|mailbox.{0,30}\bis full|over ?quota|quota (exceeded|full)"
    r"|exceed(s|ed)? (the |his |her |their |its )?(storage|quota|mailbox)|insufficient (system )?storage"
    r"|disk quota|mail ?(box|folder) (is )?full|mailfolder is full|not enough (storage|space)"
    r"|out of (storage|space)|storage (limit|full)|mailbox size limit"
    r"|boîte (aux lettres )?pleine|postfach (ist )?voll|buzón lleno|casella .{0,20}piena|caixa .{0,20}cheia",
    re.I,
)
# The failure is about us (sender address, HELO name, relaying for us), not
# about the recipient's address.
_ABOUT_US_RE = re.compile(
    r"sender (address |domain )?(rejected|denied|unknown|invalid|verify|not)|sender's (address|domain)"
    r"|(unroutable|invalid|unknown|bad) sender|after mail from|my name was rejected"
    r"|(helo|ehlo) (command )?(rejected|refused|denied)|(invalid|bad) (helo|ehlo)"
    r"|reverse (dns|lookup)|open relay|client host",
    re.I,
)
# Permanent reasons tied to the address or its domain: suppress after one event.
_HARD_STRONG_RE = re.compile(
    r"user ?unknown|unknown (user|recipient|local[- ]part|mailbox|address|e-?mail)|recipient unknown"
    r"|address unknown|addressee unknown"
    r"|no such (user|recipient|mailbox|account|address|local user|person)"
    r"|no (such )?(user|account|mailbox) (by|with|of) that name"
    r"|(user|recipient|mailbox|account|address)( name)? (is )?(not found|not recogni[sz]ed|invalid)"
    r"|(user|recipient|mailbox|account|address) .{0,40}(does not|doesn't|did not) exist"
    r"|(couldn't|could not|cannot|can't) be found|not listed in (the )?(domino )?directory"
    r"|not a valid (mailbox|recipient|user)|invalid (recipient|mailbox|user)|unknown or illegal alias"
    r"|no mailbox here|mailbox not found|not our customer|recipient address rejected: access denied"
    r"|(doesn't|does not) have an? .{1,40} account"
    r"|host (or domain name )?(not found|unknown)|unknown host|domain (not found|does not exist|unknown)"
    r"|no such domain|invalid domain|unrouteable address|unroutable address|domain name not found|nxdomain"
    r"|no mx (record|host)"
    r"|has moved|no longer (valid|active|available|in use|exists|with|employed|accepts?)"
    r"|does not accept (e-?)?mail|null mx|no smtp service"
    r"|(utilisateur|adresse|destinataire|compte) (inconnu|introuvable)"
    r"|(benutzer|empfänger|adresse|postfach) (ist )?(unbekannt|existiert nicht)"
    r"|usuario (desconocido|no existe)|(utente|indirizzo) (sconosciuto|inesistente|non esiste)"
    r"|(usuário|endereço) (desconhecido|não existe|inexistente)|(gebruiker|adres) (onbekend|bestaat niet)",
    re.I,
)
_MAILBOX_FULL_LOWER = _on_lowered(_MAILBOX_FULL_RE)
_HARD_STRONG_LOWER = _on_lowered(_HARD_STRONG_RE)
# Reasons that may heal or are about content, reputation, rate or route.
_SOFT_RE = re.compile(
    r"too (large|big)|size (limit|exceed)|exceeds? (the )?(maximum )?(message )?size|message size"
    r"|spam|junk|blocked|block ?list|black ?list|blacklisted|listed (in|on|at|by)|\brbl\b|dnsbl|spamhaus"
    r"|reputation|policy|prohibited|not (allowed|permitted|authorized)|relay(ing)? (access )?denied"
    r"|relay not permitted|no relaying|unauthenticated|authentication|\bspf\b|\bdkim\b|\bdmarc\b|\bptr\b"
    r"|rdns|greylist|gr[ae]ylisted|try (again )?later|temporar|rate limit|too many|exceeded (the )?(rate|limit)"
    r"|expired|time ?out|timed out|retry time|deferred|delayed|connection (refused|reset|lost)|network"
    r"|name ?server|servfail|\btls\b|starttls|virus|malware|content (rejected|filter)|suspicious"
    r"|loop|hop count|service unavailable|system (error|busy)|resources|not member|refused|mailer error"
    r"|dns (error|failure)|lookup fail|not accepting (network )?messages",
    re.I,
)
# Weaker permanent wording; only after the soft reasons have had their say.
# An account that is gone (closed, deleted) is hard. A disabled, inactive or
# suspended one (RFC 3463 X.2.1) can be switched back on, so it stays soft:
# one such bounce must not suppress the address for good.
_HARD_WEAK_RE = re.compile(
    r"mailbox (is )?(unavailable|not available)|account (is |has been )?"
    r"(closed|terminated|discontinued|removed|deleted)",
    re.I,
)
# RFC 3463 codes that name the address or its domain as permanently bad.
_HARD_CODES = {
    "5.1.0": "other address status",
    "5.1.1": "bad destination mailbox address",
    "5.1.2": "bad destination system address",
    "5.1.3": "bad destination mailbox address syntax",
    "5.1.6": "destination mailbox has moved",
    "5.1.10": "recipient address has null MX (RFC 7505)",
    "5.4.4": "unable to route (no such domain)",
}
# RFC 3463 X.1.7 / X.1.8: the *sender's* address is bad.
_SENDER_CODES = {"5.1.7", "5.1.8", "4.1.7", "4.1.8"}
# RFC 5321 §3.3: addresses are judged at RCPT TO. A "user unknown" returned
# for the end of DATA is a content decision worded as an address problem
# (common with mobile carriers' filters), so it must not suppress.
_AFTER_DATA_RE = re.compile(
    r"in reply to end of\s+data\s+command|after end of data|after data command|failed after i sent the message"
    r"|>>> data\s*\n\s*<<< 5\d\d(?! 5\.0\.0 need)",
    re.I,
)
# With PIPELINING (RFC 2920) Sendmail logs the RCPT replies after ">>> DATA";
# "no valid recipients" as the DATA reply shows the rejection was at RCPT.
_AT_RCPT_RE = re.compile(
    r"in reply to rcpt to\s+command|after rcpt to|does not like recipient|did not like our rcpt to"
    r"|>>> rcpt to:[^\n]*\n\s*<<< [45]\d\d|no valid recipients",
    re.I,
)


def _bounce_verdict(failure: _Failure) -> _Verdict:
    verdict = _judge(failure.status, failure.action, failure.text[:20_000], failure.context[:20_000])
    if verdict is _UNEXPLAINED and failure.whole and failure.whole != failure.text:
        # The reason may sit above the recipient line ("Mailbox full: <addr>").
        verdict = _judge(failure.status, failure.action, failure.whole[:20_000], failure.whole[:20_000])
    return verdict


# Permanent but unexplained (5.0.0, 5.5.x, 5.7.x, ...): one such event is not
# enough to suppress an address.
_UNEXPLAINED = _Verdict(SOFT, "permanent failure without a recognised address reason")


def _judge(status: str, action: str, text: str, context: str) -> _Verdict:
    context = context or text
    if action == "delayed":
        return _Verdict(SOFT, "DSN Action: delayed")
    if status.startswith("4") or _only_transient_replies(text, status):
        return _Verdict(SOFT, "transient (4.x.x) failure")
    if status in _SENDER_CODES or _ABOUT_US_RE.search(text):
        return _Verdict(SOFT, "rejected because of the sender, not the address")
    if _MAILBOX_FULL_RE.search(text) or status == "5.2.2":
        return _Verdict(SOFT, "mailbox full / over quota")
    if status in {"5.2.3", "5.3.4"}:
        return _Verdict(SOFT, "message too large")
    hard = _HARD_STRONG_RE.search(text)
    if hard and _AFTER_DATA_RE.search(context) and not _AT_RCPT_RE.search(context):
        return _Verdict(SOFT, f"'{hard.group(0).lower()}' after DATA: content filter, not the address")
    if hard:
        return _Verdict(HARD, hard.group(0).lower())
    soft = _SOFT_RE.search(text)
    if soft:
        return _Verdict(SOFT, soft.group(0).lower())
    weak = _HARD_WEAK_RE.search(text)
    if weak:
        return _Verdict(HARD, weak.group(0).lower())
    if status in _HARD_CODES:
        return _Verdict(HARD, _HARD_CODES[status])
    return _UNEXPLAINED


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
    for failure, verdict in zip(failures, verdicts, strict=True):
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
        status_codes=tuple(c for c in codes if c[:1] in {"4", "5"}),
        original_message_ids=tuple(ids),
        reason=f"{source}{action}{status} ({verdicts[0].why})",
        recipient_types=tuple(types),
    )


# ---------------------------------------------------------------------------
# 3. Auto-replies (RFC 3834) and challenge-response systems
#
# Calling a person's reply "automatic" would let the next follow-up go out
# after a real answer, the one failure this product exists to prevent. So
# every rule here needs a machine-only signal; wording alone must be strong.

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


def _is_challenge_response(msg: Message, notification: str) -> bool:
    if any(name in msg for name in _CHALLENGE_HEADERS):
        return True
    # The wording must come from a machine: a report, or a no-reply sender.
    # A person may well write "please add me to the guest list". (The cheap
    # test first: the wording is searched in up to 20,000 characters.)
    sender = _header(msg, "From") + " " + _header(msg, "Return-Path")
    machine = (
        bool(_NO_REPLY_SENDER_RE.search(sender))
        or _is_null_sender(msg)
        or any(_ctype(p) in _DSN_TYPES or _ctype(p) == "multipart/report" for p in _walk(msg))
    )
    return machine and bool(_CHALLENGE_RE.search(notification[:20_000]))


def _is_null_sender(msg: Message) -> bool:
    return "Return-Path" in msg and _header(msg, "Return-Path").strip() in {"<>", ""}


# Markers an autoresponder puts into the subject, in the common languages.
_OOO_SUBJECT_RE = re.compile(
    r"out of (the )?office|auto(matic|matische|matisch|matica|mática|matyczna|matická|matique)?[ _-]?"
    r"(reply|response|respons|antwort|antwoord|risposta|respuesta|resposta|odpowied|réponse|odpověď|svar)"
    r"|autorespon|réponse automatique|abwesenheitsnotiz|fuera de la oficina|fuori ufficio|buiten kantoor"
    r"|fora do escritório|poza biurem|自動返信|自动回复|автоответ|автоматический ответ|otomatik yanıt",
    re.I,
)
# Words that also occur in ordinary subjects ("absence management"): only as
# the marker in front of the quoted subject, e.g. "Abwesend: Re: ...".
_OOO_SUBJECT_PREFIX_RE = re.compile(
    r"^\s*[\[(]?\s*(out of office|ooo|away|absent|absence|abwesend|abwesenheit|urlaub|vacation|holiday|on leave"
    r"|absent\(e\)|absence|congés|ausente|assente|afwezig|niet aanwezig|nieobecn\w*|frånvaro|fravær|poissa"
    r"|nepřítom\w*|不在|вне офиса)\s*[\]):-]",
    re.I,
)
# Strong first-person wording only: a person may mention a holiday in passing.
_OOO_BODY_RE = re.compile(
    r"this is an? automat(ed|ic) (reply|response|message|notification)"
    r"|i am (currently )?(out of (the )?office|away from (the )?office"
    r"|on (annual |parental |maternity )?(leave|vacation|holiday))"
    r"|i('m| am) (currently )?out of (the )?office"
    r"|i will be out of (the )?office|with (limited|no) access to (my )?e-?mail"
    r"|ich bin (derzeit |zurzeit |momentan |bis )?.{0,40}(nicht im büro|abwesend|im urlaub)"
    r"|je suis (actuellement )?absent|estoy (actualmente )?fuera de la oficina|sono (attualmente )?fuori ufficio"
    r"|ik ben (momenteel )?(afwezig|niet aanwezig|met vakantie)",
    re.I,
)
_AUTOREPLY_HEADERS = ("X-Autoreply", "X-Autorespond", "X-Autoresponder", "X-Auto-Reply")


def _check_auto_reply(mail: _Inbound) -> Classification | None:
    reason = _auto_reply_reason(mail)
    if not reason:
        return None
    ids = tuple(_unique(_own_reply_ids(mail.msg) + _embedded_message_ids(mail.msg)))
    return Classification(kind=AUTO_REPLY, original_message_ids=ids, reason=reason)


def _auto_reply_reason(mail: _Inbound) -> str:
    msg = mail.msg
    if mail.challenge_response:
        return "challenge-response system"
    auto_submitted = _header(msg, "Auto-Submitted").lower()
    # RFC 3834 §5: any value other than "no" marks an automatic message.
    if auto_submitted and not auto_submitted.startswith("no"):
        return f"RFC 3834 Auto-Submitted: {auto_submitted}"
    for name in _AUTOREPLY_HEADERS:
        value = _header(msg, name).lower()
        if value and value not in {"no", "false", "0"}:
            return f"{name} header"
    # X-Auto-Response-Suppress is deliberately not a signal on its own: it
    # asks *other* servers not to auto-reply ([MS-OXCMAIL] §2.1.3.2.20) and
    # Exchange puts it on plenty of mail written by people.
    subject = _header(msg, "Subject")
    if _OOO_SUBJECT_RE.search(subject) or _OOO_SUBJECT_PREFIX_RE.search(subject):
        return f"out-of-office subject: {subject[:80]}"
    precedence = _header(msg, "Precedence").lower()
    is_list = bool(_header(msg, "List-Id") or _header(msg, "List-Unsubscribe"))
    # Autoresponders mark their own mail Precedence: bulk/junk (RFC 3834 §3.1.8
    # asks responders to honour it); with list headers it is a newsletter.
    if precedence in {"bulk", "junk", "auto_reply", "auto-reply"} and not is_list:
        return f"Precedence: {precedence}"
    if _OOO_BODY_RE.search(mail.reply_text[:3000]):
        return "out-of-office wording"
    # RFC 3834 §3.3 / RFC 5321 §4.5.5: automatic mail goes out with a null
    # return path; a person's mail never does.
    if _is_null_sender(msg):
        return "null return path (Return-Path: <>)"
    return ""


# ---------------------------------------------------------------------------
# 4. Unrelated traffic


_NO_REPLY_LOCAL_RE = re.compile(r"^(no-?reply|do-?not-?reply|donotreply|notifications?|newsletter|news)@", re.I)


def _check_unrelated(mail: _Inbound) -> Classification | None:
    msg = mail.msg
    if _header(msg, "In-Reply-To"):
        # Anything answering a thread is left to the human check, so that
        # correlation can still match it to one of our messages.
        return None
    # Decision: newsletters and mailing-list posts (List-Id / List-Unsubscribe,
    # RFC 2919 / RFC 2369, or Precedence: list) are "unrelated", not
    # auto-replies: they answer nothing we sent and must not stop a sequence.
    # (Precedence: bulk/junk *without* list headers is an autoresponder's
    # mark and was claimed by the auto-reply check.)
    if _header(msg, "List-Id") or _header(msg, "List-Unsubscribe") or _header(msg, "Precedence").lower() == "list":
        return Classification(kind=UNRELATED, reason="newsletter / mailing-list traffic")
    sender = ",".join(_addresses(_header(msg, "From")))
    if _NO_REPLY_LOCAL_RE.search(sender):
        return Classification(kind=UNRELATED, reason=f"notification from a no-reply sender ({sender})")
    if not mail.reply_text.strip() and not _header(msg, "Subject"):
        return Classification(kind=UNRELATED, reason="empty message")
    return None


# ---------------------------------------------------------------------------
# 5. Human replies and unsubscribe requests

# An unsubscribe request suppresses the address for good, so only clear
# requests count: imperative "remove me" wording, in a few languages.
# The whole subject, not a word in it: "Re: Stop losing leads" is a reply.
_UNSUBSCRIBE_SUBJECT_RE = re.compile(
    r"^\W*((re|aw|sv|fw|fwd|wg|tr|rv)\s*:\s*)*(unsubscribe|remove me|remove|opt[ -]?out|stop)\W*$", re.I
)
_UNSUBSCRIBE_RE = re.compile(
    r"\bunsubscribe\b|\bremove me\b|\bremove (my|our) (e-?mail|address|name|contact)"
    r"|\bremove (us|me) from\b|\btake (me|us|my (e-?mail|address)) off\b"
    r"|\bstop (e-?mailing|emailing|sending|contacting|writing to)\b"
    r"|\b(do not|don't|dont|never) (e-?mail|contact|write to|message) (me|us)( again)?\b"
    r"|\bopt (me|us) out\b|\b(want|like|wish) to opt[ -]?out\b|^\W*opt[ -]?out\W*$"
    r"|\bplease remove (me|us|my|our|this (e-?mail|address))\b|\bno more e-?mails\b"
    r"|\b(abmelden|austragen|abbestellen)\b|keine (weiteren )?(e-?mails|nachrichten) mehr"
    r"|désabonn|désinscri|retirez[- ]moi|ne plus recevoir"
    r"|dar(me)? de baja|no me (envíe|envíen|escriba|contacte)|eliminar(me)? de (su|la|vuestra) lista"
    r"|cancellami|disiscriv|rimuovetemi|rimuovermi|non (scrivermi|contattarmi)"
    r"|uitschrijven|afmelden|verwijder (mij|me)|descadastr|remover da lista|cancelar (a )?inscrição"
    r"|wypisz mnie|usuń mnie|wypisać",
    re.I,
)
# Footers that mention unsubscribing are not a request.
_FOOTER_LINE_RE = re.compile(
    r"https?://|mailto:|to unsubscribe from|you received this|click here|manage (your )?subscription", re.I
)


def _check_human(mail: _Inbound) -> Classification:
    msg, text = mail.msg, mail.reply_text
    ids = tuple(_own_reply_ids(msg))
    subject = _header(msg, "Subject")
    if _UNSUBSCRIBE_SUBJECT_RE.search(subject):
        return Classification(
            kind=UNSUBSCRIBE_REQUEST,
            original_message_ids=ids,
            reason=f"subject asks to unsubscribe: {subject[:80]}",
            reply_text=text,
        )
    phrase = _unsubscribe_phrase(text)
    if phrase:
        return Classification(
            kind=UNSUBSCRIBE_REQUEST,
            original_message_ids=ids,
            reason=f"reply asks to stop: {phrase!r}",
            reply_text=text,
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
# One alternation of them all, each with its own flags: one match call per candidate line.
_QUOTE_HEADER_RE = re.compile(
    "|".join(f"(?{'i' if p.flags & re.I else ''}s:{p.pattern})" for p in _QUOTE_HEADER_RES)
)
# Any language: a line opening with a date, then an address and a closing
# colon ("02.04.2012 14:20 пользователь <a@b> написал:").
_DATED_LINE_RE = re.compile(r"^[ \t]*\S.{0,60}\b(\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}|(19|20)\d\d)\b")
_GENERIC_QUOTE_HEADER_RE = re.compile(r"^.{0,300}@.{0,150}:\s*$", re.S)
_SEPARATOR_RE = re.compile(
    r"^[ \t]*(-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|mensaje original"
    r"|messaggio originale|oorspronkelijk bericht|mensagem original|wiadomość oryginalna|oryginalna wiadomość"
    r"|forwarded message|weitergeleitete nachricht)\s*-*"
    r"|_{10,}|begin forwarded message:|-{5,}\s*mail original\s*-*)\s*$",
    re.I,
)
_FROM_LINE_RE = re.compile(r"^[ \t>]*\*?(from|von|de|da|van|od|fra|från)\s*:\*?\s*\S", re.I)
_HEADER_BLOCK_LINE_RE = re.compile(
    r"^[ \t>]*\*?(sent|date|to|subject|cc|gesendet|datum|an|betreff|envoyé|objet|à|enviado|asunto|para"
    r"|inviato|oggetto|verzonden|onderwerp|aan|data|wysłano|temat|sendt|skickat|ämne)\s*:",
    re.I,
)


def extract_reply_text(body: str) -> str:
    """The new text of a reply: everything above the quoted history.

    Best effort over the common client styles: "On ... wrote:", localized
    variants, "-----Original Message-----", Outlook "From:/Sent:" blocks and
    ">"-quoted lines. A bottom-posted reply (quote first) keeps the text below.
    """
    lines = body[:_MAX_SCAN].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found = _quote_start(lines)
    head = lines[: found[0]] if found else lines
    text = _unquoted(head)
    if not text and found:
        # Bottom-posting: the reply follows the quote.
        text = _unquoted(lines[found[0] + found[1] :])
    return text


def _unquoted(lines: list[str]) -> str:
    kept = [line for line in lines if not line.lstrip().startswith(">")]
    while kept and (not kept[-1].strip() or _RULE_LINE_RE.match(kept[-1])):
        kept.pop()  # a trailing rule line belonged to the cut-off quote header
    return "\n".join(kept).strip()


_RULE_LINE_RE = re.compile(r"^[ \t]*[-_=*]{5,}[ \t]*$")


def _quote_start(lines: list[str]) -> tuple[int, int] | None:
    """(first line, number of lines) of the quote header, or None."""
    quoted_after = _quoted_suffix_counts(lines)
    for index, line in enumerate(lines[:_MAX_REPLY_LINES]):
        stripped = line.strip()
        if not stripped:
            continue
        if _SEPARATOR_RE.match(line):
            return index, 1
        if _FROM_LINE_RE.match(line) and _is_header_block(lines, index):
            return index, 1
        # A ">" block that runs to the end (allowing a signature) is history.
        non_empty, quoted = quoted_after[index]
        if stripped.startswith(">") and quoted >= max(1, int(non_empty * 0.7)):
            return index, 0
        # "On <date>, <name> <addr> wrote:" wraps over up to three lines.
        dated = bool(_DATED_LINE_RE.match(line))
        for size in (1, 2, 3):
            span = " ".join(part.strip() for part in lines[index : index + size])
            if len(span) > 400:
                break
            if _QUOTE_HEADER_RE.match(span) or (dated and _GENERIC_QUOTE_HEADER_RE.match(span)):
                return index, size
    return None


def _is_header_block(lines: list[str], index: int) -> bool:
    following = [line for line in lines[index + 1 : index + 7] if line.strip()]
    return sum(1 for line in following if _HEADER_BLOCK_LINE_RE.match(line)) >= 2


def _quoted_suffix_counts(lines: list[str]) -> list[tuple[int, int]]:
    """For each line: (non-empty lines, ">"-quoted lines) from there to the end."""
    counts = [(0, 0)] * (len(lines) + 1)
    non_empty = quoted = 0
    for index in range(len(lines) - 1, -1, -1):
        stripped = lines[index].strip()
        if stripped:
            non_empty += 1
            quoted += stripped.startswith(">")
        counts[index] = (non_empty, quoted)
    return counts


# The new text of a reply sits at the top; a quote header further down than
# this is not looked for (it bounds the work on a huge pasted thread).
_MAX_REPLY_LINES = 2000


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
