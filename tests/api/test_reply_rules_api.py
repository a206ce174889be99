"""A sequence's reply rules in the API (`reply_rules` of /api/v1/sequences): each rule as the sequence's page shows
it, with what it did so far; read-only; a workspace's token sees its own sequences' rules only."""

from __future__ import annotations

import pytest
from django.test import Client

from api.tokens import api_token_create
from db.clock import db_now
from inbound.models import Conversation
from inbound.replies.services import conversation_categorize
from inbound.reply_rules import reply_rules_run
from inbound.reply_rules_config import reply_rule_add
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui.conftest import roles  # noqa: F401 - the groups a workspace token's role reads
from workspaces.models import Workspace
from workspaces.scoping import workspace_scope

pytestmark = pytest.mark.django_db
NINETY_DAYS = 90 * 86400


def _reply(enrollment, category: str) -> Conversation:
    """The person's conversation, as ingestion leaves it for a reply suggested `category`."""
    return Conversation.objects.create(enrollment=enrollment, contact=enrollment.contact,
                                       sequence=enrollment.sequence, mailbox=enrollment.sequence.mailbox,
                                       last_reply_at=db_now(), suggested=category, category=category)


def _rule(sequence, category: str, action: str, target: str, after_seconds: int = 0) -> None:
    reply_rule_add(sequence_id=sequence.pk, actor="fixture", rule={
        "category": category, "action": action, "target": target, "after_seconds": after_seconds})


def test_a_sequence_shows_its_rules_as_the_page_does_with_what_each_did(world, tokens, django_user_model):
    sequence = world["sequence"]
    later = make_sequence(mailbox=world["mailbox"], steps=1, name="Re-engage")
    django_user_model.objects.create_superuser("sam", "sam@example.org", "pw")
    _rule(sequence, "not_interested", "enroll", "Re-engage", NINETY_DAYS)
    _rule(sequence, "interested", "assign", "sam")
    _rule(sequence, "meeting", "notify", "sam")
    _rule(sequence, "wrong_person", "enroll", "Re-engage")
    # Ada's reply enrolls her in Re-engage; then an operator reads it as Interested: undone, and assigned.
    ada = _reply(world["active"], "not_interested")
    reply_rules_run(ada.pk)
    conversation_categorize(conversation_id=ada.pk, category="interested", actor="olga")
    reply_rules_run(ada.pk)
    # The paused person is in Re-engage already: not done, and why.
    enroll(later, "paused@example.com")
    reply_rules_run(_reply(world["paused"], "not_interested").pk)

    client = Client(HTTP_AUTHORIZATION=f"Bearer {tokens['staff']}")
    shown = client.get(f"/api/v1/sequences/{sequence.pk}")
    assert shown.status_code == 200
    body = shown.json()
    assert {"id", "name", "status", "mailbox", "enrollments", "steps"} < set(body)  # the keys it had, unchanged
    assert (body["name"], body["enrollments"], len(body["steps"])) == ("API sequence", 2, 2)
    enroll_rule, assign_rule, notify_rule, at_once = body["reply_rules"]
    assert enroll_rule == {
        "position": 1, "category": "not_interested", "action": "enroll", "target": "Re-engage",
        "after_seconds": NINETY_DAYS, "after": "90 days",
        "words": "Not interested → enroll in “Re-engage”, first step 90 days later",
        "done": 0, "not_done": 1, "failed": 0, "undone": 1,
        "latest_not_done": "not enrolled in “Re-engage”: paused@example.com is already enrolled in 'Re-engage'"}
    assert assign_rule == {
        "position": 2, "category": "interested", "action": "assign", "target": "sam", "after_seconds": None,
        "after": None, "words": "Interested → assign the conversation to sam",
        "done": 1, "not_done": 0, "failed": 0, "undone": 0, "latest_not_done": ""}
    assert (notify_rule["action"], notify_rule["target"], notify_rule["after"]) == ("notify", "sam", None)
    assert notify_rule["words"] == "Meeting booked → email sam" and notify_rule["done"] == 0
    assert (at_once["after_seconds"], at_once["after"]) == (0, "at once")

    listed = {s["id"]: s for s in client.get("/api/v1/sequences").json()}
    assert listed[sequence.pk]["reply_rules"] == body["reply_rules"]
    assert listed[later.pk]["reply_rules"] == []
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "reply_rules" in schema["SequenceOut"]["properties"] and "undone" in schema["ReplyRuleOut"]["properties"]


def _tenant(name: str, prefix: str) -> dict:
    workspace = Workspace.objects.create(name=name)
    with workspace_scope(workspace.pk):
        mailbox = MailboxFactory(name=f"{prefix}-box", address=f"sender@{prefix}-agency.test")
        sequence = make_sequence(mailbox=mailbox, steps=1, name=f"{prefix.title()} launch")
        make_sequence(mailbox=mailbox, steps=1, name=f"{prefix.title()} re-engage")
        _rule(sequence, "not_interested", "enroll", f"{prefix.title()} re-engage", NINETY_DAYS)
    _, token = api_token_create(name=f"{prefix}-token", role="admin", workspace_id=workspace.pk)
    return {"sequence": sequence, "client": Client(HTTP_AUTHORIZATION=f"Bearer {token}")}


def test_a_workspace_token_sees_its_own_sequences_rules_only(roles, redis_conn):  # noqa: F811
    a, b = _tenant("Acme Corp", "acme"), _tenant("Beta Ltd", "beta")
    own = b["client"].get(f"/api/v1/sequences/{b['sequence'].pk}")
    assert [r["target"] for r in own.json()["reply_rules"]] == ["Beta re-engage"]
    assert [r["target"] for r in a["client"].get(f"/api/v1/sequences/{a['sequence'].pk}").json()["reply_rules"]] == [
        "Acme re-engage"]
    other = b["client"].get(f"/api/v1/sequences/{a['sequence'].pk}")
    assert other.status_code == 404 and "Acme" not in other.content.decode()
    listed = b["client"].get("/api/v1/sequences")
    assert listed.status_code == 200 and "Acme" not in listed.content.decode()
    assert [r["target"] for s in listed.json() for r in s["reply_rules"]] == ["Beta re-engage"]
