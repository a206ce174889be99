"""What a person's reply means for the sender: its category, suggested from the reply's new text. Pure: no ORM.

The replies inbox shows one suggested category for every human reply, and says which phrase decided and how
sure the suggestion is; an operator's choice always wins over it. ``suggest`` reads only the person's new
text (``Classification.reply_text``: the quoted history already removed).

How a suggestion is made (the phrases are in intent_phrases.py, readable per category and language):

1. The new text: any quote left is cut the way ingestion cuts it (quotes.extract_reply_text), then the
   signature ("-- ") and a trailing confidentiality notice.
2. Every phrase of every table is looked for, plus the unsubscribe and out-of-office wording ingestion
   decides on (stop_wording.py, shared with reply.py and autoreply.py), so the inbox and ingestion read the
   same words.
3. Each match is weighed: a negation shortly before it in the same clause turns an interest into a refusal
   ("not really interested") and voids any other phrase ("please don't remove me"); a phrase after "but"
   in its sentence counts a little more ("thanks, but we're all set"); a meeting time asked as a question
   ("does Thursday at 3 work?") is a proposal, so interest, not a booked meeting.
4. The strongest match decides; ties go to the more specific category, then the longer phrase. A single
   telling word (the HINTS table: "pilot", "Angebot") is the weakest match: it decides only when no phrase
   does. Confidence is the match's strength, less when an opposite category was found nearly as strong.

Decisions worth knowing: a reply that puts the conversation off to a later period ("not now, maybe in Q3",
"circle back next year") is Not interested: nothing is wanted now, and the operator may note a date. A
proposed time is Interested; only a confirmed one ("booked", "see you Thursday", a calendar acceptance) is
Meeting booked. A question about removing *other* people from something else ("how do I unsubscribe my team
from X?") is Other. A reply nothing matches is Other with no phrase and confidence 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache, cached_property

from ..kinds import Category
from . import intent_phrases as phrases
from . import learned
from .boilerplate import MOBILE_SIGNATURE_RE, own_words
from .data_requests import data_request_spans
from .negation import NEGATION_WINDOW, asks_back_in, negated_after, negated_before
from .optout import DATA_REQUEST_CHARS, fold, stop_set_aside
from .quotes import extract_reply_text
from .return_date import MONTH_OF, WEEKDAY_OF
from .someone_else import said_of_another
from .stop_question import assent_to_stop
from .stop_wording import (
    FOOTER_LINE_RE,
    OOO_BODY_RE,
    REQUEST_LINES,
    UNSUBSCRIBE_SUBJECT_RE,
    footer_line,
    stop_words_of_another,
    unsubscribe_spans,
)


@dataclass(frozen=True)
class Suggestion:
    category: Category
    phrase: str = ""  # the words of the reply that decided, as written; "" when nothing did (OTHER)
    confidence: float = 0.0  # 0..1: how sure the suggestion is
    language: str = ""  # "en", "de", "fr", "es", ... of the phrase that decided; "" when unknown
    decided_by: str = ""  # PHRASES, MODEL, or "" when nothing did (OTHER)


PHRASES, MODEL = "phrases", "model"


def suggest(text: str) -> Suggestion:
    """The category a reply's new text suggests, what decided it (a phrase, or the model) and how sure it is."""
    body = new_text(text or "")
    if assent := assent_to_stop(text or "", body):
        # "Yes." under our "shall I stop writing?": the answer asks to stop (stop_question.py)
        return Suggestion(Category.UNSUBSCRIBE, phrase=assent, confidence=0.9, language=language_of(body),
                          decided_by=PHRASES)
    return combine(read_phrases(body), learned.predict(model_reading(body)) if body else None, body)


def model_reading(body: str) -> str:
    """What the model reads of the new text: without a footer line ("To unsubscribe from these emails, click
    here") or the company newsletter's own line, which ingestion does not read either (stop_wording.footer_line),
    and without a mobile client's signature line ("Sent from my iPhone"), which says nothing of what the person
    wants."""
    return "\n".join(line for line in body.split("\n")
                     if not (footer_line(line) or MOBILE_SIGNATURE_RE.match(line)))


