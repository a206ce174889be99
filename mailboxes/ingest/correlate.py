"""Which message we sent an inbound message answers, strongest evidence first. Reads only."""

from __future__ import annotations

from dataclasses import dataclass, field

from sequences.models import Enrollment, SendJob

from ..kinds import Kind
from ..models import InboundMessage, Mailbox
from .parse import Parsed

Rule = InboundMessage.Rule


@dataclass
class Correlation:
    rule: str = Rule.NONE
    job: SendJob | None = None
    addresses: list[str] = field(default_factory=list)  # whose enrollments are affected


def correlate(parsed: Parsed, mailbox: Mailbox) -> Correlation:
    """Tie an inbound message to a message we sent, strongest evidence first."""
    c = parsed.classification
    jobs = SendJob.objects.select_related("enrollment__contact")
    for rule, ids in ((Rule.IN_REPLY_TO, parsed.in_reply_to), (Rule.REFERENCES, list(reversed(parsed.references)))):
        for message_id in ids:
            job = jobs.filter(message_id=message_id).first()
            if job is not None:
                return Correlation(rule, job, [job.enrollment.contact.email])
    if c is not None:
        for message_id in c.original_message_ids:
            job = jobs.filter(message_id=message_id).first()
            if job is not None:
                return Correlation(Rule.EMBEDDED, job, [job.enrollment.contact.email])
        if c.kind in (Kind.BOUNCE, Kind.COMPLAINT) and c.recipients:
            known = [r for r in c.recipients if Enrollment.objects.filter(contact__email=r).exists()]
            if known:
                job = jobs.filter(enrollment__contact__email=known[0]).exclude(submitted_at=None).order_by(
                    "-submitted_at").first()
                return Correlation(Rule.RECIPIENT, job, known)
            return Correlation(Rule.NONE, None, [])
    if parsed.from_address and Enrollment.objects.filter(
        contact__email=parsed.from_address, sequence__mailbox=mailbox
    ).exists():
        job = jobs.filter(enrollment__contact__email=parsed.from_address, enrollment__sequence__mailbox=mailbox
                          ).exclude(submitted_at=None).order_by("-submitted_at").first()
        return Correlation(Rule.SENDER, job, [parsed.from_address])
    return Correlation()
