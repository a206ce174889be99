"""Which mailbox sends an enrollment's messages: a leaf (models only) that everything asking "the mailbox of
this job" imports.

An enrollment is given one mailbox of its sequence's pool when it is created (`sequences.services.rotation`)
and keeps it for its whole life: its thread and the replies to it stay in one mailbox. Preparation, the
final check and its daily cap, the hand-off, pauses, probes, provider cancels and the correlation of inbound
mail ask here, never `sequence.mailbox`.
"""

from __future__ import annotations

from django.db.models import Q

from mailboxes.models import Mailbox

from .models import Enrollment


def enrollment_mailbox_id(enrollment: Enrollment) -> int:
    """The id of the mailbox this enrollment sends from (rows written without the services: the sequence's)."""
    return enrollment.mailbox_id or enrollment.sequence.mailbox_id


def enrollment_mailbox(enrollment: Enrollment) -> Mailbox:
    """The mailbox this enrollment sends from; see enrollment_mailbox_id."""
    return enrollment.mailbox if enrollment.mailbox_id else enrollment.sequence.mailbox


def sends_from(mailbox_id: int, *, via: str = "") -> Q:
    """Rows of one mailbox's enrollments: `via=""` on Enrollment, `via="enrollment__"` on SendJob."""
    return Q(**{f"{via}mailbox_id": mailbox_id}) | Q(
        **{f"{via}mailbox__isnull": True, f"{via}sequence__mailbox_id": mailbox_id}
    )
