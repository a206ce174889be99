"""How each kind of inbound mail is handled, in one table: its words for people, what it does, the suppression it
writes, the conversation category it starts with, and the outbound webhook it becomes.

The kinds themselves (`inbound.kinds.Kind`) stay free of the product's models, so the pure classifier can share
them; this table is read by ingestion (`ingest.effects`, `ingest.record`) and the replies inbox
(`replies.services`). `tests/inbound/test_kind_handling.py` checks that every kind is here and that ingestion has
an action for each kind that acts.
"""

from __future__ import annotations

from dataclasses import dataclass

from sequences.models import Suppression
from sequences.webhooks_out.events import WebhookEvent

from .kinds import Category, Kind


@dataclass(frozen=True)
class Handling:
    effect: str  # what it does, in words (the ledger row's `effect` says what it did, case by case)
    acts: bool = True  # ingestion has an action for it (`ingest.effects.EFFECTS`); else it is recorded only
    suppresses: str = ""  # the suppression reason it writes for the address (Suppression.Reason), if any
    conversation: bool = False  # a correlated one makes or joins the person's conversation (the replies inbox)
    category: Category | None = None  # the category it starts with there; None: suggested from its words
    webhook: WebhookEvent | None = None  # the outbound webhook its timeline event becomes, when it names our message


HANDLING: dict[Kind, Handling] = {
    Kind.HUMAN_REPLY: Handling(
        "stops the person in every sequence and mailbox; joins their conversation, with a suggested category",
        conversation=True, webhook=WebhookEvent.CONTACT_REPLIED),
    Kind.AUTO_REPLY: Handling(
        "holds the person's follow-ups until their stated return (or pauses them, by setting); joins their "
        "conversation as out of office", conversation=True, category=Category.OUT_OF_OFFICE),
    Kind.UNSUBSCRIBE_REQUEST: Handling(
        "suppresses the address (unsubscribe) and stops the person everywhere; joins their conversation",
        suppresses=Suppression.Reason.UNSUBSCRIBE, conversation=True, category=Category.UNSUBSCRIBE),
    Kind.BOUNCE: Handling(
        "a hard bounce suppresses the address and stops the person; a soft one is counted, and repeated soft "
        "bounces suppress", webhook=WebhookEvent.MESSAGE_BOUNCED),
    Kind.COMPLAINT: Handling(
        "suppresses the address (complaint) and stops the person everywhere; counts against the mailbox's "
        "complaint rate", suppresses=Suppression.Reason.COMPLAINT, webhook=WebhookEvent.MESSAGE_COMPLAINED),
    Kind.AUTH_FAILURE: Handling("recorded for an admin to check SPF and DKIM; nothing is suppressed"),
    Kind.UNRELATED: Handling("recorded only: it names nothing we sent", acts=False),
    Kind.QUARANTINED: Handling("recorded with why it could not be read; an admin may look at it", acts=False),
}

# Read by the modules that act on a kind.
SUPPRESS_FOR_KIND = {kind: h.suppresses for kind, h in HANDLING.items() if h.suppresses}
CONVERSATION_KINDS: dict[Kind, Category | None] = {kind: h.category for kind, h in HANDLING.items() if h.conversation}
WEBHOOK_OF_KIND = {kind: h.webhook for kind, h in HANDLING.items() if h.webhook}
