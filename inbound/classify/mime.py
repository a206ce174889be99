"""Safe message access: a tolerant parse, a bounded walk over the parts, decoded headers and part text."""

from __future__ import annotations

import email
import email.errors
import email.header
import email.policy
import re
from collections.abc import Iterator
from email.message import Message
from email.parser import HeaderParser

# Regexes run over at most this many characters of any one text: a huge
# attachment must not make classification slow, and everything a bounce or a
# reply needs to say is said near the top.
MAX_SCAN = 200_000


# The parts read of one message. A message whose parts nest deeper or number more is not read part by part at
# all, only its header (see parse_for_classify): a bound that silently skipped what lies beyond it would let a
# sender hide a reply under an out-of-office text, and the standard parser recurses once per level (about a
# thousand levels exhaust Python's stack).
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

    A body whose parts nest deeper than _MAX_DEPTH or number more than
    _MAX_PARTS is not parsed: the message is its header alone, with a
    PartsNotRead defect saying why (``parts_not_read``). The nesting is
    measured by a linear scan before the parser runs, and on the parsed tree.
    """
    raw = _repair_boundary(raw)
    why = _structure_beyond_bounds(raw)
    if not why:
        try:
            msg = email.message_from_bytes(raw, policy=email.policy.compat32)
        except RecursionError:
            why = f"MIME parts nested deeper than {_MAX_DEPTH} levels"
        else:
            why = _tree_beyond_bounds(msg)
            if not why:
                return msg
    return _header_alone(raw, why)


class PartsNotRead(email.errors.MessageDefect):
    """The body's MIME structure is beyond the bounds read: only the message's header was parsed."""


def parts_not_read(msg: Message) -> str:
    """Why the body of *msg* was not read part by part ('' when it was)."""
    return next((str(d) for d in getattr(msg, "defects", ()) if isinstance(d, PartsNotRead)), "")


def _header_alone(raw: bytes, why: str) -> Message:
    msg = HeaderParser(policy=email.policy.compat32).parsestr(raw.decode("ascii", "surrogateescape"))
    msg.set_payload("")
    msg.defects.append(PartsNotRead(why))
    return msg


# The standard parser's own tests: a header line (or its continuation), and what may follow a boundary.
_HEADER_LINE_RE = re.compile(rb"^(From |[\041-\071\073-\176]*:|[\t ])")
_BOUNDARY_END_RE = re.compile(rb"(?P<end>--)?[ \t]*$")
_LINE_END_RE = re.compile(rb"\r\n|\r|\n")
_LINE_DASHES_RE = re.compile(rb"[\r\n]--")


def _structure_beyond_bounds(raw: bytes) -> str:
    """Whether the parts of *raw* nest deeper than _MAX_DEPTH, read line by line as the standard parser reads
    them but without recursion, so that the parser never sees such a message: why, or ''.

    Linear: a body is skipped to its next line that starts with "--" (only a boundary matters there), each such
    line and each header line is read once (a line that ends a header block twice) and compared with at most
    _MAX_DEPTH open boundaries. The number of parts is counted on the parsed tree (_tree_beyond_bounds): it
    costs the parser no recursion.
    """
    open_: list[tuple[bytes, int, bool]] = []  # the open multiparts: (separator, level of their parts, digest)
    level = 0
    header: list[bytes] | None = []  # the header block being read, of a part at `level`; None in a body
    digest = False  # that part is a part of a multipart/digest: message/rfc822 unless it says otherwise

    def boundary_at(line: bytes) -> tuple[int, bool] | None:
        """The open multipart whose boundary *line* is (innermost first), and whether it closes it."""
        if line.startswith(b"--"):
            for i in range(len(open_) - 1, -1, -1):
                separator = open_[i][0]
                if line.startswith(separator) and (end := _BOUNDARY_END_RE.match(line, len(separator))):
                    return i, bool(end.group("end"))
        return None

    pos, size = 0, len(raw)
    while pos <= size:
        if header is None and not open_:  # the body of the message or of a message part: no more parts
            break
        if header is None and not raw.startswith(b"--", pos):  # to the next line that starts with "--"
            dashes = _LINE_DASHES_RE.search(raw, pos)
            if dashes is None:
                break
            pos = dashes.start() + 1
        end = _LINE_END_RE.search(raw, pos)
        line, pos = (raw[pos:end.start()], end.end()) if end else (raw[pos:], size + 1)
        found = boundary_at(line)
        while header is not None:
            if line and found is None and _HEADER_LINE_RE.match(line):
                header.append(line)
                break
            if level > _MAX_DEPTH:
                return f"MIME parts nested deeper than {_MAX_DEPTH} levels"
            part = HeaderParser(policy=email.policy.compat32).parsestr(
                b"\n".join(header).decode("ascii", "surrogateescape") + "\n\n")
            if digest:
                part.set_default_type("message/rfc822")
            header, digest = None, False
            boundary = part.get_boundary() if part.get_content_maintype() == "multipart" else None
            if boundary:
                separator = b"--" + boundary.encode("utf-8", "surrogateescape")
                open_.append((separator, level + 1, part.get_content_subtype() == "digest"))
                found = boundary_at(line)
            elif part.get_content_maintype() == "message" and found is None:  # a message follows: its header
                level, header = level + 1, []
            if not line:  # the blank line that ends a header is consumed; any other line is read again
                break
        if header is not None or found is None:
            continue
        i, closes = found
        part_level, in_digest = open_[i][1], open_[i][2]
        if closes:
            del open_[i:]
            level = part_level - 1  # the multipart's epilogue
        else:
            del open_[i + 1:]
            level, header, digest = part_level, [], in_digest
    return ""


def _tree_beyond_bounds(msg: Message) -> str:
    """The same bounds on the parsed tree, iteratively: why *msg* is beyond them, or ''."""
    stack: list[tuple[Message, int]] = [(msg, 0)]
    parts = 0
    while stack:
        part, depth = stack.pop()
        parts += 1
        if depth > _MAX_DEPTH:
            return f"MIME parts nested deeper than {_MAX_DEPTH} levels"
        if parts > _MAX_PARTS:
            return f"more than {_MAX_PARTS} MIME parts"
        children = part.get_payload() if part.is_multipart() else None
        if isinstance(children, list):
            stack.extend((c, depth + 1) for c in children if isinstance(c, Message))
    return ""


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
