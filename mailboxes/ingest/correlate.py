"""Which message we sent an inbound message answers, strongest evidence first. Reads only.

An inbound message may act only on an address to which *this* mailbox
submitted a message, and only if it arrived (IMAP INTERNALDATE) after that
submission. Anything that names an address or a message without that evidence
is correlated as "no evidence we sent to it", with the reason in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sequences.models import Enrollment, SendJob

from ..classify.evidence import REFERENCES_CONSIDERED
from ..kinds import Kind
from ..models import InboundMessage, Mailbox
from .parse import Parsed

Rule = InboundMessage.Rule

# INTERNALDATE is given to the second; a submission in the same second counts as before it.
ARRIVAL_SLACK = timedelta(seconds=1)


@dataclass
class Correlation:
    rule: str = Rule.NONE
    job: SendJob | None = None
    addresses: list[str] = field(default_factory=list)  # whose enrollments are affected
    why: str = ""  # for Rule.NO_EVIDENCE: why nothing is done, in words


def correlate(parsed: Parsed, mailbox: Mailbox, internaldate: datetime | None,
              known: dict[str, SendJob] | None = None) -> Correlation:
    """Tie an inbound message to a message this mailbox sent before it arrived, strongest evidence first.

    One query for every Message-ID the mail names (its own thread ids and those of the original inside
    a report), none for ids in *known* (looked up by the caller with its header); one more only for a
    report's recipients or the sender when no id held.
    """
    c = parsed.classification
    embedded = list(c.original_message_ids[:REFERENCES_CONSIDERED]) if c is not None else []
    known = dict(known or {})
    known.update(jobs_by_message_id([i for i in [*parsed.own_ids, *embedded] if i not in known]))
    refused: list[str] = []  # evidence that named something but did not hold

    def by_message_id(ids) -> SendJob | None:
        for message_id in ids:
            job = known.get(message_id)
            if job is None:
                continue
            problem = _not_ours(job, mailbox, internaldate)
            if problem is None:
                return job
            refused.append(f"{message_id} {problem}")
        return None

    for rule, ids in ((Rule.IN_REPLY_TO, parsed.in_reply_to), (Rule.REFERENCES, list(reversed(parsed.references)))):
        job = by_message_id(ids)
        if job is not None:
            return Correlation(rule, job, [job.enrollment.contact.email])
    if c is not None:
        job = by_message_id(embedded)
        if job is not None:
            return Correlation(Rule.EMBEDDED, job, [job.enrollment.contact.email])
        if c.kind in (Kind.BOUNCE, Kind.COMPLAINT) and c.recipients:
            recipients = list(c.recipients[:REFERENCES_CONSIDERED])
            sent = _sent_to(recipients, mailbox, internaldate)
            found = [r for r in recipients if r in sent]
            if found:
                return Correlation(Rule.RECIPIENT, sent[found[0]], found)
            names = ", ".join(c.recipients[:5])
            refused.append(f"the report names {names}; {_nothing_sent(internaldate)}")
            return _no_evidence(refused)
    if parsed.from_address:
        job = _sent_to([parsed.from_address], mailbox, internaldate).get(parsed.from_address)
        if job is not None:
            return Correlation(Rule.SENDER, job, [parsed.from_address])
        if Enrollment.objects.filter(contact__email=parsed.from_address).exists():
            refused.append(f"the sender {parsed.from_address} is enrolled; {_nothing_sent(internaldate)}")
    return _no_evidence(refused) if refused else Correlation()


def jobs_by_message_id(ids: list[str]) -> dict[str, SendJob]:
    """Our jobs named by the ids of one message (any mailbox), by Message-ID: one query however many ids."""
    return _jobs_named([i for i in dict.fromkeys(ids) if i][: 3 * REFERENCES_CONSIDERED])


def _jobs_named(ids: list[str]) -> dict[str, SendJob]:
    if not ids:
        return {}
    jobs = SendJob.objects.select_related("enrollment__contact", "enrollment__sequence").filter(
        message_id__in=set(ids))
    return {job.message_id: job for job in jobs}


def ties_in_headers(parsed_by_uid: dict[int, Parsed]) -> tuple[dict[str, SendJob], set[str]]:
    """(our jobs by the Message-IDs the headers name, enrolled sender addresses) of a batch: two queries.

    A mail that names neither, and whose header shows no machine signal, cannot act (see triage).
    """
    ids = [i for p in parsed_by_uid.values() for i in p.own_ids]
    senders = {p.from_address for p in parsed_by_uid.values() if p.from_address}
    ours = _jobs_named(ids)
    enrolled = set(Enrollment.objects.filter(contact__email__in=senders).values_list("contact__email", flat=True)
                   ) if senders else set()
    return ours, enrolled


def _sent_to(addresses: list[str], mailbox: Mailbox, internaldate: datetime | None) -> dict[str, SendJob]:
    """For each of *addresses*, the latest job this mailbox submitted to it before *internaldate*: one query."""
    if internaldate is None or not addresses:
        return {}
    jobs = (
        SendJob.objects.select_related("enrollment__contact")
        .filter(enrollment__contact__email__in=addresses, enrollment__sequence__mailbox=mailbox,
                submitted_at__isnull=False, submitted_at__lte=internaldate + ARRIVAL_SLACK)
        .order_by("-submitted_at")
    )
    latest: dict[str, SendJob] = {}
    for job in jobs:
        latest.setdefault(job.enrollment.contact.email, job)
    return latest


def _not_ours(job: SendJob, mailbox: Mailbox, internaldate: datetime | None) -> str | None:
    """Why a job named by Message-ID is no evidence for this message, or None when it is."""
    if job.enrollment.sequence.mailbox_id != mailbox.pk:
        return "was sent from another mailbox"
    if job.submitted_at is None:
        return "was never submitted"
    if internaldate is None:
        return "is ours, but the message's arrival time is unknown"
    if internaldate + ARRIVAL_SLACK < job.submitted_at:
        return f"was submitted at {job.submitted_at:%Y-%m-%d %H:%M:%S}, after this message arrived"
    return None


def _nothing_sent(internaldate: datetime | None) -> str:
    if internaldate is None:
        return "the message's arrival time is unknown"
    return f"this mailbox submitted nothing to it before the message arrived ({internaldate:%Y-%m-%d %H:%M:%S})"


def _no_evidence(refused: list[str]) -> Correlation:
    return Correlation(Rule.NO_EVIDENCE, None, [], "; ".join(refused))
