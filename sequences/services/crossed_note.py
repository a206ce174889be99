"""A sequence's crossed note: the words the replies page offers, one click, when a follow-up crossed a reply
(`sequences.crossing`; sent by `inbound.replies.crossed`, never automatically)."""

from __future__ import annotations

from ..crossing import crossed_note_problem
from .campaigns import sequence_setting_set
from .common import ServiceError


def sequence_crossed_note_set(*, sequence_id: int, text: str, actor: str) -> bool:
    """Set the crossed note; True when it changed (then one operator-log row). One transaction, the sequence locked."""
    text = text.strip()
    if problem := crossed_note_problem(text):
        raise ServiceError(f"The crossed note {problem}.")
    return sequence_setting_set(sequence_id=sequence_id, field="crossed_note", value=text, actor=actor,
                                logged=lambda before: text[:200])