def _without(model: learned.Prediction, category: Category) -> learned.Prediction:
    """The model's answer when a rule read its words otherwise: its best category but `category`."""
    others = {name: p for name, p in model.probabilities.items() if name != category}
    best = max(others, key=lambda name: others[name])
    return learned.Prediction(best, others[best], others)


def combine(reading: PhraseReading, model: learned.Prediction | None, body: str = "") -> Suggestion:
    """The phrase tables' suggestion or the model's, whichever may decide (the rules in learned/__init__.py)."""
    table = reading.suggestion
    if model is None or table.category is Category.UNSUBSCRIBE:
        return table  # an opt-out the tables read is decided by its words
    if reading.stop_words_set_aside:
        model = _without(model, Category.UNSUBSCRIBE)  # "please don't remove me": the rule that set them aside stands
    if model.category == Category.INTERESTED and table.category is not Category.INTERESTED and (
        _BROKEN_LINK_RE.search(fold(body))
    ):
        model = _without(model, Category.INTERESTED)  # "the link to the demo is broken": a fault, as the rule read it
    if model.category == table.category:
        return replace(table, confidence=max(table.confidence, round(min(model.probability, 0.99), 2)))
    language = table.language or language_of(body)
    by_model = Suggestion(Category(model.category), confidence=round(min(model.probability, 0.99), 2),
                          language=language, decided_by=MODEL)
    if model.of(Category.UNSUBSCRIBE) >= learned.OPTOUT_SUGGESTED:
        # Fail safe: a reply that may ask to stop is shown as an opt-out, never as anything that invites mail.
        return replace(by_model, category=Category.UNSUBSCRIBE,
                       confidence=round(min(model.of(Category.UNSUBSCRIBE), 0.99), 2))
    if table.category is not Category.OTHER and (
        table.confidence >= learned.TABLE_SURE or model.probability < learned.MODEL_SURE
        or model.category == Category.OTHER  # the model's Other is "nothing recognised": a phrase was
    ):
        return table
    return by_model if model.probability >= learned.MODEL_DECIDES or table.category is Category.OTHER else table


class PhraseReading:
    """What the phrase tables make of a reply's new text, each phrase found and weighed once (`read_phrases`):
    their suggestion, and whether a rule read words of stopping in it as no request."""

    def __init__(self, body: str, suggestion: Suggestion, voided: bool) -> None:
        self.body = body
        self.suggestion = suggestion
        self.voided = voided  # a table's stop phrase voided by a negation ("please don't remove me")

    @cached_property
    def stop_words_set_aside(self) -> bool:
        """Whether a rule read the words of stopping as no request: a table's phrase voided by a negation, or
        ingestion's wording set aside (optout.stop_set_aside). The model's reading of those words is then not
        used: the rule that set them aside, and says why, stands. So are words of stopping said of someone or
        something else (stop_wording.stop_words_of_another)."""
        return self.voided or stop_set_aside(self.body) or stop_words_of_another(self.body)


def read_phrases(body: str) -> PhraseReading:
    """The phrase tables' reading of a reply's new text: the phrase that decided and how sure it is."""
    matches = _matches(body)
    # A wish to be put back on the list sets every request to stop in the reply aside: read once per reply.
    back_in = any(m.category is Category.UNSUBSCRIBE for m in matches) and asks_back_in(fold(body[:DATA_REQUEST_CHARS]))
    weighed = [(match, _weigh(body, match, back_in)) for match in matches]
    voided = any(match.category is Category.UNSUBSCRIBE and w is None for match, w in weighed)
    return PhraseReading(body, _suggestion(body, [w for _, w in weighed if w is not None]), voided)


