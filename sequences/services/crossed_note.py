"""A sequence's crossed note: the words the replies page offers, one click, when a follow-up crossed a reply
(`sequences.crossing`; sent by `inbound.replies.crossed`, never automatically)."""

from __future__ import annotations

from django.db import transaction

from ..crossing import crossed_note_problem
from ..locks import sequence_lock
from .common import ServiceError, T, operator_log


def sequence_crossed_note_set(*, sequence_id: int, text: str, actor: str) -> bool:
    """Set the crossed note; True when it changed (then one operator-log row). One transaction, the sequence locked."""
    text = text.strip()
    if problem := crossed_note_problem(text):
        raise ServiceError(f"The crossed note {problem}.")
    with transaction.atomic():
        sequence = sequence_lock(sequence_id=sequence_id)
        if sequence.crossed_note == text:
            return False
        sequence.crossed_note = text
        sequence.save(update_fields=["crossed_note"])
        operator_log(actor=actor, action="sequence_edit", target=sequence.name, kind=T.SEQUENCE,
                     target_id=sequence.pk, result={"crossed_note": text[:200]})
    return True
