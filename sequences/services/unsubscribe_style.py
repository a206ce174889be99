"""A sequence's unsubscribe style (`Sequence.UnsubscribeStyle`): one-click List-Unsubscribe headers, or the same
link on a plain line at the end of each email.

A message reads the style when it is prepared (`messages.message_prepare`): a change reaches every email not yet
prepared, as a step's new text does; what already left keeps what it carried.
"""

from __future__ import annotations

from django.db import transaction

from ..locks import sequence_lock
from ..models import Sequence
from .common import ServiceError, T, operator_log


def sequence_unsubscribe_style_set(*, sequence_id: int, style: str, actor: str) -> bool:
    """Set how the sequence's emails offer to unsubscribe; True when it changed (then one operator-log row)."""
    if style not in Sequence.UnsubscribeStyle.values:
        styles = ", ".join(Sequence.UnsubscribeStyle.values)
        raise ServiceError(f"Unknown unsubscribe style {style!r}: one of {styles}.")
    with transaction.atomic():
        sequence = sequence_lock(sequence_id=sequence_id)
        before = sequence.unsubscribe_style
        if before == style:
            return False
        sequence.unsubscribe_style = style
        sequence.save(update_fields=["unsubscribe_style"])
        operator_log(actor=actor, action="sequence_edit", target=sequence.name, kind=T.SEQUENCE,
                     target_id=sequence.pk, result={"unsubscribe_style": f"{before} → {style}"})
    return True
