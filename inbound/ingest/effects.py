"""What each kind of inbound message does, as one table: kind -> action on the send side.

Every action runs inside the recording transaction (inbound.ingest.record)
and goes through the send side's stop and suppression services; each returns
what it did, in words, for the inbound ledger.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from db.clock import db_now
from sequences.labels import stop_summary_text
from sequences.models import Enrollment, Suppression
from sequences.sending_mailbox import sends_from
from sequences.services.holds import ReturnStated, person_hold_for_auto_reply
from sequences.services.stops import enrollment_pause_in_transaction, reply_stop_in_transaction, reply_words
from sequences.services.suppressions import suppression_add_in_transaction
from sequences.stop_summary import StopSummary

from ..classify import Classification
from ..classify.mime import parse_for_classify
from ..classify.quoted import Evidence
from ..classify.quotes import extract_reply_text
from ..classify.reply import AWAY_NOTE, DATA_REQUEST, POSSIBLE_OPTOUT, demand_words
from ..classify.return_date import return_date
from ..classify.text import body_text
from ..data_requests import data_request_open_in_transaction
from ..handling import SUPPRESS_FOR_KIND
from ..kinds import BounceType, Kind
from ..models import InboundMessage
from ..reply_matches import MatchFacts, reply_matches_record_in_transaction
from .colleague import QUOTED_TEXT
from .correlate import Correlation

# One action per kind: (row, correlation, classification, source, raw) -> what was done, in words. `raw` is the
# message as received: the row may keep less of it (inbound.ingest.minimise), and every effect acts on all of it.
Effect = Callable[[InboundMessage, Correlation, Classification | None, str, bytes], str]

NOT_CORRELATED = "not correlated to anything we sent: recorded only"


def own_copy_effect(why: str) -> str:
    return f"our own sent mail ({why}): recorded only, never counted as a reply"

def _stop_replied(row: InboundMessage, correlation: Correlation, c: Classification | None, source: str,
                  raw: bytes) -> str:
    # The person stops in every sequence and mailbox (the sequence may widen it to the company's domain).
    summary = reply_stop_in_transaction(job_id=correlation.job.pk, job=correlation.job, source=source,
                                                 strong=correlation.rule != InboundMessage.Rule.SENDER,
                                                 mailbox=row.mailbox, replied_by=row.from_address)
    done = _describe("stopped (replied)", summary)
    if c is not None and c.rule == POSSIBLE_OPTOUT:
        # Unsure whether the reply asks to stop: suppressed until an operator confirms or lifts it.
        for address in correlation.addresses:
            suppression_add_in_transaction(value=address, reason=Suppression.Reason.POSSIBLE_OPTOUT, source=source,
                                           note=f"may be asking to stop: {row.message_id}"[:500])
        done += "; suppressed provisionally (may be asking to stop): listed under Replies → Needs review"
    return done


def _colleague(row: InboundMessage, correlation: Correlation, c: Classification | None, source: str) -> str:
    """Rule `quoted_text`: someone at the person's company answered our message to them without our thread
    headers. One person beyond doubt: stop them (as a reply, naming who wrote). Otherwise: probable, for an
    operator; nothing stops. Either way the evidence is recorded (which message, how much of it is quoted)."""
    found = correlation.colleague
    verdict = found.verdict

    def facts(evidence: Evidence) -> MatchFacts:
        job = found.jobs[evidence.key]
        return MatchFacts(job_id=job.pk, enrollment_id=job.enrollment_id, subject_match=evidence.subject_match,
                          quoted_share=evidence.share, quoted_chars=evidence.quoted_chars)

    if verdict.stop is not None:
        job = found.jobs[verdict.stop.key]
        reply_matches_record_in_transaction(inbound_id=row.pk, replier=row.from_address,
                                            matches=[facts(verdict.stop)], why=verdict.why, stopped=True)
        # The person only, never widened to their company's domain: no header of ours ties the mail to us.
        summary = reply_stop_in_transaction(job_id=job.pk, job=job, source=source, strong=False,
                                            mailbox=row.mailbox, replied_by=row.from_address)
        who = reply_words(job.enrollment.contact.email, row.from_address)
        return _describe(f"stopped ({who}: {verdict.why}, job #{job.pk})", summary)
    reply_matches_record_in_transaction(inbound_id=row.pk, replier=row.from_address,
                                        matches=[facts(e) for e in verdict.probable], why=verdict.why, stopped=False)
    people = ", ".join(e.person for e in verdict.probable)
    return (f"probable reply from {row.from_address} for {people} ({verdict.why}): nothing stopped; "
            "an operator decides under Inbound → Probable replies")


def _suppress(row: InboundMessage, correlation: Correlation, c: Classification | None, source: str,
              raw: bytes) -> str:
    summary = StopSummary()
    for address in correlation.addresses:
        _, part = suppression_add_in_transaction(
            value=address, reason=SUPPRESS_FOR_KIND[row.kind], source=source,
            note=f"{row.get_kind_display()} {row.message_id}"[:500])
        summary.add(part)
    done = _describe(f"suppressed ({SUPPRESS_FOR_KIND[row.kind]})", summary)
    if c is not None and c.rule == DATA_REQUEST:
        received = row.internaldate or db_now()
        words = demand_words(c.reply_text, row.subject) or c.reason
        for address in correlation.addresses:
            request, created = data_request_open_in_transaction(address=address, words=words, inbound_id=row.pk,
                                                                received_at=received)
            done += (f"; data-protection request #{request.pk} "
                     f"{'opened' if created else 'already open'}, due {request.due_on:%Y-%m-%d}")
    return done


def _bounce(row: InboundMessage, correlation: Correlation, c: Classification | None, source: str,
            raw: bytes) -> str:
    types = dict(zip(c.recipients, c.recipient_types, strict=False)) if c else {}
    if c is not None and is_delay(c):
        return "; ".join(f"{address}: delivery delayed, still being retried: recorded; a delay never counts "
                         "toward the soft-bounce limit" for address in correlation.addresses)
    return _bounce_effects(row, correlation.addresses, types, source)


def answer_text(subject: str, raw: bytes) -> str:
    """An auto-reply's own words: subject and body without the quoted message we sent (it may name dates)."""
    body = body_text(parse_for_classify(raw)) if raw else ""
    return f"{subject}\n{extract_reply_text(body) or body}"


