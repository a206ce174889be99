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
from sequences.services.rotation import enrollment_mailbox_id, sends_from

from ..kinds import Kind
from ..models import InboundMessage, Mailbox
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
    why: str = ""  # for Rule.NO_EVIDENCE and own copies: why nothing is done, in words
    own_copy: bool = False  # our own sent mail (a Sent folder, our address, our Message-ID): never a reply


def correlate(parsed: Parsed, mailbox: Mailbox, internaldate: datetime | None, *, folder: str = "",
              sent_folder: bool = False) -> Correlation:
    """Tie an inbound message to a message this mailbox sent before it arrived, strongest evidence first."""
    own = own_copy(parsed, mailbox, folder=folder, sent_folder=sent_folder)
    if own:
        return Correlation(why=own, own_copy=True)
    c = parsed.classification
    jobs = SendJob.objects.select_related("enrollment__contact", "enrollment__sequence")
    refused: list[str] = []  # evidence that named something but did not hold

    def by_message_id(ids) -> SendJob | None:
        for message_id in ids:
            job = jobs.filter(message_id=message_id).first()
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
        job = by_message_id(c.original_message_ids)
        if job is not None:
            return Correlation(Rule.EMBEDDED, job, [job.enrollment.contact.email])
        if c.kind in (Kind.BOUNCE, Kind.COMPLAINT) and c.recipients:
            sent = {r: _sent_to(r, mailbox, internaldate) for r in c.recipients}
            known = [r for r, job in sent.items() if job is not None]
            if known:
                return Correlation(Rule.RECIPIENT, sent[known[0]], known)
            names = ", ".join(c.recipients[:5])
            refused.append(f"the report names {names}; {_nothing_sent(internaldate)}")
            return _no_evidence(refused)
    if parsed.from_address:
        job = _sent_to(parsed.from_address, mailbox, internaldate)
        if job is not None:
            return Correlation(Rule.SENDER, job, [parsed.from_address])
        if Enrollment.objects.filter(contact__email=parsed.from_address).exists():
            refused.append(f"the sender {parsed.from_address} is enrolled; {_nothing_sent(internaldate)}")
    return _no_evidence(refused) if refused else Correlation()


def _sent_to(address: str, mailbox: Mailbox, internaldate: datetime | None) -> SendJob | None:
    """The latest job this mailbox submitted to *address* before *internaldate*."""
    if internaldate is None:
        return None
    return (
        SendJob.objects.select_related("enrollment__contact")
        .filter(sends_from(mailbox.pk, via="enrollment__"), enrollment__contact__email=address,
                submitted_at__isnull=False, submitted_at__lte=internaldate + ARRIVAL_SLACK)
        .order_by("-submitted_at").first()
    )


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


def own_copy(parsed: Parsed, mailbox: Mailbox, *, folder: str, sent_folder: bool) -> str:
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
    if parsed.message_id and SendJob.objects.filter(message_id=parsed.message_id).exists():
        return f"its Message-ID {parsed.message_id} is one we generated for a message we sent"
    return ""


def _nothing_sent(internaldate: datetime | None) -> str:
    if internaldate is None:
        return "the message's arrival time is unknown"
    return f"this mailbox submitted nothing to it before the message arrived ({internaldate:%Y-%m-%d %H:%M:%S})"


def _no_evidence(refused: list[str]) -> Correlation:
    return Correlation(Rule.NO_EVIDENCE, None, [], "; ".join(refused))
