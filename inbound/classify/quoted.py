"""Rule `quoted_text`: does a mail without our thread headers answer a message we sent? Pure: no ORM.

A colleague or an assistant often answers for the person we wrote to from their own address, and their
mail client does not always keep In-Reply-To/References (a new mail, a forward, a copy-paste). What is
left is the subject ("Re: <our subject>") and the text of our message quoted below theirs. This module
measures both against the messages we sent to people at that company and says which one it answers:

- **quotes**: at least QUOTE_SHARE of the words of our message, and at least QUOTE_MIN_WORDS of them, are
  found in the mail in runs of SHINGLE words (any quote style: ">", Outlook's header block, a pasted copy);
- **one person**: the quote fits one person's message clearly better than any other's (by QUOTE_MARGIN of
  its words), or it holds words only that person's message has (their first name, their company: a run of
  SHINGLE words that no other person's message has), or it names that person's address (Outlook's quoted
  "To:" line) and no other candidate's.

A quote that fits several people alike (the same text sent to each), or a subject with no quote, is
*probable*: an operator decides. Nothing here stops anyone; ingestion acts on the verdict.

The company of an address is its organisational domain (RFC 7489 §3.2): the registrable name under its
public suffix. The full Public Suffix List is not shipped; the common multi-label suffixes are listed
below, so "eu.acme.co.uk" and "acme.co.uk" are one company and "acme.co.uk" and "other.co.uk" are two.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from email.message import Message

from .mime import MAX_SCAN, ctype_of, is_attachment, part_text, walk

SHINGLE = 4  # words in a run that must appear together
QUOTE_SHARE = 0.5  # of our message's words found quoted
QUOTE_MIN_WORDS = 8  # a short message cannot be told apart by its quote
QUOTE_MARGIN = 0.1  # how much better one person's message must fit than the next person's

# Second-level labels under which companies register (co.uk, com.au, ...): the recurring multi-label public
# suffixes of the Public Suffix List. Any other domain's organisational domain is its last two labels.
MULTI_LABEL_SUFFIXES = frozenset(
    """