DELAYED = "Action: delayed"  # in the classifier's reason for DSN and prose delay warnings


def is_delay(c: Classification) -> bool:
    """A warning that the MTA is still retrying (RFC 3464 Action: delayed, or its prose), not a failure."""
    return c.kind == Kind.BOUNCE and (DELAYED in c.reason or c.rule.endswith("_delay"))


def _auto_reply(row: InboundMessage, correlation: Correlation, c: Classification | None, source: str,
                raw: bytes) -> str:
    if settings.OUTREACH_AUTO_REPLY_ACTION != "pause":
        received = row.internaldate or db_now()
        found = return_date(answer_text(row.subject, raw), received=received.date())
        stated = ReturnStated(date=found.date, sentence=found.sentence, quote=found.quote) if found else None
        what = "the person's away note" if c is not None and c.rule == AWAY_NOTE else "auto-reply"
        return person_hold_for_auto_reply(addresses=correlation.addresses, received=received, found=stated,
                                          source=source, what=what)
    summary = StopSummary()
    for enrollment_id in _enrollments_to_stop(row, correlation):
        summary.add(enrollment_pause_in_transaction(enrollment_id=enrollment_id, source=source))
    return _describe("paused (auto-reply)", summary)


def _auth_failure(row: InboundMessage, correlation: Correlation, c: Classification | None, source: str,
                  raw: bytes) -> str:
    # RFC 6591: nobody complained, so nothing stops and nothing is suppressed;
    # the words in the ledger tell an admin that our SPF/DKIM is failing.
    return "authentication failure report (RFC 6591) recorded: check SPF/DKIM; nothing suppressed"


EFFECTS: dict[str, Effect] = {
    Kind.HUMAN_REPLY: _stop_replied,
    Kind.UNSUBSCRIBE_REQUEST: _suppress,
    Kind.COMPLAINT: _suppress,
    Kind.BOUNCE: _bounce,
    Kind.AUTO_REPLY: _auto_reply,
    Kind.AUTH_FAILURE: _auth_failure,
    # The others are recorded only (inbound.handling: `acts`).
}


