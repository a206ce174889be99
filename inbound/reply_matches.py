"""Replies from colleagues (inbound rule `quoted_text`): the evidence ingestion records, and an operator's
decision on a probable one.

Ingestion writes the matches in the inbound message's own transaction (`reply_matches_record_in_transaction`)
and, when one person is beyond doubt, stops them there too. A probable match waits for an operator: "stop"
stops the person through the one stop path (the same words as a reply: "assistant@… replied for p03@…");
"dismiss" records that it was not a reply. Either decision is one guarded update from `probable`, so two
clicks (or two operators) decide once.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from db.clock import DbClock
from sequences.services.common import ServiceError, T, operator_log
from sequences.services.stops import reply_stop_in_transaction
from sequences.stop_summary import StopSummary

from .models import ReplyMatch

M = ReplyMatch.Status


@dataclass(frozen=True)
class MatchFacts:
    """What the rule found of one message we sent (the job), for the person it went to (the enrollment)."""

    job_id: int
    enrollment_id: int
    subject_match: bool
    quoted_share: float
    quoted_chars: int


def reply_matches_record_in_transaction(*, inbound_id: int, replier: str, matches: list[MatchFacts], why: str,
                                        stopped: bool) -> list[ReplyMatch]:
    """The rule's evidence, one row per person; `stopped`: the caller stops the (one) person in this transaction.
    Requires the caller's transaction (the inbound message's)."""
    status = M.STOPPED if stopped else M.PROBABLE
    rows = [ReplyMatch(inbound_id=inbound_id, job_id=m.job_id, enrollment_id=m.enrollment_id, replier=replier[:320],
                       subject_match=m.subject_match, quoted_share=round(m.quoted_share, 3),
                       quoted_chars=m.quoted_chars, why=why, status=status) for m in matches]
    return ReplyMatch.objects.bulk_create(rows)


def reply_match_stop(*, match_id: int, actor: str) -> StopSummary:
    """An operator confirms a probable reply: stop the person it answers for; one durable transaction."""
    with transaction.atomic(durable=True):
        match = _decide(match_id, to=M.OPERATOR_STOPPED, actor=actor)
        summary = reply_stop_in_transaction(job_id=match.job_id, source=f"inbound:{match.inbound_id}", strong=False,
                                            replied_by=match.replier, actor=actor)
        operator_log(actor=actor, action="probable_reply_stop", target=f"enrollment {match.enrollment_id}",
                     kind=T.ENROLLMENT, target_id=match.enrollment_id,
                     result=summary.as_dict() | {"inbound": match.inbound_id, "replier": match.replier})
        return summary


def reply_match_dismiss(*, match_id: int, actor: str) -> None:
    """An operator says a probable reply is not one: nobody is stopped; one durable transaction."""
    with transaction.atomic(durable=True):
        match = _decide(match_id, to=M.DISMISSED, actor=actor)
        operator_log(actor=actor, action="probable_reply_dismiss", target=f"enrollment {match.enrollment_id}",
                     kind=T.ENROLLMENT, target_id=match.enrollment_id,
                     result={"inbound": match.inbound_id, "replier": match.replier})


def _decide(match_id: int, *, to: str, actor: str) -> ReplyMatch:
    """probable -> `to`, once: a second decision finds it decided and is refused with what it is now."""
    if not ReplyMatch.objects.filter(pk=match_id, status=M.PROBABLE).update(
            status=to, decided_at=DbClock(), decided_by=actor[:200]):
        match = ReplyMatch.objects.filter(pk=match_id).first()
        if match is None:
            raise ServiceError(f"probable reply {match_id} does not exist")
        raise ServiceError(f"this probable reply was decided already: {match.get_status_display().lower()}"
                           + (f" by {match.decided_by}" if match.decided_by else ""))
    return ReplyMatch.objects.get(pk=match_id)
