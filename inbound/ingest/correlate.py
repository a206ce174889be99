"""Which message we sent an inbound message answers, strongest evidence first. Reads only.

An inbound message may act only on an address to which *this* mailbox
submitted a message, and only if it arrived (IMAP INTERNALDATE) after that
submission. Anything that names an address or a message without that evidence
is correlated as "no evidence we sent to it", with the reason in words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from mailboxes.models import Mailbox
from sequences.models import Contact, Enrollment, SendJob
from sequences.sending_mailbox import enrollment_mailbox_id, sends_from

from ..classify.evidence import REFERENCES_CONSIDERED
from ..kinds import Kind
from ..models import InboundMessage
from .colleague import QUOTED_TEXT, ColleagueMatch, colleague_match, companies_mailed, company_domains
from .parse import Parsed

Rule = InboundMessage.Rule

# INTERNALDATE is given to the second; a submission in the same second counts as before it.
ARRIVAL_SLACK = timedelta(seconds=1)


# Folder names (their last part, lowercased) that hold a mailbox's own sent mail, besides special-use \Sent.
SENT_FOLDER_NAMES = {"sent", "sent items", "sent messages", "sent mail", "sent-mail", "outbox", "gesendet",
                     "gesendete objekte", "envoyés", "éléments envoyés", "enviados", "elementos enviados"}


@dataclass
class Correlation:
    rule: str = Rule.NONE
    job: SendJob | None = None
    addresses: list[str] = field(default_factory=list)  # whose enrollments are affected
    why: str = ""  # for Rule.NO_EVIDENCE and own copies: why nothing is done; for `quoted_text`, the verdict
    own_copy: bool = False  # our own sent mail (a Sent folder, our address, our Message-ID): never a reply
    colleague: ColleagueMatch | None = None  # rule `quoted_text`: the evidence, and whether it is beyond doubt
    # Rules `report_recipient` and `sender_address`: the Message-IDs of returned originals inside the mail that
    # we generated (each refused as evidence: another mailbox's, or sent after it arrived).
    our_originals: frozenset[str] = frozenset()


def correlate(parsed: Parsed, mailbox: Mailbox, internaldate: datetime | None,
              known: dict[str, SendJob] | None = None, *, looked_up: frozenset[str] | set[str] = frozenset(),
              folder: str = "", sent_folder: bool = False, raw: bytes = b"") -> Correlation:
    """Tie an inbound message to a message this mailbox sent before it arrived, strongest evidence first.

    One query for every Message-ID the mail names (its own, its thread ids and those of the original
    inside a report), none for ids the caller looked up already with its header (*looked_up*; those
    that are ours in *known*); one more only for a report's recipients or the sender when no id held;
    last, for a person's mail (*raw*) from someone at a company we wrote to, one for the messages we sent
    there (rule `quoted_text`, `colleague`).
    """
    c = parsed.classification
    embedded = list(c.original_message_ids[:REFERENCES_CONSIDERED]) if c is not None else []
    known = dict(known or {})
    named = [parsed.message_id, *parsed.own_ids, *embedded]
    known.update(jobs_by_message_id([i for i in named if i and i not in known and i not in looked_up]))
    our_originals = frozenset(i for i in embedded if i in known)
    own = own_copy(parsed, mailbox, folder=folder, sent_folder=sent_folder, known=known)
    if own:
        return Correlation(why=own, own_copy=True)
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
                return Correlation(Rule.RECIPIENT, sent[found[0]], found, our_originals=our_originals)
            refused.append(f"{_named(recipients)}; {_nothing_sent(internaldate)}")
            return _no_evidence(refused)
    if parsed.from_address:
        job = _sent_to([parsed.from_address], mailbox, internaldate).get(parsed.from_address)
        if job is not None:
            return Correlation(Rule.SENDER, job, [parsed.from_address], our_originals=our_originals)
        if Enrollment.objects.filter(contact__email=parsed.from_address).exists():
            refused.append(f"the sender {parsed.from_address} is enrolled; {_nothing_sent(internaldate)}")
        if raw and internaldate is not None and c is not None and c.kind in PERSONS_MAIL:
            found = colleague_match(sender=parsed.from_address, subject=parsed.subject, raw=raw, mailbox=mailbox,
                                    submitted_by=internaldate + ARRIVAL_SLACK)
            if found is not None:
                stop = found.verdict.stop
                if stop is None:
                    return Correlation(QUOTED_TEXT, None, [], found.verdict.why, colleague=found)
                job = found.jobs[stop.key]
                return Correlation(QUOTED_TEXT, job, [job.enrollment.contact.email], found.verdict.why,
                                   colleague=found)
    return _no_evidence(refused) if refused else Correlation()


# What a person writes (not a report or an automatic answer): the kinds a colleague's mail may act as.
PERSONS_MAIL = (Kind.HUMAN_REPLY, Kind.UNSUBSCRIBE_REQUEST)


# What correlation and the effects read of a job. Not its mailboxes: their many columns would be compiled
# and read for every message, where only a reply's stop names the mailbox (one small read by key).
JOB_RELATIONS = ("enrollment__contact", "enrollment__sequence")


def jobs_by_message_id(ids: list[str]) -> dict[str, SendJob]:
    """Our jobs named by the ids of one message (any mailbox), by Message-ID: one query however many ids."""
    return _jobs_named([i for i in dict.fromkeys(ids) if i][: 3 * REFERENCES_CONSIDERED])


def _jobs_named(ids: list[str]) -> dict[str, SendJob]:
    if not ids:
        return {}
    jobs = SendJob.objects.select_related(*JOB_RELATIONS).filter(message_id__in=set(ids))
    return {job.message_id: job for job in jobs}


@dataclass
class HeaderTies:
    """What a batch's headers tie to us, from two queries for the whole batch (see triage)."""

    ours: dict[str, SendJob]  # our jobs, by the Message-IDs the headers name or carry
    looked_up: set[str]  # every Message-ID asked about: those not in `ours` are not ours
    enrolled: set[str]  # sender addresses that are enrolled
    companies: set[str] = field(default_factory=set)  # domains of senders' companies where someone is enrolled

    def may_act(self, parsed: Parsed) -> bool:
        """Whether the header leaves it open that this mail acts: a mail that names nothing of ours, comes
        from nobody enrolled nor from a company where someone is, and whose header shows no machine signal
        cannot act."""
        return bool(parsed.error or parsed.machine or parsed.from_address in self.enrolled
                    or any(i in self.ours for i in parsed.own_ids)
                    or any(d in self.companies for d in company_domains(parsed.from_address)))


