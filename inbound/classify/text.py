"""The readable texts of a message: a bounce's notification (without the returned copy), a person's body,
HTML as plain text.
"""

from __future__ import annotations

import re
from email.message import Message
from html.parser import HTMLParser

from .mime import HEADERS_TYPES, MAX_SCAN, ctype_of, is_attachment, part_text, walk

# What a bounce has to say about the failure fits well within this.
_MAX_NOTIFICATION = 50_000


def notification_text(msg: Message) -> str:
    """Human-readable text of a bounce, without the returned original."""
    texts = []
    for part in walk(msg):
        ctype = ctype_of(part)
        if part.is_multipart() or ctype in HEADERS_TYPES:
            continue
        # A multipart whose boundary could not be read is left as one string.
        if not ctype.startswith("text/") and not ctype.startswith("multipart/"):
            continue
        if is_attachment(part) and texts:
            continue
        text = part_text(part)
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


def returned_copy_text(msg: Message) -> str:
    texts = []
    for part in walk(msg):
        if not part.is_multipart() and ctype_of(part).startswith("text/"):
            text = part_text(part)
            match = _RETURNED_COPY_RE.search(text)
            if match:
                texts.append(text[match.start() :])
    return "\n".join(texts)


def body_text(msg: Message) -> str:
    plain, html = "", ""
    for part in walk(msg):
        ctype = ctype_of(part)
        if part.is_multipart() or is_attachment(part):
            continue
        if ctype == "text/plain" and not plain:
            plain = part_text(part)
        elif ctype == "text/html" and not html:
            html = part_text(part)
    if plain.strip():
        return plain
    return _html_to_text(html) if html else ""


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
        parser.feed(html[:MAX_SCAN])
        parser.close()
    except Exception:
        return re.sub(r"<[^>]{0,2000}>", " ", html[:MAX_SCAN])
    text = "".join(parser.parts).replace("\xa0", " ")
    return re.sub(r"\n{3,}", "\n\n", text)
