"""Answering a reply from the app: from the mailbox that received it, threaded under the person's message.

Not a sequence step: an answer has no send job, passes no final check and never touches the enrollment (a stopped
enrollment stays stopped). Its own checks, in words for the reply box: nothing leaves a paused or blocked mailbox;
a hard-bounced address cannot be answered; a suppressed person (unsubscribe, complaint, manual) is answered only on
the operator's explicit confirmation.

Sent synchronously, in three steps as the send pipeline does (reserve -> hand off -> record), each its own short
transaction and none open during the SMTP conversation. Synchronous because an answer is one message an operator
is waiting for: the page says at once whether it left ("sent", "failed — not sent", "outcome unknown"), and an
answer never waits behind a campaign's jobs on the send queue. A request killed during the hand-off leaves the
answer `sending`; pages show one older than SENDING_STALE as "outcome unknown", and it is never resent.

The From header is the mailbox's own (its display name and address: the identity the person wrote to, so their
mail client keeps the thread); the operator's name is the signature, which the reply box fills in and the operator
may edit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from email.utils import format_datetime

from django.db import connection, transaction
from django.utils import timezone

from db.clock import DbClock
from mailboxes.selectors import transport_for
from mailboxes.transports.base import OutcomeUnknown, TransportError
from sequences.messages import REPLY_PREFIX, PrepareError, address_header, message_bytes
from sequences.models import Suppression
from sequences.selectors import suppression_active_for
from sequences.services.common import ServiceError, T, operator_log
from sequences.services.scheduling import new_message_id
from sequences.storable import unstorable
from sequences.timeline import Event, event_record

from ..models import Answer, Conversation, InboundMessage
from .selectors import conversation_replies
from .services import conversation_handled_in_transaction

A = Answer.State
SENDING_STALE = timedelta(minutes=5)
MAX_REFERENCES = 20
_IDS = re.compile(r"<[^<>\s]+>")


@dataclass(frozen=True)
class AnswerCheck:
    """What the reply box says before anything is sent."""

    allowed: bool  # False: nothing can be sent now (`reason` says why)
    needs_confirmation: bool = False  # the person is suppressed: only on an explicit confirmation
    reason: str = ""


def answer_check(conversation: Conversation, reply: InboundMessage | None = None) -> AnswerCheck:
    """Whether an answer to `reply` (else the latest) may leave now, and what the operator must know first. Reads
    only."""
    if conversation.latest_id is None:
        return AnswerCheck(False, reason="They booked a meeting without writing to us: there is no message of "
                                         "theirs to answer here. Write to them from your own mail app.")
    reply = reply or conversation.latest
    mailbox = reply.mailbox if reply.mailbox_id != conversation.mailbox_id else conversation.mailbox
    if mailbox.paused:
        return AnswerCheck(False, reason=f"The mailbox {mailbox.name} is paused: nothing leaves it until it is "
                                         "resumed.")
    if mailbox.blocked_at:
        return AnswerCheck(False, reason=f"The mailbox {mailbox.name} is blocked (it cannot send: "
                                         f"{mailbox.blocked_reason or 'see Mailboxes'}); nothing leaves it until "
                                         "it is fixed.")
    for address in dict.fromkeys([reply.from_address, conversation.contact.email]):
        entry = suppression_active_for(address) if address else None
        if entry is None:
            continue
        if entry.reason in (Suppression.Reason.HARD_BOUNCE, Suppression.Reason.SOFT_BOUNCES):
            return AnswerCheck(False, reason=f"{address} bounced ({entry.get_reason_display().lower()}): it "
                                             "cannot be answered.")
        return AnswerCheck(True, needs_confirmation=True,
                           reason=f"{address} is suppressed ({entry.get_reason_display().lower()}, "
                                  f"{entry.value}): answer only if they asked you to.")
    return AnswerCheck(True)


def answer_subject(subject: str) -> str:
    """"Re: " once, whatever prefixes (Re:, AW:, Fwd:) the person's subject carries."""
    bare = REPLY_PREFIX.sub("", subject or "").strip()
    return f"Re: {bare}" if bare else "Re:"


def answer_references(conversation: Conversation, reply: InboundMessage | None = None) -> tuple[str, str]:
    """(In-Reply-To, References): the person's message (`reply`, else their latest), after the chain its own
    References name."""
    latest = reply or conversation.latest
    chain = _IDS.findall(latest.headers.get("References", "")) or _IDS.findall(latest.headers.get("In-Reply-To", ""))
    if latest.message_id:
        chain = [i for i in chain if i != latest.message_id] + [latest.message_id]
    return latest.message_id, " ".join(chain[-MAX_REFERENCES:])


@dataclass(frozen=True)
class _Reserved:
    answer: Answer
    sender: str
    data: bytes


