"""Raw message -> the fields ingestion needs, and the classifier's verdict. Pure: no database."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.header import decode_header, make_header
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import parseaddr

from sequences.selectors import normalize_email

from ..classify import Classification, classify
from ..classify.evidence import REFERENCES_CONSIDERED
from .triage import machine_signal

MSGID = re.compile(r"<[^<>\s]+>")
HEADER_LIMIT = 8000  # characters of one header value that are decoded and kept
KEY_HEADERS = ("From", "To", "Cc", "Subject", "Date", "Message-ID", "In-Reply-To", "References", "Return-Path",
               "Auto-Submitted", "Precedence", "Content-Type", "X-Autoreply", "X-Auto-Response-Suppress")


@dataclass
class Parsed:
    """What ingestion needs from a raw message, derived without the database."""

    message_id: str = ""
    from_address: str = ""
    from_name: str = ""
    subject: str = ""
    in_reply_to: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    machine: str = ""  # a header that marks the mail as machine-generated, in words ("" when none does)
    classification: Classification | None = None
    error: str = ""

    @property
    def own_ids(self) -> list[str]:
        """The ids this mail names as its thread, strongest first: In-Reply-To, then References newest first."""
        return list(dict.fromkeys([*self.in_reply_to, *reversed(self.references)]))


def parse(raw: bytes) -> Parsed:
    """Parse and classify; never raises (hostile input is recorded and quarantined)."""
    out = parse_headers(raw)
    try:
        out.classification = classify(raw)
    except Exception as exc:  # noqa: BLE001
        out.error = (out.error + "; " if out.error else "") + f"classifier failed: {type(exc).__name__}: {exc}"
    return out


def parse_headers(raw: bytes) -> Parsed:
    """The header fields only (*raw* is a message's header or all of it); no classification. Never raises.

    Linear in the size of the header: ids are found with one regular-expression pass and only the
    last REFERENCES_CONSIDERED of References are kept (a thread's newest ids come last).
    """
    out = Parsed()
    try:
        # compat32 keeps header values as raw strings: the modern policy's
        # header parser takes seconds on one crafted header of a few KB
        # (found by the bigheader fault drill), which would hold the poller
        # and every reply behind it. Values are cut before they are decoded.
        # The header alone: the body's parts (nested a thousand levels deep, say) never decide what the
        # header says, so a reply naming our Message-ID is tied to it whatever its body is.
        msg = BytesHeaderParser(policy=compat32).parsebytes(raw)
        for name in KEY_HEADERS:
            value = msg.get(name)
            if value is not None:
                out.headers[name] = clean(_header_text(value))[:2000]
        out.message_id = _first_id(out.headers.get("Message-ID", ""))
        out.from_name, address = parseaddr(out.headers.get("From", ""))
        out.from_address = normalize_email(address) if "@" in address else ""
        out.subject = out.headers.get("Subject", "")[:1000]
        out.in_reply_to = MSGID.findall(str(msg.get("In-Reply-To", ""))[:HEADER_LIMIT])[:REFERENCES_CONSIDERED]
        out.references = MSGID.findall(str(msg.get("References", "")))[-REFERENCES_CONSIDERED:]
        out.machine = machine_signal(msg)
    except Exception as exc:  # noqa: BLE001 - content must never crash the poller
        out.error = f"header parse failed: {type(exc).__name__}: {exc}"
    return out


def _header_text(value: object) -> str:
    text = str(value)[:HEADER_LIMIT]
    try:
        return str(make_header(decode_header(text)))
    except Exception:  # noqa: BLE001 - undecodable words stay as they came
        return text


def clean(value: str) -> str:
    return value.replace("\x00", "").strip()


def _first_id(value: str) -> str:
    found = MSGID.findall(value)
    return (found[0] if found else clean(value))[:998]  # the column's size: a longer id must not fail the row