def _suggestion(body: str, found: list[Weighed]) -> Suggestion:
    if not found:
        return Suggestion(Category.OTHER, language=language_of(body))
    best = max(found, key=_rank)
    rival = max((m.strength for m in found if m.category not in _AGREES[best.category]), default=0.0)
    # An opposite answer found nearly as strong makes the suggestion less sure: by up to 0.15 when as strong.
    confidence = best.strength - 0.5 * max(0.0, rival - (best.strength - 0.3))
    start, end = best.start, best.end
    while end < len(body) and body[end].isalnum():
        end += 1  # a phrase that ends inside a word ("no me envíe|n") is shown to the word's end
    return Suggestion(
        best.category,
        phrase=" ".join(body[start:end].split()),
        confidence=round(min(max(confidence, 0.05), 0.99), 2),
        language=best.language or language_of(body),
        decided_by=PHRASES,
    )


# The categories whose phrases a reply of the winning category commonly contains too, without doubt:
# "not interested, remove me" is an unsubscribe, "not me, talk to Ana" a referral, "sounds good, booked".
_AGREES = {
    Category.UNSUBSCRIBE: {Category.UNSUBSCRIBE, Category.NOT_INTERESTED, Category.OTHER},
    Category.OUT_OF_OFFICE: {Category.OUT_OF_OFFICE, Category.WRONG_PERSON, Category.MEETING, Category.OTHER},
    Category.WRONG_PERSON: {Category.WRONG_PERSON, Category.NOT_INTERESTED, Category.INTERESTED, Category.OTHER},
    Category.MEETING: {Category.MEETING, Category.INTERESTED, Category.WRONG_PERSON, Category.OTHER},
    Category.NOT_INTERESTED: {Category.NOT_INTERESTED, Category.OTHER},
    Category.INTERESTED: {Category.INTERESTED, Category.OTHER},
    Category.OTHER: set(Category),
}

# ---------------------------------------------------------------------------------------------------------
# The new text

MAX_TEXT = 5000  # a person's answer is at the top; pasted threads beyond this add nothing
_SIGNATURE_RE = re.compile(r"^--\s*$", re.M)


def new_text(text: str) -> str:
    """The person's own words: without a quote left in, the signature, a mail app's line and the notices under it
    (boilerplate.own_words)."""
    text = text.replace("\r\n", "\n")[:MAX_TEXT]
    text = extract_reply_text(text) or text
    found = _SIGNATURE_RE.search(text)
    if found and text[: found.start()].strip():
        text = text[: found.start()]
    return own_words(text).strip()


# ---------------------------------------------------------------------------------------------------------
# Matching


@dataclass(frozen=True)
class Match:
    category: Category
    strength: float
    start: int
    end: int
    language: str  # "" when the phrase is ingestion's (several languages in one pattern)


def _matches(body: str) -> list[Match]:
    found = []
    for category, language, strength, pattern in _compiled():
        found += [Match(category, strength, m.start(), m.end(), language) for m in pattern.finditer(body)
                  # words of stopping said of someone else or of a detail are left to the other phrases and the
                  # model, as ingestion leaves them (stop_wording._is_request)
                  if category is not Category.UNSUBSCRIBE or not said_of_another(body, m.start(), m.end())]
    # Ingestion's own wording: the same decision the ingestion of this mail made or would make.
    found += [Match(Category.OUT_OF_OFFICE, phrases.STRONG, m.start(), m.end(), "")
              for m in OOO_BODY_RE.finditer(body)]
    # Every request ingestion would suppress on (stop_wording.py: negations, questions about others, footers).
    found += [Match(Category.UNSUBSCRIBE, phrases.DECISIVE, start, end, "") for start, end in unsubscribe_spans(body)]
    # A data-protection demand is read as an opt-out (optout.py), never as interest in the law it names.
    found += [Match(Category.UNSUBSCRIBE, phrases.DECISIVE, start, end, "")
              for start, end in data_request_spans(body[:DATA_REQUEST_CHARS])]
    offset = 0
    for index, line in enumerate(body.split("\n")):
        # A line that is only "stop" or "remove", as ingestion reads a subject.
        if index < REQUEST_LINES and not FOOTER_LINE_RE.search(line):
            found += [
                Match(Category.UNSUBSCRIBE, phrases.DECISIVE, offset + m.start(), offset + m.end(), "")
                for m in UNSUBSCRIBE_SUBJECT_RE.finditer(line)
            ]
        offset += len(line) + 1
    return found