def inbound_effects_apply(row: InboundMessage, correlation: Correlation, c: Classification | None, *,
                          raw: bytes) -> str:
    """Call the send side's services inside the caller's transaction, on the message as received (*raw*);
    returns what was done, in words."""
    if row.kind == Kind.QUARANTINED:
        return f"quarantined: {row.parse_error}"
    if correlation.own_copy:
        return own_copy_effect(correlation.why)
    if correlation.rule == InboundMessage.Rule.NO_EVIDENCE:
        return f"no evidence we sent to it ({correlation.why}): recorded only, nothing stopped or suppressed"
    if correlation.rule == QUOTED_TEXT and correlation.colleague is not None:
        # A person's mail (a reply, or asking to stop "our team"): it stops the person it answers for, never
        # suppresses an address on the words of someone else.
        return _colleague(row, correlation, c, f"inbound:{row.pk}")
    if not correlation.addresses:
        return NOT_CORRELATED
    effect = EFFECTS.get(row.kind)
    return effect(row, correlation, c, f"inbound:{row.pk}", raw) if effect else "recorded only"


def _enrollments_to_stop(row: InboundMessage, correlation: Correlation) -> list[int]:
    """A reply to a message stops its enrollment; a sender-only match stops that address here."""
    if correlation.job is not None and correlation.rule != InboundMessage.Rule.SENDER:
        return [correlation.job.enrollment_id]
    return list(
        Enrollment.objects.filter(sends_from(row.mailbox_id), contact__email__in=correlation.addresses)
        .exclude(status=Enrollment.Status.STOPPED).values_list("pk", flat=True)
    )


def _bounce_effects(row: InboundMessage, addresses: list[str], types: dict[str, str], source: str) -> str:
    """Hard: suppress now. Soft: suppress once OUTREACH_SOFT_BOUNCE_LIMIT messages to the address failed softly.

    The limit counts failed deliveries of distinct messages we sent (jobs), never delay warnings: the same
    message reported twice counts once.
    """
    done = []
    summary = StopSummary()
    for address in addresses:
        kind = types.get(address, row.bounce_type)
        if kind == BounceType.HARD:
            _, part = suppression_add_in_transaction(
                value=address, reason=Suppression.Reason.HARD_BOUNCE, source=source,
                note=f"{' '.join(row.status_codes)} {row.classification_reason}"[:500])
            summary.add(part)
            done.append(f"{address}: hard bounce, suppressed")
            continue
        limit = settings.OUTREACH_SOFT_BOUNCE_LIMIT
        failed = set(InboundMessage.objects.filter(kind=Kind.BOUNCE, bounce_type=BounceType.SOFT, duplicate_of=None,
                                                   enrollment__contact__email=address, job__isnull=False)
                     .exclude(classification_reason__contains=DELAYED).values_list("job_id", flat=True).distinct())
        if row._state.adding and _counts_as_soft_failure(row, address):  # this report: written after its effects
            failed.add(row.job_id)
        soft = len(failed)
        if soft >= limit:
            _, part = suppression_add_in_transaction(
                value=address, reason=Suppression.Reason.SOFT_BOUNCES, source=source,
                note=f"{soft} soft bounces (limit {limit})")
            summary.add(part)
            done.append(f"{address}: soft bounce {soft} of {limit}, suppressed")
        else:
            done.append(f"{address}: soft bounce {soft} of {limit}, recorded")
    return "; ".join(done) + (f" — {stop_summary_text(summary)}" if summary.changed else "")


def _counts_as_soft_failure(row: InboundMessage, address: str) -> bool:
    """Whether the query above would count `row` once written: a soft failure of a message of ours to `address`."""
    return (row.kind == Kind.BOUNCE and row.bounce_type == BounceType.SOFT and row.duplicate_of_id is None
            and row.job_id is not None and DELAYED not in row.classification_reason
            and row.enrollment is not None and row.enrollment.contact.email == address)


def _describe(what: str, summary: StopSummary) -> str:
    return stop_summary_text(summary, what=what)
