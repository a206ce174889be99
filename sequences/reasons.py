"""Why: every reason a person stops, a job is canceled, refused, held, deferred or scheduled (again), and held
follow-ups are released, with its words for people and its effect, in one place.

The values are what the rows and the timeline store (`Enrollment.stop_reason`, `SendJob.cancel_reason`, a
`job_deferred` or `job_scheduled` event's `reason`); pages and the API show `words`, never the value. A module
that needs a reason names a member (`Reason.ENROLLMENT_PAUSED`), never its string: `tests/sequences/
test_reasons.py` reads every product module and refuses a reason spelled as a literal.

A new reason: a member here, its `Meaning` in `MEANINGS` (the test refuses a member without one), and, for a
person's stop, a member of `StopReason` too (the column's choices).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from django.db import models


class Role(StrEnum):
    STOP = "stop"  # why a person stopped in a sequence (Enrollment.stop_reason); their pending jobs end with it
    CANCEL = "cancel"  # why a job ended without being sent (SendJob.cancel_reason): a pause, or the final check
    HOLD = "hold"  # why the final check put a job back to wait (a `job_deferred` event), to be checked again
    SCHEDULE = "schedule"  # why a job was made (or made due again): a `job_scheduled` event's reason
    RELEASE = "release"  # why follow-ups held for a mailbox's reply view were made due at once


class Reason(models.TextChoices):
    # A person's stop: it cancels every job of theirs that has not passed the final check, with the same reason.
    REPLIED = "replied", "Replied"
    COLLEAGUE_REPLIED = "colleague_replied", "Someone at the company replied"
    UNSUBSCRIBED = "unsubscribed", "Unsubscribed"
    COMPLAINED = "complained", "Complained"
    HARD_BOUNCE = "hard_bounce", "Hard bounce"
    SUPPRESSED = "suppressed", "Suppressed"
    OPERATOR = "operator", "Stopped by operator"
    FAILED = "failed", "A step failed"
    MEETING_BOOKED = "meeting_booked", "Booked a meeting"
    RULE_UNDONE = "rule_undone", "Reply rule undone"
    # A job canceled by a pause, or refused by the final check.
    ENROLLMENT_STOPPED = "enrollment_stopped", "Enrollment stopped"
    ENROLLMENT_PAUSED = "enrollment_paused", "Enrollment paused"
    ENROLLMENT_COMPLETED = "enrollment_completed", "Enrollment finished"
    SEQUENCE_PAUSED = "sequence_paused", "Sequence paused"
    MAILBOX_PAUSED = "mailbox_paused", "Mailbox paused"
    PREVIOUS_STEP_NOT_SUBMITTED = "previous_step_not_submitted", "Previous step not sent"
    VARIANT_STOPPED = "variant_stopped", "A/B variant stopped"
    STOPPED_DURING_HAND_OFF = "stopped_during_hand_off", "Stopped during the hand-off"
    # A job the final check held or deferred.
    SEQUENCE_DRAFT = "sequence_draft", "Sequence is a draft"
    MAILBOX_BLOCKED = "mailbox_blocked", "Mailbox blocked"
    REPLY_VIEW = "reply_view", "Replies not read"
    OUTSIDE_SENDING_WINDOW = "outside_sending_window", "Outside the sending window"
    DAILY_CAP_REACHED = "daily_cap_reached", "Daily cap reached"
    MIN_GAP = "min_gap", "Minimum gap"
    OUT_OF_OFFICE = "out_of_office", "Out of office"
    # A job made, or made due again.
    ENROLLED = "enrolled", "Enrolled"
    RESUMED = "resumed", "Enrollment resumed"
    SEQUENCE_RESUMED = "sequence_resumed", "Sequence resumed"
    SEQUENCE_LAUNCHED = "sequence_launched", "Sequence launched"
    MAILBOX_RESUMED = "mailbox_resumed", "Mailbox resumed"
    PREVIOUS_STEP_SUBMITTED = "previous_step_submitted", "Previous step sent"
    DOCTOR = "doctor", "Repaired by the doctor"
    # Held follow-ups released: the cause of their hold was lifted.
    REPLY_VIEW_RESTORED = "reply_view_restored", "Replies read again"
    MAILBOX_CHANGED = "mailbox_changed", "Mailbox settings changed"
    CONFIG_APPLIED = "config_applied", "Configuration applied"


class StopReason(models.TextChoices):
    """The reasons a person stops (the choices of `Enrollment.stop_reason`): members of `Reason` with the role
    STOP, under the same values and labels."""

    REPLIED = Reason.REPLIED.value, Reason.REPLIED.label
    COLLEAGUE_REPLIED = Reason.COLLEAGUE_REPLIED.value, Reason.COLLEAGUE_REPLIED.label
    UNSUBSCRIBED = Reason.UNSUBSCRIBED.value, Reason.UNSUBSCRIBED.label
    COMPLAINED = Reason.COMPLAINED.value, Reason.COMPLAINED.label
    HARD_BOUNCE = Reason.HARD_BOUNCE.value, Reason.HARD_BOUNCE.label
    SUPPRESSED = Reason.SUPPRESSED.value, Reason.SUPPRESSED.label
    OPERATOR = Reason.OPERATOR.value, Reason.OPERATOR.label
    FAILED = Reason.FAILED.value, Reason.FAILED.label  # the message could not be sent; an operator may retry it
    MEETING_BOOKED = Reason.MEETING_BOOKED.value, Reason.MEETING_BOOKED.label  # a Calendly or Cal.com booking
    RULE_UNDONE = Reason.RULE_UNDONE.value, Reason.RULE_UNDONE.label  # a reply rule's enrollment, its reply relabeled


@dataclass(frozen=True)
class Meaning:
    words: str  # a sentence for people
    effect: str  # what it does, in words
    roles: frozenset[Role]


def _m(words: str, effect: str, *roles: Role) -> Meaning:
    return Meaning(words, effect, frozenset(roles))


_STOPS = "stops the person in this sequence; each job of theirs not yet handed off is canceled, never sent"
_STOPS_EVERYWHERE = ("suppresses the address and stops the person in every sequence; each job not yet handed off "
                     "is canceled, never sent")
_PAUSE = "cancels the jobs not yet handed off; resuming schedules the next step again"
_REFUSED = "the final check refuses the job: it is canceled, never sent"
_WAITS = "the final check puts the job back to wait and checks it again when it is due"

R = Role
MEANINGS: dict[Reason, Meaning] = {
    Reason.REPLIED: _m("The person replied.", _STOPS, R.STOP, R.CANCEL),
    Reason.COLLEAGUE_REPLIED: _m("Someone at the same company replied.", _STOPS, R.STOP, R.CANCEL),
    Reason.UNSUBSCRIBED: _m("The person unsubscribed.", _STOPS_EVERYWHERE, R.STOP, R.CANCEL),
    Reason.COMPLAINED: _m("The person marked a message as spam.", _STOPS_EVERYWHERE, R.STOP, R.CANCEL),
    Reason.HARD_BOUNCE: _m("The address does not exist (hard bounce).", _STOPS_EVERYWHERE, R.STOP, R.CANCEL),
    Reason.SUPPRESSED: _m("The address is in the suppression ledger.",
                          "stops the person; the final check refuses every job to the address", R.STOP, R.CANCEL),
    Reason.OPERATOR: _m("An operator stopped it.", _STOPS, R.STOP, R.CANCEL),
    Reason.FAILED: _m("A step could not be sent.",
                      "stops the person after a permanent failure; an operator may retry the step", R.STOP, R.CANCEL),
    Reason.MEETING_BOOKED: _m("The person booked a meeting.",
                              "stops the person in every sequence; each job not yet handed off is canceled",
                              R.STOP, R.CANCEL),
    Reason.RULE_UNDONE: _m("The reply's category was changed; the rule that enrolled the person no longer applies.",
                           "stops the person in the sequence a reply rule enrolled them in, before it sent them "
                           "anything; each job not yet handed off is canceled, never sent", R.STOP, R.CANCEL),
    Reason.ENROLLMENT_STOPPED: _m("The enrollment was stopped.", _REFUSED, R.CANCEL),
    Reason.ENROLLMENT_PAUSED: _m("The enrollment was paused.", _PAUSE, R.CANCEL),
    Reason.ENROLLMENT_COMPLETED: _m("The enrollment had already finished.", _REFUSED, R.CANCEL),
    Reason.SEQUENCE_PAUSED: _m("The sequence was paused.", _PAUSE, R.CANCEL),
    Reason.MAILBOX_PAUSED: _m("The mailbox was paused.", _PAUSE, R.CANCEL),
    Reason.PREVIOUS_STEP_NOT_SUBMITTED: _m("The previous step was not sent.", _REFUSED, R.CANCEL),
    Reason.VARIANT_STOPPED: _m("Its A/B variant was stopped; the step went to a remaining variant.",
                               "the job is canceled and the step scheduled again from a running variant (the "
                               "person stops when none is left)", R.CANCEL),
    Reason.STOPPED_DURING_HAND_OFF: _m("Stopped while the message was being handed off.",
                                       "asks the provider to cancel a message it holds for later delivery",
                                       R.CANCEL),
    Reason.SEQUENCE_DRAFT: _m("The sequence is a draft: nothing is sent until it is launched.",
                              _WAITS + "; launching makes it due", R.HOLD),
    Reason.MAILBOX_BLOCKED: _m("The mailbox cannot send right now (blocked).",
                               _WAITS + "; unblocking the mailbox makes it due at once", R.HOLD),
    Reason.REPLY_VIEW: _m("The mailbox has not read its replies recently enough to send a follow-up.",
                          _WAITS + "; reading the replies again makes it due at once", R.HOLD),
    Reason.OUTSIDE_SENDING_WINDOW: _m("Outside the mailbox's sending window.",
                                      _WAITS + " at the window's next opening", R.HOLD),
    Reason.DAILY_CAP_REACHED: _m("The mailbox reached its daily cap.", _WAITS + " the next day", R.HOLD),
    Reason.MIN_GAP: _m("The mailbox keeps its minimum gap between two messages.",
                       _WAITS + " after the gap", R.HOLD),
    Reason.OUT_OF_OFFICE: _m("The person is away (an out-of-office answer).",
                             "the person's live jobs wait until their stated return (or the default hold), then go "
                             "through the final check again", R.HOLD),
    Reason.ENROLLED: _m("The person was enrolled.", "the first step's job is made", R.SCHEDULE),
    Reason.RESUMED: _m("The enrollment was resumed.", "the next step's job is made again", R.SCHEDULE),
    Reason.SEQUENCE_RESUMED: _m("The sequence was resumed.", "each active person's next step is made again",
                                R.SCHEDULE),
    Reason.SEQUENCE_LAUNCHED: _m("The sequence was launched.", "each enrolled person's first step is made due",
                                 R.SCHEDULE),
    Reason.MAILBOX_RESUMED: _m("The mailbox was resumed.", "the next step of each person it sends for is made "
                                                          "again", R.SCHEDULE),
    Reason.PREVIOUS_STEP_SUBMITTED: _m("The previous step was sent.", "the next step's job is made", R.SCHEDULE),
    Reason.DOCTOR: _m("A person with no job was found and repaired.", "the next step's job is made", R.SCHEDULE),
    Reason.REPLY_VIEW_RESTORED: _m("The mailbox reads its replies again.", "its held follow-ups are due at once, "
                                   "each through the final check again", R.RELEASE),
    Reason.MAILBOX_CHANGED: _m("The mailbox's settings were changed.", "its held follow-ups are due at once, each "
                               "through the final check again", R.RELEASE),
    Reason.CONFIG_APPLIED: _m("A configuration file was applied.", "its held follow-ups are due at once, each "
                              "through the final check again", R.RELEASE),
}
del R

# The final check's deferrals that hold a job while their cause lasts: their re-checks write nothing while they
# find the same hold (`sequences.services.sending`).
HOLDS_WHILE_CAUSE_LASTS = (Reason.MAILBOX_BLOCKED, Reason.REPLY_VIEW)


def words(code: str) -> str:
    """A stored reason as a sentence for people; a code this version does not know (written by an older one)
    as its own words."""
    try:
        return MEANINGS[Reason(code)].words
    except ValueError:
        text = code.replace("_", " ").strip()
        return f"{text[:1].upper()}{text[1:]}." if text else ""
