"""What the classifier says about one message."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Classification:
    kind: str  # a inbound.kinds.Kind value, never QUARANTINED
    bounce_type: str = ""  # a inbound.kinds.BounceType value, or "" (only for bounce)
    recipients: tuple[str, ...] = ()  # failed / complained-about addresses, lowercased
    status_codes: tuple[str, ...] = ()  # RFC 3463 codes found, e.g. ("5.1.1",)
    original_message_ids: tuple[str, ...] = ()  # "<...>" ids of our original message
    reason: str = ""  # short human-readable why
    reply_text: str = ""  # human replies: new text without quoted history
    # Per-recipient HARD/SOFT, parallel to ``recipients`` (bounces only). A
    # multi-recipient DSN can mix "user unknown" and "mailbox full"; the
    # overall ``bounce_type`` is HARD only when every failed recipient is hard.
    recipient_types: tuple[str, ...] = ()
    # Which rule decided the kind ("dsn", "arf", "auto_submitted", ...): a
    # stable name the benchmark scores rule by rule and an admin can filter on.
    rule: str = ""

    def __post_init__(self) -> None:
        # Plain stored values, not enum members: a Classification is data that
        # is compared, printed and serialized exactly as the ledger keeps it.
        object.__setattr__(self, "kind", str(self.kind))
        object.__setattr__(self, "bounce_type", str(self.bounce_type))
        object.__setattr__(self, "recipient_types", tuple(str(t) for t in self.recipient_types))
