"""Reads of the replies inbox: the filtered list, newest first, paged by key (never by offset), and neighbours.

Paging by key: a page ends at (last_reply_at, id) of its last row and the next one starts strictly below it, so a
page is a range scan on one of the conversation indexes whatever the list's length (an offset would count every
row before it), and a reply arriving meanwhile never shifts a row onto two pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from sequences.storable import row_id

from ..kinds import Category
from ..models import Conversation, InboundMessage
from .services import DECIDED

PER_PAGE = 50
STATUSES = ("unhandled", "handled", "all")


@dataclass(frozen=True)
class Filters:
    status: str = "unhandled"  # unhandled | handled | all
    mine: bool = False
    category: str = ""
    mailbox: int | None = None
    sequence: int | None = None
    since: date | None = None
    until: date | None = None
    q: str = ""

    @classmethod
    def parse(cls, params) -> Filters:
        """From a query string (page or API); anything unreadable is left out, never an error."""
        def number(name: str) -> int | None:
            return row_id(params.get(name))

        status = params.get("status") or "unhandled"
        category = params.get("category") or ""
        return cls(status=status if status in STATUSES else "unhandled",
                   mine=str(params.get("mine") or "") in ("1", "true", "on"),
                   category=category if category in Category._value2member_map_ else "",
                   mailbox=number("mailbox"), sequence=number("sequence"),
                   since=parse_date(str(params.get("since") or "")) if params.get("since") else None,
                   until=parse_date(str(params.get("until") or "")) if params.get("until") else None,
                   q=str(params.get("q") or "").strip()[:200])


def conversations(filters: Filters, *, user_id: int | None) -> QuerySet[Conversation]:
    """The conversations the filters keep, newest reply first, with what a row shows loaded."""
    rows = Conversation.objects.select_related("contact", "sequence", "mailbox", "assigned_to", "latest")
    if filters.status == "unhandled":
        rows = rows.filter(handled=False)
    elif filters.status == "handled":
        rows = rows.filter(handled=True)
    if filters.mine:
        rows = rows.filter(assigned_to_id=user_id)
    if filters.category:
        rows = rows.filter(category=filters.category)
    if filters.mailbox:
        rows = rows.filter(mailbox_id=filters.mailbox)
    if filters.sequence:
        rows = rows.filter(sequence_id=filters.sequence)
    # Whole days in the site's zone, as bounds on the column itself (a cast to date would not use its index).
    if filters.since:
        rows = rows.filter(last_reply_at__gte=_midnight(filters.since))
    if filters.until:
        rows = rows.filter(last_reply_at__lt=_midnight(filters.until + timedelta(days=1)))
    if filters.q:
        q = filters.q
        rows = rows.filter(Q(contact__email__icontains=q) | Q(contact__first_name__icontains=q)
                           | Q(contact__last_name__icontains=q) | Q(contact__company__icontains=q))
    return rows.order_by("-last_reply_at", "-pk")


def _midnight(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def cursor_of(conversation: Conversation) -> str:
    return f"{conversation.last_reply_at.isoformat()}~{conversation.pk}"


def _cursor(value: str) -> tuple[datetime, int] | None:
    at, _, pk = (value or "").partition("~")
    moment = parse_datetime(at.replace(" ", "+")) if at else None  # "+" of the offset may arrive as a space
    pk_id = row_id(pk)
    return (moment, pk_id) if moment is not None and pk_id is not None else None


def older_than(rows: QuerySet[Conversation], cursor: str) -> QuerySet[Conversation]:
    key = _cursor(cursor)
    if key is None:
        return rows
    at, pk = key
    return rows.filter(Q(last_reply_at__lt=at) | Q(last_reply_at=at, pk__lt=pk))


@dataclass(frozen=True)
class Page:
    rows: list[Conversation]
    next_cursor: str  # "" on the last page


def page_of(rows: QuerySet[Conversation], cursor: str = "", per_page: int = PER_PAGE) -> Page:
    """One page after `cursor` ("" = the newest), and the cursor of the next one."""
    found = list(older_than(rows, cursor)[: per_page + 1])
    more = len(found) > per_page
    found = found[:per_page]
    return Page(found, cursor_of(found[-1]) if more and found else "")


def neighbours(rows: QuerySet[Conversation], conversation: Conversation) -> tuple[int | None, int | None]:
    """(newer, older) conversation ids around this one in the filtered list."""
    at, pk = conversation.last_reply_at, conversation.pk
    older = older_than(rows, cursor_of(conversation)).values_list("pk", flat=True).first()
    newer = (rows.filter(Q(last_reply_at__gt=at) | Q(last_reply_at=at, pk__gt=pk))
             .order_by("last_reply_at", "pk").values_list("pk", flat=True).first())
    return newer, older


def unhandled_count() -> int:
    return Conversation.objects.filter(handled=False).count()


def conversation_replies(conversation: Conversation) -> QuerySet[InboundMessage]:
    """The conversation's replies: its enrollment's correlated mail of the kinds that make one, first copies only."""
    return (InboundMessage.objects.filter(enrollment_id=conversation.pk, kind__in=list(DECIDED), duplicate_of=None,
                                          content=InboundMessage.Content.FULL, job__isnull=False)
            .defer("raw").order_by("committed_at", "id"))
