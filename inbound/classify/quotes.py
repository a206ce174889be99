"""Quote stripping: the new text of a reply, without the quoted history."""

from __future__ import annotations

import re

from .mime import MAX_SCAN

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
    lines = body[:MAX_SCAN].replace("\r\n", "\n").replace("\r", "\n").split("\n")
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
