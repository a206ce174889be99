"""What an inbound message is, how hard a bounce is, and what a person's reply means (its category): the
classifier's answers and the ledger's stored values.

Enums only (``TextChoices`` is an enum; importing ``django.db.models`` does no
ORM work), so the pure classifier and the models share one vocabulary.
"""

from __future__ import annotations

from enum import StrEnum

from django.db import models


class Kind(models.TextChoices):
    HUMAN_REPLY = "human_reply", "Human reply"
    AUTO_REPLY = "auto_reply", "Auto-reply"
    BOUNCE = "bounce", "Bounce"
    COMPLAINT = "complaint", "Complaint"
    UNSUBSCRIBE_REQUEST = "unsubscribe_request", "Unsubscribe request"
    UNRELATED = "unrelated", "Unrelated"
    # RFC 6591 report that our mail failed SPF/DKIM at the receiver: no one
    # complained, nothing is suppressed, but an admin must see it.
    AUTH_FAILURE = "auth_failure", "Authentication failure report"
    # Never a classifier answer: ingestion's verdict on a message it could not parse.
    QUARANTINED = "quarantined", "Quarantined (could not be parsed)"


class BounceType(models.TextChoices):
    # Suppress the address after one event: the reason cannot heal by itself.
    HARD = "hard", "Hard"
    # May heal (mailbox full, policy, delay): never suppresses on its own.
    SOFT = "soft", "Soft"


# The stored values under the members' names, for code that compares plain strings.
HUMAN_REPLY = Kind.HUMAN_REPLY.value
AUTO_REPLY = Kind.AUTO_REPLY.value
BOUNCE = Kind.BOUNCE.value
COMPLAINT = Kind.COMPLAINT.value
UNSUBSCRIBE_REQUEST = Kind.UNSUBSCRIBE_REQUEST.value
UNRELATED = Kind.UNRELATED.value
AUTH_FAILURE = Kind.AUTH_FAILURE.value
HARD = BounceType.HARD.value
SOFT = BounceType.SOFT.value


# What a person's reply means for the sender: the category the replies inbox suggests (inbound.classify.intent)
# and an operator may choose.
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
