"""The sequence's reply rules in the browser's pages: operators add and remove them, staff only look; the sequence
page lists them with what each did."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inbound.models import ReplyRule, ReplyRuleRun
from sequences.models import OperatorAction
from tests.factories import make_sequence

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(world):
    later = make_sequence(mailbox=world["mailbox"], steps=1, name="Re-engage")
    return world["sequence"], later


def test_an_operator_adds_a_rule_sees_it_on_the_sequence_page_and_removes_it(client, users, pair):
    sequence, later = pair
    client.force_login(users["operator"])
    url = reverse("reply_rules_edit", args=[sequence.pk])
    assert "No rules: a reply stops the person" in client.get(url).content.decode()

    response = client.post(url, {"category": "not_interested", "action": "enroll", "enroll_in": later.pk,
                                 "after": "90 days"}, follow=True)
    assert "Rule added: Not interested → enroll in “Re-engage”, first step 90 days later" in response.content.decode()
    rule = ReplyRule.objects.get()
    assert (rule.category, rule.enroll_in_id, rule.after_seconds) == ("not_interested", later.pk, 90 * 86400)
    assert OperatorAction.objects.filter(action="reply_rule_add", actor="operator-user").exists()

    page = client.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert "Not interested → enroll in “Re-engage”, first step 90 days later" in page
    assert 'id="reply-rule-1"' in page

    client.post(reverse("reply_rule_delete", args=[sequence.pk, 1]))
    assert not ReplyRule.objects.exists()


def test_bad_rules_are_refused_in_words(client, users, pair):
    sequence, later = pair
    client.force_login(users["operator"])
    url = reverse("reply_rules_edit", args=[sequence.pk])
    response = client.post(url, {"category": "not_interested", "action": "enroll", "after": "90d"})
    assert response.status_code == 400 and "Choose the sequence to enroll the person in." in response.content.decode()
    response = client.post(url, {"category": "unsubscribe", "action": "enroll", "enroll_in": later.pk, "after": "1d"})
    assert "a reply asking to stop never enrolls the person anywhere" in response.content.decode()
    response = client.post(url, {"category": "interested", "action": "notify", "user": users["operator"].pk})
    assert "has no email address to send the notice to" in response.content.decode()
    response = client.post(url, {"category": "interested", "action": "enroll", "enroll_in": later.pk,
                                 "after": "forever"})
    assert "is not a duration" in response.content.decode()
    assert not ReplyRule.objects.exists()


def test_staff_see_the_rules_and_what_they_did_but_cannot_change_them(client, users, pair):
    sequence, later = pair
    rule = ReplyRule.objects.create(sequence=sequence, position=1, category="interested", action="assign",
                                    user=users["operator"])
    ReplyRuleRun.objects.create(rule=rule, conversation_id=_conversation(sequence).pk, outcome="done",
                                detail="assigned to operator-user")
    client.force_login(users["staff"])
    page = client.get(reverse("reply_rules_edit", args=[sequence.pk])).content.decode()
    assert "Interested → assign the conversation to operator-user" in page and 'id="add-reply-rule"' not in page
    assert client.post(reverse("reply_rules_edit", args=[sequence.pk]),
                       {"category": "interested", "action": "enroll", "enroll_in": later.pk}).status_code == 403
    assert client.post(reverse("reply_rule_delete", args=[sequence.pk, 1])).status_code == 403
    assert ReplyRule.objects.count() == 1


def _conversation(sequence):
    from db.clock import db_now
    from inbound.models import Conversation

    enrollment = sequence.enrollments.first()
    return Conversation.objects.create(enrollment=enrollment, contact=enrollment.contact, sequence=sequence,
                                       mailbox=sequence.mailbox, last_reply_at=db_now(), category="interested")
