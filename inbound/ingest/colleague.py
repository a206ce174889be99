"""Replies from colleagues (rule `quoted_text`): which of our messages a mail from the person's company answers
when it names none of our Message-IDs. Reads only.

A candidate is a message *this mailbox* submitted, before the mail arrived, to someone at the sender's
company, never at a free-mail domain: at the sender's own domain or at a parent domain of it up to the
organisational domain (a colleague at eu.acme.com answers for a person at acme.com). The latest CANDIDATES
of them are found by the index on the contacts' domains (contact_email_domain_idx) and the keys from there
to their jobs: never a scan of addresses or jobs. Each candidate is rendered as it was sent (its step for its
contact) and measured against the mail by `inbound.classify.quoted`, which says whether it answers one
person beyond doubt or is only probable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Exists, OuterRef
from django.template import TemplateSyntaxError

from db.sql import EmailDomain
from mailboxes.models import Mailbox
from sequences.freemail import is_free_mail
from sequences.messages import PrepareError, contact_context, render
from sequences.models import Contact, Enrollment, SendJob, Step
from sequences.sending_mailbox import sends_from

from ..classify.mime import parse_for_classify
from ..classify.quoted import Sent, Verdict, decide, evidence_for, full_text, organisational_domain
from ..models import InboundMessage

CANDIDATES = 50  # latest messages to the company measured against one mail
QUOTED_TEXT = InboundMessage.Rule.QUOTED_TEXT  # the inbound rule, as recorded on the inbound message


@dataclass(frozen=True)
class ColleagueMatch:
    """A verdict of `quoted_text`, with the jobs it names (loaded with enrollment, contact, sequence and step)."""

    verdict: Verdict
    jobs: dict[int, SendJob]


def company_domains(address: str) -> list[str]:
    """The domains of `address`'s company where a colleague may sit: its own and each parent up to its
    organisational domain (bo@eu.acme.com: eu.acme.com, acme.com); [] for a free-mail (or no) domain."""
    domain = address.rpartition("@")[2].strip().strip(".").lower()
    if not domain or is_free_mail(domain) or is_free_mail(organisational_domain(domain)):
        return []
    labels = domain.split(".")
    size = len(organisational_domain(domain).split("."))
    return [".".join(labels[i:]) for i in range(0, len(labels) - size + 1)]


def companies_mailed(addresses: set[str]) -> set[str]:
    """Of the company domains of *addresses*, those where someone is enrolled: one indexed query for a batch."""
    domains = {d for address in addresses for d in company_domains(address)}
    if not domains:
        return set()
    found = (Contact.objects.annotate(domain=EmailDomain("email")).filter(domain__in=domains)
             .filter(Exists(Enrollment.objects.filter(contact=OuterRef("pk")))).order_by())
    return set(found.values_list("domain", flat=True).distinct())


def colleague_match(*, sender: str, subject: str, raw: bytes, mailbox: Mailbox,
                    submitted_by: datetime) -> ColleagueMatch | None:
    """Which message of ours a mail from `sender` answers by subject or quote, or None when it answers none.

    `submitted_by`: the latest submission time that counts as before the mail's arrival."""
    domains = company_domains(sender)
    if not domains or sender == mailbox.address.strip().lower():
        return None
    jobs = _candidates(domains, sender, mailbox, submitted_by)
    if not jobs:
        return None
    sent = [Sent(key=job.pk, person=job.enrollment.contact.email, subject=subject_sent, body=body)
            for job, subject_sent, body in _as_sent(jobs)]
    verdict = decide(evidence_for(subject, full_text(parse_for_classify(raw)), sent))
    if verdict.stop is None and not verdict.probable:
        return None
    return ColleagueMatch(verdict, {job.pk: job for job in jobs})


def _candidates(domains: list[str], sender: str, mailbox: Mailbox, submitted_by: datetime) -> list[SendJob]:
    """The latest messages this mailbox submitted to others at the company's `domains` before the mail arrived."""
    return list(
        SendJob.objects.select_related("enrollment__contact", "enrollment__sequence", "step")
        .alias(domain=EmailDomain("enrollment__contact__email"))
        .filter(sends_from(mailbox.pk, via="enrollment__"), domain__in=domains,
                submitted_at__isnull=False, submitted_at__lte=submitted_by)
        .exclude(enrollment__contact__email=sender)
        .order_by("-submitted_at")[:CANDIDATES]
    )


def _as_sent(jobs: list[SendJob]):
    """(job, subject, body) as each was sent: its step rendered for its contact (as the step reads now: the text
    of a message is not kept); a threaded step with no subject of its own went out as "Re: <the first step's
    subject>". A step that no longer renders is left out."""
    firsts = {step.sequence_id: step.subject for step in Step.objects.filter(
        sequence_id__in={job.step.sequence_id for job in jobs if not job.step.subject.strip()}, position=1)}
    for job in jobs:
        context = contact_context(job.enrollment.contact, job.enrollment.sequence)
        try:
            subject = render(job.step.subject or firsts.get(job.step.sequence_id, ""), context)
            body = render(job.step.body, context)
        except (PrepareError, TemplateSyntaxError, ValueError, TypeError, LookupError, AttributeError):
            continue  # the mail is still read against the others: a step that fails here never quarantines it
        yield job, " ".join(subject.split()), body