def answer_send(*, conversation_id: int, body: str, actor: str, author_name: str = "",
                confirm_suppressed: bool = False, reply_id: int | None = None, note: str = "") -> Answer:
    """Reserve, hand off, record: three steps, no transaction open across the transport. Returns the answer as
    recorded (submitted, failed or unknown); ServiceError when it may not be sent (nothing was).

    `reply_id`: answer that reply of the conversation, from the mailbox that received it (default: the latest).
    `note`: what kind of prepared note this is (`inbound.replies.crossed`), kept on its event; "" for an answer."""
    if not body.strip():
        raise ServiceError("the answer is empty")
    if unstorable(body):
        raise ServiceError("the answer holds a NUL character or a lone surrogate, which no mail can carry")
    reserved = _reserve(conversation_id, body, actor, author_name, confirm_suppressed, reply_id)
    answer = reserved.answer
    assert not connection.in_atomic_block, "never hold a transaction across the transport"
    try:
        submission = transport_for(answer.mailbox).send(sender=reserved.sender, recipient=answer.recipient,
                                                        message=reserved.data)
    except OutcomeUnknown as exc:
        return _record(answer, A.UNKNOWN, error=str(exc), actor=actor, note=note)
    except TransportError as exc:
        return _record(answer, A.FAILED, error=str(exc), actor=actor, note=note)
    return _record(answer, A.SUBMITTED, reply=submission.reply, actor=actor, note=note)


def _reserve(conversation_id: int, body: str, actor: str, author_name: str, confirm_suppressed: bool,
             reply_id: int | None = None) -> _Reserved:
    """The answer row (`sending`) and its bytes, after the checks; one durable transaction."""
    with transaction.atomic(durable=True):
        conversation = (Conversation.objects.select_for_update(of=("self",))
                        .select_related("mailbox", "latest", "contact").filter(pk=conversation_id).first())
        if conversation is None:
            raise ServiceError(f"conversation {conversation_id} does not exist")
        latest = conversation.latest
        if reply_id is not None and reply_id != conversation.latest_id:
            latest = conversation_replies(conversation).select_related("mailbox").filter(pk=reply_id).first()
            if latest is None:
                raise ServiceError(f"inbound message {reply_id} is not a reply of this conversation")
        check = answer_check(conversation, latest)
        if not check.allowed:
            raise ServiceError(check.reason)
        if check.needs_confirmation and not confirm_suppressed:
            raise ServiceError(f"{check.reason} Confirm to send anyway.")
        if conversation.answers.filter(state=A.SENDING, created_at__gt=timezone.now() - SENDING_STALE).exists():
            raise ServiceError("an answer to this conversation is being sent right now")
        mailbox = latest.mailbox if latest.mailbox_id != conversation.mailbox_id else conversation.mailbox
        recipient = latest.from_address or conversation.contact.email
        in_reply_to, references = answer_references(conversation, latest)
        subject = answer_subject(latest.subject)
        message_id = new_message_id(mailbox)
        try:
            sender = address_header(mailbox.display_name, mailbox.address)
            headers = [("From", sender), ("To", address_header(latest.from_name, recipient)),
                       ("Date", format_datetime(timezone.now())), ("Message-ID", message_id), ("Subject", subject)]
            if in_reply_to:
                headers += [("In-Reply-To", in_reply_to), ("References", references)]
            data = message_bytes(headers, body, email=recipient)
        except PrepareError as exc:
            raise ServiceError(f"the answer cannot be written: {exc}") from None
        answer = Answer.objects.create(
            conversation=conversation, mailbox=mailbox, in_reply_to=latest, author=actor[:200],
            author_name=author_name[:200], recipient=recipient, subject=subject, body=body, message_id=message_id,
            references=references, confirmed_suppressed=check.needs_confirmation)
    return _Reserved(answer, sender.addr_spec, data)


def _record(answer: Answer, state: str, *, actor: str, reply: str = "", error: str = "", note: str = "") -> Answer:
    """What became of the hand-off, on the timeline and in the operator log; a sent answer marks the conversation
    handled. One durable transaction."""
    conversation = answer.conversation
    with transaction.atomic(durable=True):
        Answer.objects.filter(pk=answer.pk, state=A.SENDING).update(
            state=state, server_reply=reply[:2000], error=error[:2000], finished_at=DbClock())
        if state == A.SUBMITTED:
            conversation_handled_in_transaction(conversation_id=conversation.pk, handled=True, actor=actor)
        event_record(kind=Event.REPLY_ANSWERED, email=conversation.contact.email,
                     enrollment=conversation.enrollment_id, conversation=conversation.pk, answer=answer.pk,
                     state=state, message_id=answer.message_id, in_reply_to=answer.in_reply_to.message_id,
                     mailbox=answer.mailbox.name, by=actor, server=(reply or error)[:300],
                     **({"note": note, "inbound": answer.in_reply_to_id} if note else {}))
        operator_log(actor=actor, action="reply_answer", target=f"reply from {conversation.contact.email}",
                     kind=T.ENROLLMENT, target_id=conversation.enrollment_id,
                     result={"conversation": conversation.pk, "answer": answer.pk, "state": state,
                             "to": answer.recipient, "suppressed_confirmed": answer.confirmed_suppressed,
                             **({"note": note} if note else {})})
    answer.refresh_from_db()
    return answer


def answer_label(answer: Answer) -> str:
    """The answer's state in words; one still `sending` after SENDING_STALE never reported back."""
    if answer.state == A.SENDING and answer.created_at < timezone.now() - SENDING_STALE:
        return "Outcome unknown — the send never reported back; it may have been sent"
    return answer.get_state_display()
