"""What a person's reply means for the sender: its category, suggested from the reply's new text. Pure: no ORM.

The replies inbox shows one suggested category for every human reply, and says which phrase decided and how
sure the suggestion is; an operator's choice always wins over it. ``suggest`` reads only the person's new
text (``Classification.reply_text``: the quoted history already removed).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Category(StrEnum):
    INTERESTED = "interested"
    MEETING = "meeting"
    NOT_INTERESTED = "not_interested"
    WRONG_PERSON = "wrong_person"
    OUT_OF_OFFICE = "out_of_office"
    UNSUBSCRIBE = "unsubscribe"
    OTHER = "other"

    @property
    def label(self) -> str:
        return LABELS[self]


LABELS = {
    Category.INTERESTED: "Interested",
    Category.MEETING: "Meeting booked",
    Category.NOT_INTERESTED: "Not interested",
    Category.WRONG_PERSON: "Wrong person / referral",
    Category.OUT_OF_OFFICE: "Out of office",
    Category.UNSUBSCRIBE: "Unsubscribe",
    Category.OTHER: "Other",
}


@dataclass(frozen=True)
class Suggestion:
    category: Category
    phrase: str = ""  # the words of the reply that decided, as written; "" when nothing did (OTHER)
    confidence: float = 0.0  # 0..1: how sure the suggestion is
    language: str = ""  # "en", "de", "fr", "es", ... of the phrase that decided; "" when unknown


def suggest(text: str) -> Suggestion:
    """The category a reply's new text suggests. Nothing recognised yet: every reply is Other."""
    return Suggestion(Category.OTHER)
