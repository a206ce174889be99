"""What is stored of a report or an automatic answer that only an address ties to something we sent. Pure: no
database.

A bounce matched by its failed recipient, or an auto-reply matched by its sender, may be about the mailbox
owner's own mail to that person: the bounce returns it, the auto-reply quotes it. It still acts (a hard bounce
suppresses, an auto-reply holds or pauses), on the message as received; what is stored of it is its header and
what the report says in fields about the people we wrote to. Never a text part, nor a returned message's
body; a returned message's header only when its Message-ID is one we generated.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from email.message import Message

from ..classify.evidence import addresses_in, embedded_headers, normalize_msgid, parse_fields
from ..classify.mime import DSN_TYPES, ctype_of, header_of, parse_for_classify, part_text, walk

# The machine-readable parts of a report (RFC 3464 delivery status, RFC 5965 feedback report): fields only.
REPORT_FIELD_TYPES = DSN_TYPES | {"message/feedback-report"}
# Report fields that name a recipient of the reported message.
RECIPIENT_FIELDS = ("final-recipient", "original-recipient", "original-rcpt-to")
# The standard parser's test for a header line or its continuation (email.feedparser.headerRE).
_HEADER_LINE_RE = re.compile(rb"^(From |[\041-\071\073-\176]*:|[\t ])")
_LINE_END_RE = re.compile(rb"\r\n|\r|\n")


def source_kept(raw: bytes, *, recipients: Collection[str], our_ids: Collection[str]) -> bytes:
    """The message's header as received, then (a report) its report fields about *recipients* and the header
    of a returned message whose Message-ID is in *our_ids*, as a multipart under the message's own boundary."""
    head = header_block(raw)
    msg = parse_for_classify(raw)
    boundary = msg.get_boundary() if msg.is_multipart() else None
    if not boundary:
        return head
    kept: list[bytes] = []
    for part in walk(msg):
        ctype = ctype_of(part)
        if ctype in REPORT_FIELD_TYPES:
            blocks = _blocks_about(parse_fields(part_text(part)), recipients)
            kept.append(_part(ctype, b"\r\n".join(_fields(block) for block in blocks)))
    for original in embedded_headers(msg):
        if normalize_msgid(header_of(original, "Message-ID")) in our_ids:
            kept.append(_part("text/rfc822-headers", _header_fields(original)))
    if not kept:
        return head
    delimiter = b"--" + boundary.encode("ascii", "surrogateescape")
    return head + b"".join(delimiter + b"\r\n" + part + b"\r\n" for part in kept) + delimiter + b"--\r\n"


def header_block(raw: bytes) -> bytes:
    """The message's header as received, ending in its blank line: the lines the parser reads as header."""
    pos = 0
    while pos < len(raw):  # line by line, never splitting the whole (a large returned letter)
        end = _LINE_END_RE.search(raw, pos)
        line = raw[pos:end.start() if end else len(raw)]
        if not line or not _HEADER_LINE_RE.match(line):
            break
        pos = end.end() if end else len(raw)
    head = raw[:pos]
    if not head.endswith((b"\r", b"\n")):
        head += b"\r\n"
    return head + (b"\n" if head.endswith(b"\n") and not head.endswith(b"\r\n") else b"\r\n")


def _blocks_about(blocks: list[dict[str, str]], recipients: Collection[str]) -> list[dict[str, str]]:
    """The report's blocks, without those about other recipients, and without the other recipients a field
    names alongside ours."""
    kept = []
    for block in blocks:
        named = [a for name in RECIPIENT_FIELDS for a in addresses_in(block.get(name, ""))]
        if named and not any(a in recipients for a in named):
            continue  # the per-recipient block of someone we did not write to
        block = dict(block)
        for name in RECIPIENT_FIELDS:
            if name in block:
                ours = [v for v in block[name].split("\n") if any(a in recipients for a in addresses_in(v))]
                if ours:
                    block[name] = "\n".join(ours)
                else:
                    del block[name]
        kept.append(block)
    return kept


def _fields(block: dict[str, str]) -> bytes:
    lines = [f"{_field_name(name)}: {value}\r\n" for name, values in block.items() for value in values.split("\n")]
    return "".join(lines).encode("utf-8", "surrogateescape")


_ACRONYMS = {"mta", "dsn", "id", "ip", "dkim", "spf"}


def _field_name(name: str) -> str:
    """A report field's name as the RFCs spell it: "reporting-mta" -> "Reporting-MTA"."""
    return "-".join(w.upper() if w in _ACRONYMS else w.capitalize() for w in name.split("-"))


def _header_fields(msg: Message) -> bytes:
    return "".join(f"{name}: {value}\r\n" for name, value in msg.items()).encode("utf-8", "surrogateescape")


def _part(content_type: str, body: bytes) -> bytes:
    return f"Content-Type: {content_type}\r\n\r\n".encode() + body
