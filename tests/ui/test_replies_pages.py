"""The Replies pages: who may see and change what, filters, search, paging by key, the category buttons."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse

from inbound.models import Conversation, InboundMessage
from inbound.replies.selectors import Filters, conversations, page_of
from inbound.replies.services import conversation_record_in_transaction
from sequences.models import OperatorAction, TimelineEvent
from tests.factories import enroll

pytestmark = pytest.mark.django_db


def reply(world, email: str, text: str, uid: int) -> Conversation:
    """A correlated reply recorded as ingestion records one, and its conversation."""
    enrollment = world["active"] if email == "active@example.com" else enroll(world["sequence"], email)
    with transaction.atomic():
        row = InboundMessage.objects.create(
            mailbox=world["mailbox"], folder="INBOX", uidvalidity=1, uid=uid, message_id=f"<r{uid}@example.com>",
            from_address=email, subject="Re: Hello", kind="human_reply", reply_text=text,
            job=enrollment.jobs.first(), enrollment=enrollment, correlation_rule="in_reply_to")
        return Conversation.objects.get(pk=conversation_record_in_transaction(row=row))


@pytest.fixture
def inbox(world):
    return [reply(world, "keen@example.com", "Tell me more", 11), reply(world, "nope@example.com", "No thanks", 12),
            reply(world, "maybe@acme.example", "Ask me in May", 13)]


def login(client, users, role):
    client.force_login(users[role])


def test_staff_read_operators_change_anonymous_log_in(client, users, inbox):
    c = inbox[0]
    detail, category = reverse("reply_detail", args=[c.pk]), reverse("reply_categorize", args=[c.pk])
    assert client.get(reverse("reply_list")).status_code == 302
    login(client, users, "staff")
    page = client.get(reverse("reply_list"))
    assert page.status_code == 200 and b"keen@example.com" in page.content and b"<table" not in page.content
    assert client.get(detail).status_code == 200
    assert client.post(category, {"category": "interested"}).status_code == 403
    for name in ("reply_assign", "reply_handled", "reply_answer"):
        assert client.post(reverse(name, args=[c.pk])).status_code == 403
    login(client, users, "operator")
    assert client.post(category, {"category": "interested"}).status_code == 302
    c.refresh_from_db()
    assert (c.category, c.chosen_by) == ("interested", "operator-user")
    assert OperatorAction.objects.filter(action="reply_categorize", actor="operator-user").count() == 1
    assert TimelineEvent.objects.filter(kind="reply_categorized", enrollment=c.enrollment_id).exists()
    body = client.get(detail).content.decode()
    assert "chosen by operator-user" in body and 'data-key="1"' in body and "replies.js" in body


def test_handled_and_assigned_to_me_filter_the_list(client, users, inbox):
    login(client, users, "operator")
    keen, nope, _ = inbox
    client.post(reverse("reply_handled", args=[nope.pk]), {"handled": "1"})
    client.post(reverse("reply_assign", args=[keen.pk]), {"user": "me"})

    unhandled = client.get(reverse("reply_list")).content.decode()
    assert "keen@example.com" in unhandled and "nope@example.com" not in unhandled
    handled = client.get(reverse("reply_list") + "?status=handled").content.decode()
    assert "nope@example.com" in handled and "keen@example.com" not in handled
    mine = client.get(reverse("reply_list") + "?status=all&mine=1").content.decode()
    assert "keen@example.com" in mine and "maybe@acme.example" not in mine
    search = client.get(reverse("reply_list") + "?status=all&q=maybe@").content.decode()
    assert "maybe@acme.example" in search and "keen@example.com" not in search


def test_pages_by_key_visit_every_conversation_once_newest_first(inbox, users):
    rows = conversations(Filters(status="all"), user_id=None)
    first = page_of(rows, per_page=2)
    second = page_of(rows, first.next_cursor, per_page=2)
    seen = [c.pk for c in first.rows + second.rows]
    assert sorted(seen) == sorted(c.pk for c in inbox) and len(set(seen)) == 3
    assert seen == list(rows.values_list("pk", flat=True)) and second.next_cursor == ""


def test_a_category_filter_reads_the_chosen_category_first(inbox):
    keen = inbox[0]
    Conversation.objects.filter(pk=keen.pk).update(chosen="meeting", category="meeting")
    assert [c.pk for c in conversations(Filters.parse({"category": "meeting"}), user_id=None)] == [keen.pk]
    assert Filters.parse({"category": "nonsense", "status": "x", "mailbox": "1;drop"}) == Filters()


def test_results_count_interested_and_meetings_and_the_dashboard_links_the_waiting_replies(client, users, inbox):
    from inbound.replies.services import conversation_categorize
    from ui.results import sequence_results

    keen, nope, maybe = inbox
    conversation_categorize(conversation_id=keen.pk, category="interested", actor="olga")
    conversation_categorize(conversation_id=maybe.pk, category="meeting", actor="olga")
    Conversation.objects.filter(pk=nope.pk).update(handled=True)
    counts = dict(sequence_results())[keen.sequence]
    assert (counts.interested, counts.meeting) == (1, 1)
    assert [label for label, *_ in counts.cells][1:4] == ["Replied", "Interested", "Meeting booked"]

    client.force_login(users["staff"])
    card = client.get(reverse("dashboard")).content.decode().split('id="unhandled-replies"')[1].split("</section>")[0]
    assert '<span class="stat">2</span>' in card and reverse("reply_list") in card


def test_the_backfill_makes_conversations_for_replies_recorded_before_the_inbox(world):
    import importlib

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    backfill = importlib.import_module("inbound.migrations.0002_replies_backfill").backfill
    # The models as that migration sees them (the ledger was in mailboxes then; its table is the same).
    apps = MigrationLoader(connection).project_state(("inbound", "0002_replies_backfill")).apps
    InboundMessage.objects.create(
        mailbox=world["mailbox"], folder="INBOX", uidvalidity=1, uid=2, message_id="<ooo@example.com>",
        from_address="active@example.com", kind="auto_reply", classification_reason="Auto-Submitted: auto-replied",
        job=world["job"], enrollment=world["active"], correlation_rule="in_reply_to")
    InboundMessage.objects.create(mailbox=world["mailbox"], folder="INBOX", uidvalidity=1, uid=3, kind="unrelated")

    backfill(apps, None)
    backfill(apps, None)  # twice: nothing more

    (conversation,) = Conversation.objects.all()
    assert (conversation.pk, conversation.replies, conversation.category) == (world["active"].pk, 2, "out_of_office")
    assert conversation.latest.message_id == "<ooo@example.com>" and not conversation.handled
