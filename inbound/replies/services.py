"""The replies inbox's actions: a reply joins its conversation (ingestion), an operator categorizes, assigns and
marks handled. Each action is one short transaction writing its timeline event (and the operator log) with it.

Lock order: the conversation row only, except for a category change: the enrollments the conversation's reply
rules made, then the conversation (as ingestion, which stops the person's enrollments before it joins the
conversation). Ingestion creates or updates a conversation inside the inbound message's own transaction; an
operator's change locks the row (`select_for_update`) so a reply arriving at the same moment and a category click
are applied one after the other, never lost.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When

from db.clock import DbClock, db_clock_written
from sequences.services.common import ServiceError, T, operator_log
from sequences.timeline import Event, event_record

from ..classify.intent import Suggestion, suggest
from ..handling import CONVERSATION_KINDS
from ..kinds import LABELS, Category
from ..models import Conversation, InboundMessage, ReplyLabel
from ..reply_rules import reply_rule_enrollments_lock, reply_rules_enqueue, reply_rules_undo_in_transaction

# Inbound kinds that make or join a conversation, and the category ingestion already decided for them (None: the
# classifier suggests one from the reply's words): inbound.handling.
DECIDED = CONVERSATION_KINDS


def suggestion_for(row: InboundMessage) -> Suggestion:
    """What the reply suggests: ingestion's own verdict for an auto-reply or unsubscribe request, else its words."""
    decided = DECIDED.get(row.kind)
    if decided is not None:
        return Suggestion(decided, phrase=row.classification_reason[:300], confidence=1.0)
    return suggest(row.reply_text)


def conversation_record_in_transaction(*, row: InboundMessage) -> int | None:
    """A correlated reply joins (or starts) its person's conversation; requires the inbound message's transaction.
    Returns the conversation's id (its enrollment's), or None when the message makes none.

    Only a reply tied to a message we sent (its job and enrollment recorded by correlation) counts; a copy of a
    message already recorded, or unrelated mail, makes nothing. A new reply makes the conversation unhandled
    again; an operator's chosen category stays (it wins over the new suggestion, which is shown next to it).
    Statements: an UPDATE by key; for a person's first reply, an INSERT in a savepoint too (two first replies
    of one person committed at once: the second one's insert fails alone and it updates instead); the event.
    """
    if row.kind not in DECIDED or row.job_id is None or row.enrollment_id is None or row.duplicate_of_id:
        return None
    enrollment = row.enrollment
    s = suggestion_for(row)
    fields = dict(last_reply_at=db_clock_written(), latest=row, mailbox_id=row.mailbox_id, suggested=s.category.value,
                  suggested_phrase=s.phrase[:300], suggested_confidence=s.confidence,
                  suggested_language=s.language[:8])
    again = dict(fields, replies=F("replies") + 1, handled=False, handled_by="", handled_at=None,
                 category=Case(When(chosen="", then=Value(s.category.value)), default=F("chosen")))
    if not Conversation.objects.filter(pk=enrollment.pk).update(**again):
        try:
            with transaction.atomic():
                Conversation.objects.create(enrollment_id=enrollment.pk, contact_id=enrollment.contact_id,
                                            sequence_id=enrollment.sequence_id, category=s.category.value, **fields)
        except IntegrityError:
            Conversation.objects.filter(pk=enrollment.pk).update(**again)
    event_record(kind=Event.REPLY_RECEIVED, email=enrollment.contact.email, enrollment=enrollment.pk,
                 job=row.job_id, conversation=enrollment.pk, inbound=row.pk, suggested=s.category.value,
                 phrase=s.phrase[:300], confidence=round(s.confidence, 3), mailbox=row.mailbox.name)
    reply_rules_enqueue(enrollment.pk)  # what the sequence's rules do with this category, once committed
    return enrollment.pk


def _locked(conversation_id: int) -> Conversation:
    conversation = (Conversation.objects.select_for_update(of=("self",)).select_related("contact")
                    .filter(pk=conversation_id).first())
    if conversation is None:
        raise ServiceError(f"conversation {conversation_id} does not exist")
    return conversation


