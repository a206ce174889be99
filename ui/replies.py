"""The Replies pages: the inbox (filters, search, paging by key) and one conversation (thread, category,
assignment, handled, the reply box). Thin: parse, call one service, render or redirect."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from inbound.data_requests import data_request_done
from inbound.erasure import contact_erase, contact_export
from inbound.kinds import LABELS, Category
from inbound.models import Answer, Conversation, DataRequest
from inbound.replies.answer import answer_check, answer_label, answer_send
from inbound.replies.crossed import crossed_note_send, crossed_notes_sent, reply_crossings
from inbound.replies.receipts import reply_receipts
from inbound.replies.selectors import Filters, conversation_replies, conversations, neighbours, page_of
from inbound.replies.services import (
    conversation_assign,
    conversation_categorize,
    conversation_handled_set,
    suggestion_for,
)
from inbound.replies.tasks import data_requests_due, optouts_to_review, review_decide
from mailboxes.models import Mailbox
from sequences.messages import subject_sent
from sequences.models import SendJob, Sequence
from sequences.permissions import MANAGE_SUPPRESSIONS, OPERATE, VIEW_INBOUND
from sequences.services.common import ServiceError, T, operator_log
from sequences.storable import row_id

from .access import ui_view

# The keyboard's 1–7, in this order.
CATEGORIES = [(str(n), c.value, LABELS[c]) for n, c in enumerate(Category, start=1)]
LIST_PARAMS = ("status", "mine", "category", "mailbox", "sequence", "since", "until", "q")


def _list_query(params) -> str:
    return urlencode({k: params[k] for k in LIST_PARAMS if params.get(k)})


@ui_view(VIEW_INBOUND)
def reply_list(request):
    filters = Filters.parse(request.GET)
    page = page_of(conversations(filters, user_id=request.user.pk), request.GET.get("before", ""))
    query = _list_query(request.GET)
    reviews, reviews_total = optouts_to_review()
    tasks = {}
    if request.user.has_perm(MANAGE_SUPPRESSIONS):
        rows, open_total, overdue = data_requests_due()
        tasks = {"data_requests": rows, "data_requests_open": open_total, "data_requests_overdue": overdue}
    return render(request, "ui/replies_list.html", {
        **tasks, "reviews": reviews, "reviews_total": reviews_total,
        "can_operate": request.user.has_perm(OPERATE), "can_manage": request.user.has_perm(MANAGE_SUPPRESSIONS),
        "page": page, "filters": filters, "query": query, "categories": CATEGORIES,
        "mailboxes": Mailbox.objects.order_by("name").values_list("pk", "name"),
        "sequences": Sequence.objects.order_by("name").values_list("pk", "name"),
        "first_page": not request.GET.get("before"),
    })


def _thread(conversation: Conversation) -> list[dict]:
    """Our messages that left, their replies (each with its receipt, and the messages of ours that crossed it) and
    our answers, oldest first."""
    replies = list(conversation_replies(conversation).select_related("mailbox"))
    receipts = reply_receipts(replies)
    crossings = reply_crossings(conversation)
    notes = crossed_notes_sent(conversation)
    items = [{"kind": "ours", "at": j.submitted_at, "title": f"Step {j.step.position}", "job": j,
              "text": subject_sent(j)}
             for j in SendJob.objects.filter(enrollment_id=conversation.enrollment_id, submitted_at__isnull=False)
             .select_related("step", "variant", "enrollment__contact", "enrollment__sequence")
             .order_by("submitted_at")]
    items += [{"kind": "theirs", "at": r.internaldate or r.committed_at, "inbound": r, "text": r.reply_text,
               "suggested": LABELS[suggestion_for(r).category], "receipt": receipts[r.pk],
               "crossings": crossings.get(r.pk, []), "note_answer": notes.get(r.pk),
               "check": answer_check(conversation, r) if crossings.get(r.pk) else None}
              for r in replies]
    items += [{"kind": "answer", "at": a.created_at, "answer": a, "text": a.body, "label": answer_label(a)}
              for a in conversation.answers.all()]
    return sorted(items, key=lambda i: i["at"])


@ui_view(VIEW_INBOUND)
def reply_detail(request, pk: int):
    conversation = get_object_or_404(
        Conversation.objects.select_related("contact", "sequence", "mailbox", "assigned_to", "latest", "enrollment"),
        pk=pk)
    filters = Filters.parse(request.GET)
    newer, older = neighbours(conversations(filters, user_id=request.user.pk), conversation)
    query = _list_query(request.GET)
    user = request.user
    signature = user.get_full_name() or user.get_username()
    return render(request, "ui/replies_detail.html", {
        "c": conversation, "thread": _thread(conversation), "categories": CATEGORIES, "query": query,
        "newer": newer, "older": older, "check": answer_check(conversation),
        "can_operate": user.has_perm(OPERATE), "signature": signature,
        "users": get_user_model().objects.filter(is_active=True).order_by("username").values_list("pk", "username"),
        "stale_state": Answer.State.SENDING,
    })


def _back(request, pk: int):
    query = _list_query(request.POST)
    return redirect(reverse("reply_detail", args=[pk]) + (f"?{query}" if query else ""))


@ui_view(OPERATE, methods=("POST",))
def reply_categorize(request, pk: int):
    try:
        c = conversation_categorize(conversation_id=pk, category=request.POST.get("category", ""),
                                    actor=request.user.get_username())
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
    else:
        messages.success(request, f"Category: {c.category_label}.")
    return _back(request, pk)


@ui_view(OPERATE, methods=("POST",))
def reply_assign(request, pk: int):
    value = request.POST.get("user", "")
    user_id = request.user.pk if value == "me" else row_id(value)
    try:
        conversation_assign(conversation_id=pk, user_id=user_id, actor=request.user.get_username())
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
    return _back(request, pk)


@ui_view(OPERATE, methods=("POST",))
def reply_handled(request, pk: int):
    handled = request.POST.get("handled") == "1"
    try:
        conversation_handled_set(conversation_id=pk, handled=handled, actor=request.user.get_username())
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
    else:
        messages.success(request, "Marked handled." if handled else "Marked unhandled.")
    return _back(request, pk)


@ui_view(OPERATE, methods=("POST",))
def reply_answer(request, pk: int):
    user = request.user
    try:
        answer = answer_send(conversation_id=pk, body=request.POST.get("body", ""), actor=user.get_username(),
                             author_name=user.get_full_name(),
                             confirm_suppressed=request.POST.get("confirm_suppressed") == "1")
    except ServiceError as exc:
        messages.error(request, f"Not sent: {exc}")
    else:
        _sent_words(request, answer, what="message", sent=f"Sent to {answer.recipient} from "
                                                          f"{answer.mailbox.address}: {answer.server_reply}")
    return _back(request, pk)


@ui_view(OPERATE, methods=("POST",))
def reply_crossed_note(request, pk: int):
    """The one-click note for a reply a follow-up crossed: the sequence's words, from the mailbox that received
    the reply, threaded on it."""
    user = request.user
    reply_id = row_id(request.POST.get("reply"))
    try:
        answer = crossed_note_send(conversation_id=pk, reply_id=reply_id or 0, actor=user.get_username(),
                                   author_name=user.get_full_name() or user.get_username(),
                                   confirm_suppressed=request.POST.get("confirm_suppressed") == "1")
    except ServiceError as exc:
        messages.error(request, f"Note not sent: {exc}")
    else:
        _sent_words(request, answer, what="note", sent=f"Note sent to {answer.recipient} from "
                                                       f"{answer.mailbox.address}, threaded on their reply: "
                                                       f"{answer.server_reply}")
    return _back(request, pk)


def _sent_words(request, answer: Answer, *, what: str, sent: str) -> None:
    """What became of an answer or a note, in the words its state deserves."""
    if answer.state == Answer.State.SUBMITTED:
        messages.success(request, sent)
    elif answer.state == Answer.State.UNKNOWN:
        messages.warning(request, f"Outcome unknown: the connection broke after the {what} was on its way "
                                  f"({answer.error}). It may have been delivered; it will not be resent.")
    else:
        messages.error(request, f"Failed — {'note ' if what == 'note' else ''}not sent: {answer.error}")


# --- the tasks above the inbox (tasks.py) -------------------------------------------------------------


@ui_view(OPERATE, methods=("POST",))
def reply_review(request):
    """Confirm or lift a provisional opt-out (Needs review)."""
    address, decision = request.POST.get("address", ""), request.POST.get("decision", "")
    if decision not in ("confirm", "lift"):
        messages.error(request, "Refused: choose Confirm opt-out or Lift.")
        return redirect("reply_list")
    try:
        review_decide(address=address, confirm=decision == "confirm", actor=request.user.get_username(),
                      category=request.POST.get("category", ""))
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
    else:
        messages.success(request, f"{address}: opt-out confirmed; never mailed again." if decision == "confirm"
                         else f"{address}: provisional suppression lifted; mail to this address is allowed again.")
    return redirect(reverse("reply_list") + "#needs-review")


@ui_view(MANAGE_SUPPRESSIONS)
def data_request_export(request, pk: int):
    """Everything held about the person (GDPR Art. 15), as the JSON `manage.py contact_export` writes."""
    task = get_object_or_404(DataRequest, pk=pk)
    try:
        data = contact_export(email=task.address)
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
        return redirect(reverse("reply_list") + "#data-requests")
    operator_log(actor=request.user.get_username(), action="contact_export", target=f"data request {pk}",
                 kind=T.SUPPRESSION, target_id=pk, result={"data_request": pk})
    response = HttpResponse(json.dumps(data, indent=2, ensure_ascii=False), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="data-request-{pk}.json"'
    return response


@ui_view(MANAGE_SUPPRESSIONS, methods=("POST",))
def data_request_erase(request, pk: int):
    """Erase the person (GDPR Art. 17): the task closes with it."""
    task = get_object_or_404(DataRequest, pk=pk)
    if request.POST.get("confirm") != "erase":
        messages.error(request, "Not erased: type erase to confirm.")
    elif task.done_at is not None:
        messages.error(request, f"Refused: request #{pk} was closed already ({task.outcome}).")
    else:
        try:
            contact_erase(email=task.address, actor=request.user.get_username())
        except ServiceError as exc:
            messages.error(request, f"Refused: {exc}")
        else:
            messages.success(request, f"Request #{pk}: the person was erased; the request is closed.")
    return redirect(reverse("reply_list") + "#data-requests")


@ui_view(MANAGE_SUPPRESSIONS, methods=("POST",))
def data_request_close(request, pk: int):
    try:
        data_request_done(pk=pk, actor=request.user.get_username(), outcome=request.POST.get("outcome", ""))
    except ServiceError as exc:
        messages.error(request, f"Refused: {exc}")
    else:
        messages.success(request, f"Request #{pk} closed.")
    return redirect(reverse("reply_list") + "#data-requests")
