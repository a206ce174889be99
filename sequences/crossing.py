"""Crossed: a message of ours that left although its person's stop was on its way. One definition, read by the
send ledger (`ledger`), the replies pages, the enrollment page and the results (`inbound.replies.crossed`), so
no two of them can disagree about a message.

A message crossed the stop when it passed the final check before the stop was committed (it could not be held
back any more) and either
- the stop was committed while it was being handed off (authorized, not yet submitted), or
- the reply that caused the stop had reached the mailbox (IMAP INTERNALDATE) before the message was submitted:
  the person wrote before our message reached them, whether or not the final check could have known.

A message submitted before the reply reached the mailbox did not cross it: the person may have read it. The
stop a message is measured against is the first stop or pause of its enrollment committed after its final check
(`first_stop_after`). Times: the database clock, except INTERNALDATE, which is the IMAP server's and says the
whole second only: a reply is known to have reached the mailbox before our message left only when that whole
second had ended by the submission (RECEIVED_WITHIN). A reply that arrived in the second our message left is not
called crossed on its arrival alone: the record cannot tell which came first, and where it is silent the pages
say less, never more.
Also what makes a sequence's crossed note (`Sequence.crossed_note`) acceptable, for the editor and the files.
Pure: no queries, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from .models import CROSSED_NOTE_MAX
from .storable import unstorable
from .timeline import Event

# INTERNALDATE's precision: the reply arrived at some moment of that second.
RECEIVED_WITHIN = timedelta(seconds=1)
# The events that end sending to an enrollment for the ledger's "crossed": a stop, or a pause (an auto-reply's).
STOPPING = (Event.ENROLLMENT_STOPPED, Event.ENROLLMENT_PAUSED)


class Crossed(StrEnum):
    WHILE_HANDED_OFF = "while_handed_off"  # the stop was committed between the final check and the submission
    AFTER_REPLY = "after_reply"  # the reply reached the mailbox before the message was submitted


class _Event(Protocol):
    kind: str
    at: datetime


def crossed(*, authorized_at: datetime | None, submitted_at: datetime | None, stop_at: datetime | None,
            received_at: datetime | None) -> Crossed | None:
    """How a message that passed the final check at `authorized_at` crossed the stop committed at `stop_at` (its
    reply received at `received_at`, when a reply caused it), or None when it did not."""
    if authorized_at is None or stop_at is None or stop_at <= authorized_at:
        return None  # no final check passed, or the stop was committed first (the message was then held back)
    if submitted_at is None or stop_at < submitted_at:
        return Crossed.WHILE_HANDED_OFF
    if received_at is not None and received_at + RECEIVED_WITHIN <= submitted_at:
        return Crossed.AFTER_REPLY
    return None


def first_stop_after[E: _Event](events: Iterable[E], authorized_at: datetime | None) -> E | None:
    """The first stop or pause of the enrollment committed after its message passed the final check; `events` in
    the order they were written."""
    if authorized_at is None:
        return None
    return next((e for e in events if e.kind in STOPPING and e.at > authorized_at), None)


def crossed_note_problem(text: str) -> str:
    """What is wrong with a note, in words for a form or a file ("" when nothing is)."""
    if not text.strip():
        return "must not be empty"
    if len(text) > CROSSED_NOTE_MAX:
        return f"is {len(text)} characters long; at most {CROSSED_NOTE_MAX}"
    if unstorable(text):
        return "holds a NUL character or a lone surrogate, which no mail can carry"
    return ""
