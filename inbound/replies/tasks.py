"""The two task lists above the replies inbox: opt-outs waiting for review, and data-protection requests.

- **Needs review**: addresses suppressed provisionally because a reply may ask to stop (the ledger's latest
  entry for the address has the reason POSSIBLE_OPTOUT). An operator confirms (the person unsubscribed) or
  lifts (sending is allowed again); either decision is kept as a labelled example (ReplyLabel).
- **Data-protection requests**: open DataRequest tasks, oldest deadline first, for admins: export the person's
  data, erase the person, or close the task with what was done. Overdue ones are shown as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from db.clock import db_now
from sequences.models import Suppression
from sequences.selectors import optouts_waiting
from sequences.services.suppressions import optout_review

from ..data_requests import data_requests_open
from ..kinds import Category
from ..models import Conversation, DataRequest, InboundMessage, ReplyLabel

INBOUND_SOURCE = "inbound:"


@dataclass(frozen=True)
class Review:
    address: str
    since: object  # datetime of the provisional entry
    inbound: InboundMessage | None  # the reply that may ask to stop
    conversation_id: int | None


def optouts_to_review(limit: int = 50) -> tuple[list[Review], int]:
    """The provisional opt-outs still waiting (oldest first, at most `limit`) and how many there are."""
    waiting = optouts_waiting()
    total = waiting.count()
    entries = list(waiting.order_by("id")[:limit])
    ids = {_inbound_id(e.source) for e in entries} - {None}
    rows = {r.pk: r for r in InboundMessage.objects.filter(pk__in=ids)}
    conversations = dict(Conversation.objects.filter(enrollment_id__in=[r.enrollment_id for r in rows.values()])
                         .values_list("enrollment_id", "pk"))
    out = []
    for entry in entries:
        row = rows.get(_inbound_id(entry.source))
        out.append(Review(entry.value, entry.created_at, row,
                          conversations.get(row.enrollment_id) if row is not None else None))
    return out, total


def _inbound_id(source: str) -> int | None:
    tail = source.removeprefix(INBOUND_SOURCE)
    return int(tail) if source.startswith(INBOUND_SOURCE) and tail.isdigit() else None


def review_decide(*, address: str, confirm: bool, actor: str, category: str = "") -> Suppression:
    """Confirm or lift a provisional opt-out (the ledger's service) and keep the decision as a labelled example:
    Unsubscribe when confirmed; when lifted, the category the operator gave (else the conversation's)."""
    entry, provisional = optout_review(value=address, confirm=confirm, actor=actor)
    row = InboundMessage.objects.filter(pk=_inbound_id(provisional.source)).first()
    if row is not None and row.reply_text:
        conversation = Conversation.objects.filter(enrollment_id=row.enrollment_id).first()
        label = Category.UNSUBSCRIBE.value if confirm else _lifted_label(category, conversation)
        ReplyLabel.objects.create(inbound=row, category=label, origin=ReplyLabel.Origin.REVIEW, actor=actor,
                                  suggested=conversation.suggested if conversation else "")
    return entry


def _lifted_label(category: str, conversation: Conversation | None) -> str:
    if category in {c.value for c in Category} and category != Category.UNSUBSCRIBE:
        return category
    if conversation is not None and conversation.category != Category.UNSUBSCRIBE:
        return conversation.category
    return Category.OTHER.value


@dataclass(frozen=True)
class DueRequest:
    request: DataRequest
    overdue: bool
    days_left: int  # negative when overdue

    @property
    def days_over(self) -> int:
        return -self.days_left


def data_requests_due(limit: int = 50) -> tuple[list[DueRequest], int, int]:
    """Open requests, earliest deadline first (at most `limit`), how many are open and how many overdue."""
    today: date = db_now().date()
    open_ = data_requests_open()
    rows = [DueRequest(r, r.due_on < today, (r.due_on - today).days) for r in open_.order_by("due_on", "id")[:limit]]
    return rows, open_.count(), open_.filter(due_on__lt=today).count()
