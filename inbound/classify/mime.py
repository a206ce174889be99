"""Safe message access: a tolerant parse, a bounded walk over the parts, decoded headers and part text."""

from __future__ import annotations

import email
import email.header
import email.policy
import re
from collections.abc import Iterator
from email.message import Message

# Regexes run over at most this many characters of any one text: a huge
# attachment must not make classification slow, and everything a bounce or a
# reply needs to say is said near the top.
MAX_SCAN = 200_000


_MAX_PARTS = 200
_MAX_DEPTH = 20


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


def parse_for_classify(raw: bytes) -> Message:
    """compat32 parse: headers stay raw strings, decoded here on demand.

    The modern policy re-parses a header on every access (about a millisecond
    each for Received/DKIM lines), which made classification ~10x slower and
    can raise lazily; the helpers below decode RFC 2047 words themselves.
    """
    return email.message_from_bytes(_repair_boundary(raw), policy=email.policy.compat32)


def walk(msg: Message, *, into_attached: bool = False) -> Iterator[Message]:
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
        if not into_attached and ctype_of(part) in ATTACHED_MESSAGE_TYPES:
            continue
        try:
            children = part.get_payload()
        except Exception:
            continue
        if isinstance(children, list):
            stack[0:0] = [(c, depth + 1) for c in children if isinstance(c, Message)]


ATTACHED_MESSAGE_TYPES = {"message/rfc822", "message/global", "message/partial"}
HEADERS_TYPES = {"text/rfc822-headers", "text/rfc822-header", "message/rfc822-headers", "message/global-headers"}
DSN_TYPES = {"message/delivery-status", "message/global-delivery-status"}


def ctype_of(part: Message) -> str:
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


def header_of(msg: Message, name: str) -> str:
    """One header as decoded text ('' when absent or unreadable)."""
    values = headers_of(msg, name)
    return values[0] if values else ""


def headers_of(msg: Message, name: str) -> list[str]:
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


def part_text(part: Message) -> str:
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
        return str(raw_payload or "")[:MAX_SCAN]
    if not isinstance(payload, bytes):
        return str(payload)[:MAX_SCAN]
    return _decode_bytes(payload[:MAX_SCAN], _param(part, "charset") or None)


def _message_as_text(msg: Message) -> str:
    try:
        return msg.as_string(policy=email.policy.compat32.clone(max_line_length=0))
    except Exception:
        try:
            return str(msg)
        except Exception:
            return ""


def is_attachment(part: Message) -> bool:
    try:
        disposition = (part.get("Content-Disposition") or "").lower()
    except Exception:
        return False
    return disposition.startswith("attachment")