@cache
def _compiled() -> tuple[tuple[Category, str, float, re.Pattern[str]], ...]:
    """Each table's phrases of one language and strength as one pattern (the phrase found is the match)."""
    out = []
    hints = {(category, language): {phrases.HINT: (words,)}
             for category, table in phrases.HINTS.items() for language, words in table.items()}
    for category, table in phrases.TABLES.items():
        for language, tiers in table.items():
            for strength, patterns in (tiers | hints.get((category, language), {})).items():
                alternation = "|".join(f"(?:{_expand(p)})" for p in patterns)
                out.append((Category(category), language, strength, re.compile(
                    rf"(?<!\w)(?:{alternation})(?!\w)", re.I | re.M)))
    return tuple(out)


def _names(names) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


_MACROS = {
    "{day}": rf"(?:{_names(WEEKDAY_OF)}|the \d{{1,2}}(?:st|nd|rd|th))",
    "{month}": rf"(?:{_names(MONTH_OF)})",
    "{time}": r"(?:\d{1,2}(?:[:.h]\d{2})?\s?(?:am|pm|h|uhr)?(?:\s?(?:[A-Z]{3}|my time))?)",
    "{name}": r"(?-i:[A-ZÀ-Ý][a-zà-ÿ]+)",
    "{email}": r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
}
# A letter matches its accented and plain forms both ways (people type "interesse" for "intéressé" and write
# "envía" where the table says "envia"); outside a [...] class only.
_LETTERS = ("aàâá", "eéèêë", "iíîï", "oóô", "uúûù", "nñ", "cç")
_PLAIN = {char: f"[{group}]" for group in _LETTERS for char in group}
_PLAIN.update({"ä": "(?:ä|ae|a)", "ö": "(?:ö|oe|o)", "ü": "(?:ü|ue|u)", "ß": "(?:ß|ss)"})
_MACRO_RE = re.compile("|".join(re.escape(name) for name in _MACROS))


def _expand(pattern: str) -> str:
    """A table's phrase as a regular expression: the macros, spaces, apostrophes and accents of the docstring."""
    parts = _MACRO_RE.split(pattern)
    macros = _MACRO_RE.findall(pattern)
    return "".join(_letters(part) + (_MACROS[macros[i]] if i < len(macros) else "") for i, part in enumerate(parts))


def _letters(pattern: str) -> str:
    out, in_class, escaped = [], False, False
    for char in pattern:
        if escaped or in_class:
            in_class = in_class and char != "]"
            escaped = False
            out.append(char)
        elif char == "\\":
            escaped = True
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == " ":
            out.append(r"[\s-]+")
        elif char in "'’":
            out.append(r"['’`´]?\s?")
        else:
            out.append(_PLAIN.get(char.lower(), char) if char.isalpha() else char)
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------
# Weighing one match


@dataclass(frozen=True)
class Weighed:
    category: Category
    strength: float
    start: int
    end: int
    language: str
    length: int


# Every language's negations at once: a reply mixes languages, and "nicht" cannot mean anything else in English.
_NEGATION_RE = re.compile(rf"(?<!\w)(?:{'|'.join(phrases.NEGATIONS.values())})(?!\w)|n['’]t\b", re.I)
_NEGATABLE = {Category.INTERESTED, Category.MEETING}
_CONTRAST_RE = re.compile(rf"(?<!\w)(?:{phrases.CONTRAST})(?!\w)", re.I)
_SENTENCE_END = re.compile(r"[.!?\n]")
_CLAUSE_END = re.compile(rf"[,;:()\u2013\u2014]|\s-\s|(?<!\w)(?:{phrases.CONTRAST})(?!\w)", re.I)


