"""Mailbox rotation: which mailbox an enrollment sends from, and choosing one from a sequence's pool.

An enrollment is given one mailbox of its sequence's pool when it is created
and keeps it for its whole life: its thread (In-Reply-To, References) and the
replies to it stay in one mailbox. Everything that asks "the mailbox of this
job" -- preparation, the final check and its daily cap, the hand-off, pauses,
probes, provider cancels and the correlation of inbound mail -- asks
`enrollment_mailbox` / `enrollment_mailbox_id` / `sends_from` here, never
`sequence.mailbox`. A paused or blocked mailbox gets no new enrollments while
another mailbox of the pool can take them; its running enrollments wait for it
(the final check holds or cancels their jobs as for any mailbox) and never
move to another mailbox mid-thread.

A leaf module (models only): labels, messages and ingestion import it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

from mailboxes.models import Mailbox

from ..models import Enrollment, SendJob, Sequence
from ..states import CANCELABLE, PASSED_HANDOFF

# What counts against a mailbox's daily cap: every message that passed the hand-off, or failed after it.
COUNTED = (*PASSED_HANDOFF, SendJob.State.FAILED)


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


def sends_counted(mailbox_id: int, *, now: datetime) -> QuerySet[SendJob]:
    """The jobs that count against the mailbox's daily cap at *now* (authorized in the 24 hours before)."""
    return SendJob.objects.filter(
        sends_from(mailbox_id, via="enrollment__"), authorized_at__gt=now - timedelta(days=1), state__in=COUNTED
    )


def sequence_pool(sequence: Sequence) -> list[Mailbox]:
    """The mailboxes a sequence sends from, in a stable order: its pool, or its one mailbox."""
    return list(sequence.pool.order_by("pk")) or [sequence.mailbox]


def capacity_remaining(mailboxes: list[Mailbox], *, now: datetime) -> dict[int, int]:
    """Per mailbox: its daily cap less what it sent in the last 24 hours and what waits to leave it in the next.

    What waits (scheduled, queued or being prepared, due within a day) is
    counted so that enrollments created together, or one batch after another,
    spread over the pool instead of all landing on the mailbox that sent least.
    """
    out = {}
    for mailbox in mailboxes:
        waiting = SendJob.objects.filter(
            sends_from(mailbox.pk, via="enrollment__"), state__in=CANCELABLE, scheduled_at__lt=now + timedelta(days=1)
        ).count()
        out[mailbox.pk] = mailbox.daily_cap - sends_counted(mailbox.pk, now=now).count() - waiting
    return out


def mailboxes_choose(sequence: Sequence, *, count: int, now: datetime) -> list[Mailbox]:
    """The mailbox for each of *count* new enrollments of *sequence*, by remaining daily capacity.

    Each goes to the available mailbox (not paused, not blocked) with the most
    capacity left, counting the ones chosen before it; ties go to the first in
    the pool. When no mailbox of the pool is available, the choice is made
    among all of them, and the final check holds the job as it does for a
    single paused or blocked mailbox. Enrollments committed concurrently may
    choose the same mailbox: harmless, the final check enforces the cap.
    """
    pool = sequence_pool(sequence)
    available = [m for m in pool if not m.paused and m.blocked_at is None] or pool
    if len(available) == 1:
        return available * count
    left = capacity_remaining(available, now=now)
    chosen = []
    for _ in range(count):
        best = max(available, key=lambda m: left[m.pk])  # max() keeps the first of equals: pool order
        left[best.pk] -= 1
        chosen.append(best)
    return chosen
