"""/api/v1/replies: the replies inbox through the API (mounted by outreach/urls.py; permissions as the pages')."""

from datetime import datetime

from django.http import Http404
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from api.auth import actor_of, needs
from api.schemas import Error
from inbound.models import Answer, Conversation
from inbound.replies.answer import answer_label, answer_send
from inbound.replies.selectors import Filters, conversations, page_of
from inbound.replies.services import conversation_categorize
from sequences.permissions import OPERATE, VIEW_INBOUND
from sequences.storable import MAX_ROW_ID

router = Router(tags=["replies"])


class ReplyOut(Schema):
    id: int
    email: str
    name: str
    company: str
    sequence_id: int
    sequence: str
    mailbox: str
    enrollment_id: int
    last_reply_at: datetime
    replies: int
    text: str  # the latest reply's new words (quoted history removed)
    category: str  # the chosen category, or the suggested one
    chosen: str  # "" when no operator chose
    chosen_by: str
    suggested: str
    suggested_phrase: str  # the words that decided the suggestion
    suggested_confidence: float
    assigned_to: str
    handled: bool
    handled_by: str


class ReplyPage(Schema):
    items: list[ReplyOut]
    next: str  # pass as `before` for the next (older) page; "" on the last page


class CategoryIn(Schema):
    category: str  # interested | meeting | not_interested | wrong_person | out_of_office | unsubscribe | other


class AnswerIn(Schema):
    body: str
    confirm_suppressed: bool = False  # required to answer a suppressed person (unsubscribe, complaint, manual)


class AnswerOut(Schema):
    id: int
    state: str  # submitted | failed | unknown | sending
    label: str  # in words: "Sent", "Failed — not sent", "Outcome unknown — may have been sent"
    message_id: str
    in_reply_to: str
    subject: str
    recipient: str
    mailbox: str
    server_reply: str
    error: str


def reply_out(c: Conversation) -> dict:
    contact = c.contact
    return {
        "id": c.pk, "email": contact.email, "name": " ".join(p for p in (contact.first_name, contact.last_name) if p),
        "company": contact.company, "sequence_id": c.sequence_id, "sequence": c.sequence.name,
        "mailbox": c.mailbox.name, "enrollment_id": c.enrollment_id, "last_reply_at": c.last_reply_at,
        "replies": c.replies, "text": c.latest.reply_text if c.latest else "", "category": c.category,
        "chosen": c.chosen,
        "chosen_by": c.chosen_by, "suggested": c.suggested, "suggested_phrase": c.suggested_phrase,
        "suggested_confidence": c.suggested_confidence,
        "assigned_to": c.assigned_to.get_username() if c.assigned_to else "", "handled": c.handled,
        "handled_by": c.handled_by,
    }


def answer_out(a: Answer) -> dict:
    return {"id": a.pk, "state": a.state, "label": answer_label(a), "message_id": a.message_id,
            "in_reply_to": a.in_reply_to.message_id, "subject": a.subject, "recipient": a.recipient,
            "mailbox": a.mailbox.name, "server_reply": a.server_reply, "error": a.error}


def _one(pk: int) -> Conversation:
    if not 0 < pk <= MAX_ROW_ID:  # no conversation has such an id (and SQLite cannot take an integer past 64 bits)
        raise Http404
    return get_object_or_404(conversations(Filters(status="all"), user_id=None), pk=pk)


@router.get("", response=ReplyPage)
@needs(VIEW_INBOUND)
def reply_list(request, status: str = "unhandled", category: str = "", mailbox: int | None = None,
               sequence: int | None = None, since: str = "", until: str = "", q: str = "", before: str = "",
               per_page: int = 50):
    """Conversations newest first, filtered as on the Replies page (status unhandled | handled | all, category,
    mailbox id, sequence id, since/until as YYYY-MM-DD, q: person or company); paged by `before`."""
    filters = Filters.parse({"status": status, "category": category, "mailbox": mailbox, "sequence": sequence,
                             "since": since, "until": until, "q": q})
    page = page_of(conversations(filters, user_id=None), before, per_page=max(1, min(per_page, 200)))
    return {"items": [reply_out(c) for c in page.rows], "next": page.next_cursor}


@router.get("/{reply_id}", response=ReplyOut)
@needs(VIEW_INBOUND)
def reply_get(request, reply_id: int):
    return reply_out(_one(reply_id))


@router.post("/{reply_id}/category", response={200: ReplyOut, 409: Error})
@needs(OPERATE)
def reply_categorize(request, reply_id: int, body: CategoryIn):
    """Set the operator's category (it wins over the suggestion); on the timeline and in the operator log."""
    _one(reply_id)
    conversation_categorize(conversation_id=reply_id, category=body.category, actor=actor_of(request))
    return reply_out(_one(reply_id))


@router.post("/{reply_id}/answer", response={201: AnswerOut, 409: Error})
@needs(OPERATE)
def reply_answer(request, reply_id: int, body: AnswerIn):
    """Answer from the mailbox that received the reply, threaded under it; sent before this returns. 201 with the
    outcome in `state`: submitted, failed (not sent) or unknown (may have been sent: never resent). 409 when it
    may not be sent (paused or blocked mailbox, bounced address, suppressed without confirmation)."""
    _one(reply_id)
    answer = answer_send(conversation_id=reply_id, body=body.body, actor=actor_of(request),
                         confirm_suppressed=body.confirm_suppressed)
    return Status(201, answer_out(answer))