# A fault reported in what we sent: a link, an attachment or a page that does not work, in the folded sentence.
# The interest words it names ("the link to your case study gives a 404") are what broke, not what is wanted.
_BROKEN_LINK_RE = re.compile(
    r"\b404\b|\b(broken|dead) link|\bpage not found\b"
    r"|\b(link|links|url|attachment|pdf|file|video|page|anhang|datei|lien|piece jointe|fichier|enlace|vinculo"
    r"|adjunto|archivo|collegamento|allegato|bijlage|bestand|anexo|arquivo|ficheiro|zalacznik|plik)\b.{0,60}"
    r"\b(is broken|broken|dead|doesn'?t work|does not work|not working|isn'?t working|won'?t open|will not open"
    r"|leads nowhere|goes nowhere|expired|funktioniert nicht|geht nicht|kaputt|lasst sich nicht offnen"
    r"|fuhrt ins leere|ne (marche|fonctionne|s'ouvre) (pas|plus)|casse|introuvable|no funciona|roto|no (se )?abre"
    r"|non funziona|rotto|non si apre|werkt niet|kapot|opent niet|gaat niet open|nao funciona|quebrado|nao abre"
    r"|nie dziala|nie otwiera sie|zepsut\w*)"
)


def _weigh(body: str, match: Match, back_in: bool) -> Weighed | None:
    """The match's category and strength once its sentence is read, or None when it is negated away (or, for
    a request to stop, when the reply asks to be put back on the list: back_in)."""
    category, strength = match.category, match.strength
    sentence_start = max((m.end() for m in _SENTENCE_END.finditer(body, 0, match.start)), default=0)
    after = _SENTENCE_END.search(body, match.end)
    question = bool(after and after.group() == "?") or body[sentence_start : match.start].lstrip().startswith("¿")
    clauses = _CLAUSE_END.finditer(body, sentence_start, match.start)
    clause_start = max((m.end() for m in clauses), default=sentence_start)
    start = match.start
    negated = [m for m in _NEGATION_RE.finditer(body, clause_start, match.start)
               if len(body[m.start() : match.start].split()) <= phrases.NEGATION_WORDS]
    # Only phrases said in the positive are turned by a negation; the refusals and referrals carry their own
    # ("not the right person"), and a request to stop is often built with one ("je ne veux plus recevoir"),
    # so only a negation right in front voids it ("please don't remove me").
    if category in _NEGATABLE and negated:
        if category is Category.MEETING:
            return None
        category, strength, start = Category.NOT_INTERESTED, strength - 0.05, negated[0].start()
    if category is Category.UNSUBSCRIBE and (
        (negated and len(body[negated[-1].end() : match.start].split()) == 0)
        or negated_before(body[clause_start : match.start])
        or negated_after(body[match.start : match.start + NEGATION_WINDOW])
        or back_in
    ):
        return None  # the same negations ingestion reads ("please dont unsubscribe me", "no quiero darme de baja")
    if category is Category.INTERESTED and _BROKEN_LINK_RE.search(
        fold(body[sentence_start : after.end() if after else len(body)])
    ):
        return None  # "FYI the case study link is broken": a fault reported, not an interest
    if category is Category.MEETING and question:
        category = Category.INTERESTED  # "does Thursday at 3 work?" proposes a time; nothing is booked yet
    if _CONTRAST_RE.search(body, sentence_start, match.start):
        strength += phrases.CONTRAST_BONUS
    return Weighed(category, strength, start, match.end, match.language, match.end - match.start)


_ORDER = {Category(name): len(phrases.CATEGORY_ORDER) - i for i, name in enumerate(phrases.CATEGORY_ORDER)}


def _rank(match: Weighed) -> tuple[float, int, int, int]:
    return round(match.strength, 3), _ORDER[match.category], match.length, -match.start


# ---------------------------------------------------------------------------------------------------------
# Language


_STOPWORDS = {lang: frozenset(words.split()) for lang, words in phrases.STOPWORDS.items()}
_WORD_RE = re.compile(r"\w+(?:'\w+)?")


def language_of(text: str) -> str:
    """The language most of the reply's small words belong to; "" when none is found."""
    words = [w.lower() for w in _WORD_RE.findall(text[:2000])]
    scores = {lang: sum(w in stop for w in words) for lang, stop in _STOPWORDS.items()}
    best = max(scores, key=lambda lang: scores[lang])
    return best if scores[best] else ""