def _log(conversation: Conversation, *, actor: str, action: str, result: dict) -> None:
    operator_log(actor=actor, action=action, target=f"reply from {conversation.contact.email}",
                 kind=T.ENROLLMENT, target_id=conversation.enrollment_id,
                 result={"conversation": conversation.pk} | result)


def conversation_categorize(*, conversation_id: int, category: str, actor: str) -> Conversation:
    """An operator's category (it wins over the suggestion); timeline and operator log; one durable transaction.

    Choosing the category it has already is a no-op: nothing is logged twice. A later enrollment that a rule of the
    old category made, and that has sent nothing, is stopped in the same transaction (inbound.reply_rules); the
    rules of the new category act once it commits.
    """
    try:
        chosen = Category(category)
    except ValueError:
        raise ServiceError(f"unknown category {category!r}: one of {', '.join(c.value for c in Category)}") from None
    with transaction.atomic(durable=True):
        reply_rule_enrollments_lock(conversation_id)  # before the conversation: enrollments first, as every stop
        conversation = _locked(conversation_id)
        if conversation.chosen == chosen.value:
            return conversation
        previous = conversation.category
        Conversation.objects.filter(pk=conversation.pk).update(
            chosen=chosen.value, category=chosen.value, chosen_by=actor[:200], chosen_at=DbClock())
        # Kept as a labelled example of the reply it was chosen for (manage.py export_reply_labels); a
        # conversation that holds a booked meeting only has no reply to label.
        if conversation.latest_id is not None:
            ReplyLabel.objects.create(inbound_id=conversation.latest_id, category=chosen.value, actor=actor[:200],
                                      suggested=conversation.suggested, origin=ReplyLabel.Origin.RELABEL)
        event_record(kind=Event.REPLY_CATEGORIZED, email=conversation.contact.email,
                     enrollment=conversation.enrollment_id, conversation=conversation.pk, category=chosen.value,
                     previous=previous, suggested=conversation.suggested, by=actor)
        # What a rule of the old category did and no longer applies (a later enrollment), taken back with the change.
        undone = reply_rules_undo_in_transaction(conversation=conversation, category=chosen.value, actor=actor)
        _log(conversation, actor=actor, action="reply_categorize",
             result={"category": chosen.value, "label": LABELS[chosen], "previous": previous}
             | ({"rules": [d.detail for d in undone]} if undone else {}))
        reply_rules_enqueue(conversation.pk)
    conversation.refresh_from_db()
    return conversation


def conversation_assign(*, conversation_id: int, user_id: int | None, actor: str) -> Conversation:
    """Assign the conversation to a user (None: nobody); operator log; one durable transaction."""
    if user_id is not None and not get_user_model().objects.filter(pk=user_id, is_active=True).exists():
        raise ServiceError(f"there is no active user {user_id} to assign it to")
    with transaction.atomic(durable=True):
        conversation = _locked(conversation_id)
        if conversation.assigned_to_id != user_id:
            Conversation.objects.filter(pk=conversation.pk).update(assigned_to_id=user_id)
            _log(conversation, actor=actor, action="reply_assign", result={"assigned_to": user_id})
    conversation.refresh_from_db()
    return conversation


def conversation_handled_set(*, conversation_id: int, handled: bool, actor: str) -> Conversation:
    """Mark handled (who, when) or unhandled again; operator log; one durable transaction."""
    with transaction.atomic(durable=True):
        conversation = _locked(conversation_id)
        if conversation.handled != handled:
            conversation_handled_in_transaction(conversation_id=conversation.pk, handled=handled, actor=actor)
            _log(conversation, actor=actor, action="reply_handled" if handled else "reply_unhandled", result={})
    conversation.refresh_from_db()
    return conversation


def conversation_handled_in_transaction(*, conversation_id: int, handled: bool, actor: str) -> None:
    Conversation.objects.filter(pk=conversation_id).update(
        handled=handled, handled_by=actor[:200] if handled else "", handled_at=DbClock() if handled else None)
