"""Mailbox rotation: choosing the mailbox of a new enrollment from its sequence's pool.

An enrollment keeps the mailbox chosen here for its whole life; which mailbox sends a given enrollment is
`sequences.sending_mailbox`. A paused or blocked mailbox gets no new enrollments while
another mailbox of the pool can take them; its running enrollments wait for it
(the final check holds or cancels their jobs as for any mailbox) and never
move to another mailbox mid-thread.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from mailboxes.models import Mailbox

from .. import daily_cap
from ..models import SendJob, Sequence
from ..sending_mailbox import sends_from
from ..states import CANCELABLE


def sequence_pool(sequence: Sequence) -> list[Mailbox]:
    """The mailboxes a sequence sends from, in a stable order: its pool, or its one mailbox."""
    return list(sequence.pool.order_by("pk")) or [sequence.mailbox]


def capacity_remaining(mailboxes: list[Mailbox], *, now: datetime) -> dict[int, int]:
    """Per mailbox: its daily cap less what it sent today (the final check's counter) and what waits to leave it
    in the next 24 hours.

    What waits (scheduled, queued or being prepared, due within a day) is
    counted so that enrollments created together, or one batch after another,
    spread over the pool instead of all landing on the mailbox that sent least.
    """
    out = {}
    for mailbox in mailboxes:
        waiting = SendJob.objects.filter(
            sends_from(mailbox.pk, via="enrollment__"), state__in=CANCELABLE, scheduled_at__lt=now + timedelta(days=1)
        ).count()
        sent = daily_cap.sent_on(mailbox, daily_cap.cap_day(mailbox, now))
        out[mailbox.pk] = mailbox.daily_cap - sent - waiting
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
