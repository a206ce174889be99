"""What several checks read: addresses, message ids, status codes, report fields, the returned original."""

from __future__ import annotations

import email
import email.header
import email.policy
import email.utils
import re
from collections.abc import Iterable
from email.message import Message
from email.parser import HeaderParser

from .mime import ATTACHED_MESSAGE_TYPES, HEADERS_TYPES, MAX_SCAN, ctype_of, header_of, headers_of, part_text, walk


def addresses_in(value: str) -> list[str]:
    value = decode_local_parts(value)
    try:
        pairs = email.utils.getaddresses([value])
    except Exception:
        pairs = []
    found = [addr.strip().lower() for _, addr in pairs if "@" in addr]
    return found or [m.lower() for m in EMAIL_RE.findall(value)]


# An RFC 2047 encoded-word as a local part (RFC 2047 §5 forbids it, some
# MTAs write it anyway): matched whole, never from the "utf-8?B?" inside it.
_ENCODED_WORD = r"=\?[A-Za-z0-9_.:-]{1,40}\?[BbQq]\?[^?\s]{0,200}\?="
EMAIL_RE = re.compile(
    rf"(?:{_ENCODED_WORD}|[A-Za-z0-9][A-Za-z0-9.!#$%&'*+/=?^_`{{|}}~-]{{0,63}})"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+"
)
_ENCODED_LOCAL_RE = re.compile(rf"{_ENCODED_WORD}(?=@)")
_LOCAL_PART_RE = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}")


def decode_local_parts(text: str) -> str:
    """Decode RFC 2047 encoded-words used as local parts ("=?utf-8?B?ai5kb2U=?=@x" -> "j.doe@x").

    Kept whole when the decoded text is not a plain local part.
    """
    if "=?" not in text:
        return text
    return _ENCODED_LOCAL_RE.sub(_decoded_local_part, text)


def _decoded_local_part(match: re.Match[str]) -> str:
    try:
        (data, charset), *rest = email.header.decode_header(match.group(0))
        decoded = data.decode(charset or "ascii") if isinstance(data, bytes) else data
    except Exception:
        return match.group(0)
    return decoded if not rest and _LOCAL_PART_RE.fullmatch(decoded) else match.group(0)
_MSGID_RE = re.compile(r"<[^<>\s]{1,250}@[^<>\s]{1,250}>")
# RFC 3463 enhanced status code; not part of an IP address or version number.
_STATUS_RE = re.compile(r"(?<![\w.])([245])\.(\d{1,3})\.(\d{1,3})(?!\.?\d)(?!\w)")
# RFC 5321 reply code at the start of an SMTP response.
REPLY_CODE_RE = re.compile(r"(?<![\w.:/-])([245][0-5]\d)(?=[ -]\S)")


def status_codes_in(text: str) -> list[str]:
    return unique(".".join(m.groups()) for m in _STATUS_RE.finditer(text[:MAX_SCAN]))


def unique(items: Iterable[str]) -> list[str]:
    """The non-empty items in first-seen order; linear time (a dict keeps the order)."""
    return [item for item in dict.fromkeys(items) if item]


def normalize_msgid(value: str) -> str:
    value = value.strip()
    if not value:
        return ""
    found = _MSGID_RE.search(value)
    if found:
        return found.group(0)
    token = value.split()[0].strip("<>")
    return f"<{token}>" if "@" in token else ""


# A thread's newest ids come last in References; older ones add nothing and a crafted header may hold thousands.
REFERENCES_CONSIDERED = 100


def own_reply_ids(msg: Message) -> list[str]:
    """In-Reply-To and the last REFERENCES_CONSIDERED ids of References of the message itself (RFC 5322 §3.6.4)."""
    ids: list[str] = []
    for value in headers_of(msg, "In-Reply-To")[:REFERENCES_CONSIDERED]:
        ids.extend(_MSGID_RE.findall(value[:MAX_SCAN])[:REFERENCES_CONSIDERED])
    references: list[str] = []
    for value in headers_of(msg, "References"):
        references = (references + _MSGID_RE.findall(value)[-REFERENCES_CONSIDERED:])[-REFERENCES_CONSIDERED:]
    return unique(ids[:REFERENCES_CONSIDERED] + references)


def embedded_headers(msg: Message) -> list[Message]:
    """Header blocks of the returned original: message/rfc822 or text/rfc822-headers.

    Only originals attached to this report, not messages nested inside them.
    """
    found: list[Message] = []
    for part in walk(msg):
        ctype = ctype_of(part)
        if part is msg:
            continue
        if ctype in ATTACHED_MESSAGE_TYPES:
            try:
                inner = part.get_payload()
            except Exception:
                continue
            if isinstance(inner, list):
                found.extend(m for m in inner[:1] if isinstance(m, Message))
            elif isinstance(inner, str):
                found.append(_parse_headers_text(part_text(part)))
        elif ctype in HEADERS_TYPES:
            found.append(_parse_headers_text(part_text(part)))
    return found


def _parse_headers_text(text: str) -> Message:
    """A returned original's header block; whatever follows it is never parsed (it may nest without end)."""
    try:
        return HeaderParser(policy=email.policy.compat32).parsestr(text.lstrip()[:MAX_SCAN])
    except Exception:
        return Message()


def embedded_message_ids(msg: Message, inline_text: str = "") -> list[str]:
    ids = []
    for headers in embedded_headers(msg):
        ids.append(normalize_msgid(header_of(headers, "Message-ID")))
    # Non-MIME bounces quote the original headers inline after a marker.
    for match in _INLINE_MSGID_RE.finditer(inline_text[:MAX_SCAN]):
        ids.append(normalize_msgid(match.group(1)))
    return unique(ids)


_INLINE_MSGID_RE = re.compile(r"^[ \t>]*Message-ID:[ \t]*(\S[^\r\n]{0,300})", re.I | re.M)


def parse_fields(text: str) -> list[dict[str, str]]:
    """Parse RFC 822-style field blocks (DSN, ARF) into dicts, one per block.

    Blocks are separated by blank lines (RFC 3464 §2.1). Badly formed reports
    omit the blank line, so a repeated field also starts a new block.
    Multi-valued fields (Original-Rcpt-To) are joined with "\n".
    """
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = ""
    for line in text[:MAX_SCAN].splitlines():
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


def embedded_recipients(msg: Message) -> list[str]:
    out: list[str] = []
    for headers in embedded_headers(msg):
        for name in ("To", "X-RCPT-TO", "X-Original-To", "Delivered-To"):
            out.extend(addresses_in(header_of(headers, name)))
            if out:
                return unique(out)
    return []


def on_lowered(rx: re.Pattern[str]) -> re.Pattern[str]:
    """*rx* without re.I, for text passed through str.lower() first.

    CPython's re runs a long case-insensitive alternation several times slower
    than the same alternation on lowercased text. Only for yes/no searches:
    lowering can change offsets ("İ" becomes two characters).
    """
    literal = re.sub(r"\\.", "", rx.pattern)
    if re.search("[A-Z]", literal):
        raise ValueError(f"pattern has an uppercase literal: {rx.pattern[:60]}")
    return re.compile(rx.pattern, rx.flags & ~re.I)


def is_null_sender(msg: Message) -> bool:
    return "Return-Path" in msg and header_of(msg, "Return-Path").strip() in {"<>", ""}