def ties_in_headers(parsed_by_uid: dict[int, Parsed]) -> HeaderTies:
    """Our jobs named in a batch's headers, its enrolled senders, and the companies of the others where
    someone is enrolled (a colleague may answer for them): three queries at most."""
    ids = list(dict.fromkeys(i for p in parsed_by_uid.values() for i in [p.message_id, *p.own_ids] if i))
    senders = {p.from_address for p in parsed_by_uid.values() if p.from_address}
    ours = _jobs_named(ids)
    enrolled = set(Enrollment.objects.filter(contact__email__in=senders).values_list("contact__email", flat=True)
                   ) if senders else set()
    unknown = {p.from_address for p in parsed_by_uid.values()
               if p.from_address and p.from_address not in enrolled and not p.machine
               and not any(i in ours for i in p.own_ids)}
    return HeaderTies(ours, set(ids), enrolled, companies_mailed(unknown))


def _sent_to(addresses: list[str], mailbox: Mailbox, internaldate: datetime | None) -> dict[str, SendJob]:
    """For each of *addresses*, the latest job this mailbox submitted to it before *internaldate*: one query."""
    if internaldate is None or not addresses:
        return {}
    jobs = (
        SendJob.objects.select_related(*JOB_RELATIONS)
        .filter(sends_from(mailbox.pk, via="enrollment__"), enrollment__contact__email__in=addresses,
                submitted_at__isnull=False, submitted_at__lte=internaldate + ARRIVAL_SLACK)
        .order_by("-submitted_at")
    )
    latest: dict[str, SendJob] = {}
    for job in jobs:
        latest.setdefault(job.enrollment.contact.email, job)
    return latest


def _not_ours(job: SendJob, mailbox: Mailbox, internaldate: datetime | None) -> str | None:
    """Why a job named by Message-ID is no evidence for this message, or None when it is."""
    if enrollment_mailbox_id(job.enrollment) != mailbox.pk:
        return "was sent from another mailbox"
    if job.submitted_at is None:
        return "was never submitted"
    if internaldate is None:
        return "is ours, but the message's arrival time is unknown"
    if internaldate + ARRIVAL_SLACK < job.submitted_at:
        return f"was submitted at {job.submitted_at:%Y-%m-%d %H:%M:%S}, after this message arrived"
    return None


def own_copy(parsed: Parsed, mailbox: Mailbox, *, folder: str, sent_folder: bool,
             known: dict[str, SendJob] | None = None) -> str:
    """Why a message is a copy of our own sent mail ('' when it is not): it can never be a reply.

    A Sent folder (special-use \\Sent, or a Sent folder's usual name), a From of
    the mailbox's own address, or one of our own Message-IDs. Such a copy
    threads under our earlier steps (In-Reply-To), so without this it would
    look like an answer to them.
    """
    leaf = folder.replace(".", "/").rsplit("/", 1)[-1].strip().lower()
    if sent_folder or leaf in SENT_FOLDER_NAMES:
        return f"in the folder {folder!r}, which holds this mailbox's sent mail"
    if parsed.from_address and parsed.from_address == mailbox.address.strip().lower():
        return f"sent from this mailbox's own address {mailbox.address}"
    if parsed.message_id and (parsed.message_id in known if known is not None
                              else SendJob.objects.filter(message_id=parsed.message_id).exists()):
        return f"its Message-ID {parsed.message_id} is one we generated for a message we sent"
    return ""


def _nothing_sent(internaldate: datetime | None) -> str:
    if internaldate is None:
        return "the message's arrival time is unknown"
    return f"this mailbox submitted nothing to it before the message arrived ({internaldate:%Y-%m-%d %H:%M:%S})"


def _named(recipients: list[str]) -> str:
    """The report's recipients that are our contacts; any other address is the mailbox owner's own
    correspondence and is not written down (the row is metadata only)."""
    contacts = set(Contact.objects.filter(email__in=recipients).values_list("email", flat=True))
    named = [r for r in recipients if r in contacts][:5]
    if not named:
        return "the report names no address we have a contact for"
    return f"the report names {', '.join(named)}"


def _no_evidence(refused: list[str]) -> Correlation:
    return Correlation(Rule.NO_EVIDENCE, None, [], "; ".join(refused))
