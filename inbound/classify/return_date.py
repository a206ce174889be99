"""The return date an out-of-office answer states, and the sentence that states it. Pure: no ORM, no clock.

"back on 12 January", "returning Monday", "bis zum 5. März", "de retour le 3
février", "volveré el 10 de enero", "until January 12, 2027", "bis 05.03.2027":
a phrase that announces a return (or the end of an absence) followed by a
date. The common English, German, French and Spanish forms are parsed; a date
without a year is the next such date on or after the day the answer arrived
(a week of slack: "back on 30 November" read on 2 December is last week's
date, not next year's); a weekday is the next one after that day. Anything
else is no date: the caller then holds for its default period.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

MONTHS: dict[int, tuple[str, ...]] = {
    1: ("january", "jan", "januar", "jänner", "janvier", "janv", "enero", "ene"),
    2: ("february", "feb", "februar", "février", "fevrier", "févr", "fevr", "febrero"),
    3: ("march", "mar", "märz", "maerz", "mär", "mars", "marzo"),
    4: ("april", "apr", "avril", "avr", "abril", "abr"),
    5: ("may", "mai", "mayo"),
    6: ("june", "jun", "juni", "juin", "junio"),
    7: ("july", "jul", "juli", "juillet", "juil", "julio"),
    8: ("august", "aug", "août", "aout", "agosto", "ago"),
    9: ("september", "sept", "sep", "septembre", "septiembre", "setiembre"),
    10: ("october", "oct", "oktober", "okt", "octobre", "octubre"),
    11: ("november", "nov", "novembre", "noviembre"),
    12: ("december", "dec", "dezember", "dez", "décembre", "decembre", "déc", "diciembre", "dic"),
}
WEEKDAYS: dict[int, tuple[str, ...]] = {  # date.weekday(): Monday is 0
    0: ("monday", "montag", "lundi", "lunes"),
    1: ("tuesday", "dienstag", "mardi", "martes"),
    2: ("wednesday", "mittwoch", "mercredi", "miércoles", "miercoles"),
    3: ("thursday", "donnerstag", "jeudi", "jueves"),
    4: ("friday", "freitag", "vendredi", "viernes"),
    5: ("saturday", "samstag", "sonnabend", "samedi", "sábado", "sabado"),
    6: ("sunday", "sonntag", "dimanche", "domingo"),
}
TOMORROW = ("tomorrow", "morgen", "demain", "mañana")

MONTH_OF = {name: number for number, names in MONTHS.items() for name in names}
WEEKDAY_OF = {name: number for number, names in WEEKDAYS.items() for name in names}


def _alternation(names) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


_MONTH = rf"(?P<month>{_alternation(MONTH_OF)})\.?"
_WEEKDAY = rf"(?P<weekday>{_alternation(WEEKDAY_OF)})"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th|er|\.|º|°)?"
_YEAR = r"(?:,?\s*(?:de\s+)?(?P<year>20\d\d))?"

# A phrase that announces the return, or the end of the absence, in front of the date.
TRIGGER = re.compile(
    r"\b(?:"
    # English
    r"(?:i\s*(?:'ll|will)\s+be\s+)?back(?:\s+in\s+(?:the\s+)?office)?(?:\s+(?:on|by|from))?"
    r"|return(?:ing)?(?:\s+to\s+(?:the\s+)?office)?(?:\s+(?:on|by))?|i\s+will\s+return(?:\s+on)?"
    r"|(?:away|out(?:\s+of\s+(?:the\s+)?office)?|on\s+(?:leave|vacation|holiday))\s+(?:until|till|through)"
    r"|until|till"
    # German
    r"|bis(?:\s+(?:einschlie(?:ß|ss)lich|inkl\.?))?(?:\s+(?:zum|zur|am))?"
    r"|(?:wieder|zurück)(?:\s+im\s+büro)?(?:\s+(?:am|ab))?|ab(?:\s+(?:dem|am))?"
    # French
    r"|(?:je\s+serai\s+)?de\s+retour(?:\s+au\s+bureau)?(?:\s+(?:le|à\s+partir\s+du))?"
    r"|jusqu['’]\s*(?:au|à|a)(?:\s+le)?|retour\s+(?:le|prévu\s+le)|à\s+partir\s+du"
    # Spanish
    r"|volver[ée](?:\s+a\s+la\s+oficina)?(?:\s+el)?|regres(?:o|aré|are)(?:\s+el)?|de\s+vuelta(?:\s+el)?"
    r"|hasta(?:\s+el)?|a\s+partir\s+del"
    r")(?=[\s,:]|$)",
    re.I,
)
# The date right after a trigger (an optional weekday in front: "back on Monday, 12 January").
_LEAD = rf"\s*[,:]?\s*(?:(?:le|el|am|the|on|den|dem)\s+)?(?:{_WEEKDAY.replace('?P<weekday>', '?:')}\s*,?\s*)?"
_DATE_FORMS = (
    re.compile(_LEAD + r"(?P<y>20\d\d)-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)\b", re.I),
    re.compile(_LEAD + r"(?P<d>[0-3]?\d)[./](?P<m>[01]?\d)(?:[./](?P<y>(?:20)?\d\d))?(?:\b|\.|$)", re.I),
    re.compile(_LEAD + rf"{_DAY}\s*(?:de\s+|of\s+)?{_MONTH}{_YEAR}(?![\w])", re.I),
    re.compile(_LEAD + rf"{_MONTH}\s+{_DAY}{_YEAR}(?![\w])", re.I),
)
_WEEKDAY_FORM = re.compile(rf"\s*[,:]?\s*(?:(?:le|el|am|on|this|next|prochain)\s+)?{_WEEKDAY}(?![\w])", re.I)
_TOMORROW_FORM = re.compile(rf"\s*[,:]?\s*(?:{_alternation(TOMORROW)})(?![\w])", re.I)
# A sentence ends at . ! ? and a space, or a line break; not at a day's ordinal point ("bis zum 5. März").
SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b\d\.)(?<!\b\d\d\.)\s+|\n")
YEAR_SLACK = timedelta(days=7)


@dataclass(frozen=True)
class ReturnDate:
    date: date
    sentence: str  # the sentence the date came from, as written
    quote: str = ""  # from the words that announce the return to the date: "bis zum 14. Dezember"


def return_date(text: str, *, received: date) -> ReturnDate | None:
    """The first return date stated in `text`, read relative to the day the answer was received."""
    for trigger in TRIGGER.finditer(text):
        found = _date_after(text, trigger.end(), received)
        if found is not None:
            moment, end = found
            return ReturnDate(moment, _sentence(text, trigger.start(), end),
                              " ".join(text[trigger.start():end].split()))
    return None


def _date_after(text: str, at: int, received: date) -> tuple[date, int] | None:
    for form in _DATE_FORMS:
        match = form.match(text, at)
        if match is None:
            continue
        moment = _calendar_date(match, received)
        if moment is not None:
            return moment, match.end()
    match = _WEEKDAY_FORM.match(text, at)
    if match is not None:
        ahead = (WEEKDAY_OF[match.group("weekday").lower()] - received.weekday() - 1) % 7 + 1
        return received + timedelta(days=ahead), match.end()
    match = _TOMORROW_FORM.match(text, at)
    if match is not None:
        return received + timedelta(days=1), match.end()
    return None


def _calendar_date(match: re.Match, received: date) -> date | None:
    groups = match.groupdict()
    if groups.get("month"):
        month, day, year = MONTH_OF[groups["month"].lower()], groups["day"], groups.get("year")
    else:
        month, day, year = int(groups["m"]), groups["d"], groups.get("y")
    try:
        if year:
            full = int(year) if len(year) == 4 else 2000 + int(year)
            return date(full, month, int(day))
        moment = date(received.year, month, int(day))
        if moment < received - YEAR_SLACK:
            moment = date(received.year + 1, month, int(day))
        return moment
    except ValueError:
        return None  # 31 February, month 13: not a date


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence around text[start:end], whitespace collapsed."""
    begin = max((m.end() for m in SENTENCE_END.finditer(text, 0, start)), default=0)
    after = SENTENCE_END.search(text, end)
    stop = after.start() if after else len(text)
    return " ".join(text[begin:stop].split())[:300]