co.uk org.uk ac.uk gov.uk ltd.uk plc.uk me.uk net.uk sch.uk nhs.uk
com.au net.au org.au edu.au gov.au asn.au id.au co.nz net.nz org.nz govt.nz ac.nz
co.jp ne.jp or.jp ac.jp go.jp co.kr or.kr ne.kr ac.kr go.kr
com.br net.br org.br gov.br com.ar com.mx com.co com.pe com.uy com.ve com.ec com.bo com.py
com.cn net.cn org.cn gov.cn com.hk com.tw com.sg com.my com.ph com.vn com.pk com.bd com.np com.lk
co.in net.in org.in firm.in gen.in ind.in co.id or.id co.th in.th
co.za org.za com.ng com.eg com.sa com.qa com.kw com.bh com.om com.lb co.ke co.tz co.ug co.zw
co.il org.il com.tr com.ua com.pl com.ru com.gr com.cy com.mt com.es com.pt co.at or.at
""".split()
)

# "Re:", "AW:", "Fwd:" and their kin at the start of a subject, any number of times, with "[2]" counts.
_PREFIX = re.compile(
    r"^\s*(?:(?:re|aw|sv|vs|antw|odp|ynt|res|rif|r|fw|fwd|wg|tr|rv|enc|doorst|i)\s*(?:\[\d+\]|\(\d+\))?\s*[:：]\s*)+",
    re.I,
)
_WORD = re.compile(r"\w+")
_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.I | re.S)
_BLOCK_END = re.compile(r"<\s*(br|/p|/div|/tr|/li|/h\d|/blockquote)\b[^>]*>", re.I)
_EMAIL = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+")


def organisational_domain(domain: str) -> str:
    """The registrable part of *domain* (RFC 7489 §3.2, with the suffixes above): eu.acme.com -> acme.com."""
    labels = [label for label in domain.strip().strip(".").lower().split(".") if label]
    size = 3 if len(labels) >= 3 and ".".join(labels[-2:]) in MULTI_LABEL_SUFFIXES else 2
    return ".".join(labels[-size:])


def reply_subject(subject: str) -> str:
    """The subject a mail answers ("Re: AW: Hello  Ada" -> "hello ada"), or '' when it carries no reply or
    forward prefix: a mail that only shares our subject does not say it answers it."""
    stripped = _PREFIX.sub("", subject or "")
    if stripped == (subject or ""):
        return ""
    return same_subject(stripped)


def same_subject(subject: str) -> str:
    """A subject as compared: without reply prefixes, case and extra white space."""
    return " ".join(_PREFIX.sub("", subject or "").casefold().split())


def full_text(msg: Message) -> str:
    """All the text of a mail, quoted history included (the classifier's body text leaves HTML quotes out)."""
    plain, markup = "", ""
    for part in walk(msg):
        if part.is_multipart() or is_attachment(part):
            continue
        ctype = ctype_of(part)
        if ctype == "text/plain" and not plain:
            plain = part_text(part)
        elif ctype == "text/html" and not markup:
            markup = part_text(part)
    if plain.strip():
        return plain[:MAX_SCAN]
    return html.unescape(_TAG.sub(" ", _BLOCK_END.sub("\n", markup[:MAX_SCAN])))


@dataclass(frozen=True)
class Sent:
    """One message we sent, as the person received it."""

    key: int  # the send job
    person: str  # the address it went to
    subject: str
    body: str


@dataclass(frozen=True)
class Evidence:
    """How one mail answers one message we sent."""

    key: int
    person: str
    subject_match: bool
    quoted_words: int  # words of our message found quoted
    total_words: int  # words of our message
    quoted_chars: int  # characters of our message found quoted
    names_person: bool  # the mail names the person's address (a quoted "To:" line)
    own_runs: int = 0  # runs of words found that only this person's message has (a name, a company)

    @property
    def share(self) -> float:
        return self.quoted_words / self.total_words if self.total_words else 0.0

    @property
    def quotes(self) -> bool:
        return self.share >= QUOTE_SHARE and self.quoted_words >= QUOTE_MIN_WORDS

    def words(self) -> str:
        """What the mail has of our message, in words: "quotes 92% of our message to ada@acme.test (310
        characters) and answers its subject"."""
        if self.quotes:
            text = f"quotes {self.share:.0%} of our message to {self.person} ({self.quoted_chars} characters)"
            return text + (" and answers its subject" if self.subject_match else "")
        return f"answers the subject of our message to {self.person}" + (
            f" but quotes only {self.share:.0%} of its text" if self.quoted_words else ", quoting none of its text")


@dataclass(frozen=True)
class Verdict:
    """Which message a mail answers: `stop` beyond doubt, or `probable` (best per person) for an operator."""

    stop: Evidence | None = None
    probable: tuple[Evidence, ...] = ()
    why: str = ""


def evidence_for(subject: str, text: str, sent: list[Sent]) -> list[Evidence]:
    """Measure one mail (its subject and all its text) against each message we sent."""
    answered = reply_subject(subject)
    runs = _runs(_words(text))
    named = {address.lower() for address in _EMAIL.findall(text[:MAX_SCAN])}
    words = {message.key: _words(message.body) for message in sent}
    theirs = {message.key: _runs(words[message.key]) for message in sent}
    found = []
    for message in sent:
        ours = words[message.key]
        covered = [False] * len(ours)
        for i in range(max(len(ours) - SHINGLE + 1, 0)):
            if tuple(ours[i : i + SHINGLE]) in runs:
                covered[i : i + SHINGLE] = [True] * SHINGLE
        others = set().union(*(theirs[m.key] for m in sent if m.person != message.person))
        found.append(Evidence(
            key=message.key, person=message.person,
            subject_match=bool(answered) and answered == same_subject(message.subject),
            quoted_words=sum(covered), total_words=len(ours),
            quoted_chars=sum(len(w) + 1 for w, hit in zip(ours, covered, strict=True) if hit),
            names_person=message.person.lower() in named,
            own_runs=len((theirs[message.key] - others) & runs),
        ))
    return found


def decide(evidence: list[Evidence]) -> Verdict:
    """One person beyond doubt, several (or a subject alone) for an operator, or nothing."""
    best: dict[str, Evidence] = {}
    for item in evidence:
        held = best.get(item.person)
        if held is None or _rank(item) > _rank(held):
            best[item.person] = item
    quoting = sorted((e for e in best.values() if e.quotes), key=lambda e: e.share, reverse=True)
    if quoting:
        top = quoting[0]
        close = [e for e in quoting if e.share >= top.share - QUOTE_MARGIN]
        if len(close) == 1:
            return Verdict(stop=top, why=f"it {top.words()}")
        own = [e for e in close if e.own_runs]
        if len(own) == 1:
            return Verdict(stop=own[0], why=f"it {own[0].words()}, with words only that message has")
        named = [e for e in close if e.names_person]
        if len(named) == 1:
            return Verdict(stop=named[0], why=f"it {named[0].words()}, and names that address")
        people = ", ".join(e.person for e in close)
        return Verdict(probable=tuple(close), why=f"it quotes a message sent alike to {len(close)} people there "
                                                  f"({people}): which one it answers for is not clear")
    subject = [e for e in best.values() if e.subject_match]
    if len(subject) == 1:
        return Verdict(probable=tuple(subject), why=f"it only {subject[0].words()}")
    if subject:
        people = ", ".join(e.person for e in subject)
        return Verdict(probable=tuple(subject), why=f"{len(subject)} people there were sent that subject ({people}) "
                                                    "and it quotes too little of the text to tell which")
    return Verdict()


def _rank(item: Evidence) -> tuple[bool, float, bool]:
    return item.quotes, item.share, item.subject_match


def _runs(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + SHINGLE]) for i in range(max(len(words) - SHINGLE + 1, 0))}


def _words(text: str) -> list[str]:
    """The words of a text, lowercased, without quote markers or line breaks (a quote re-wraps lines)."""
    return _WORD.findall((text or "")[:MAX_SCAN].casefold())
