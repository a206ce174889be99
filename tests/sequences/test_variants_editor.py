"""The step editor: A/B variants added and stopped from the page, the results per variant, and a changed text
that some people lack a value for, said before it is saved."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from sequences.models import OperatorAction, Step, StepVariant
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.ui import conftest as ui_fixtures

pytestmark = pytest.mark.django_db
roles, users = ui_fixtures.roles, ui_fixtures.users


@pytest.fixture
def operator(users) -> Client:
    client = Client()
    client.force_login(users["operator"])
    return client


def test_variants_are_added_listed_and_stopped_from_the_step_editor(operator):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    step = sequence.steps.get()
    page = operator.get(reverse("variant_new", args=[step.pk])).content.decode()
    assert 'value="A"' in page  # the step's own text is offered as variant A
    for name in ("A", "B"):
        response = operator.post(reverse("variant_new", args=[step.pk]),
                                 {"name": name, "subject": f"Subject {name}", "body": "Hi {{ first_name }}",
                                  "weight": "1"})
        assert response.status_code == 302
    twice = operator.post(reverse("variant_new", args=[step.pk]), {"name": "B", "subject": "x", "body": "y",
                                                                   "weight": "1"})
    assert twice.status_code == 400 and "already has a variant named “B”" in twice.content.decode()
    broken = operator.post(reverse("variant_new", args=[step.pk]), {"name": "C", "subject": "x", "body": "y {{ a",
                                                                    "weight": "1"})
    assert broken.status_code == 400 and "{{ without its }}" in broken.content.decode()
    page = operator.get(reverse("step_edit", args=[step.pk])).content.decode()
    assert 'id="variant-list"' in page and "This step sends its A/B variants:" in page
    for i in range(4):
        enroll(sequence, f"ed{i}@example.com")
    b = StepVariant.objects.get(step=step, name="B")
    preview = operator.get(reverse("step_preview", args=[step.pk]), {"contact": "ed0@example.com", "variant": b.pk})
    assert 'id="preview-subject">Subject B<' in preview.content.decode()
    confirm = operator.get(reverse("variant_stop", args=[b.pk])).content.decode()
    assert "already sent — cannot recall" in confirm
    operator.post(reverse("variant_stop", args=[b.pk]))
    assert StepVariant.objects.get(pk=b.pk).stopped_at is not None
    assert OperatorAction.objects.filter(action="variant_stop", target_id=sequence.pk).exists()
    detail = operator.get(reverse("sequence_detail", args=[sequence.pk])).content.decode()
    assert "Results per variant" in detail and 'id="verdict-1"' in detail and "Interested" in detail


def test_a_changed_step_says_how_many_people_lack_its_new_variable_before_saving(operator):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 3600))
    enroll(sequence, "has@example.com", role="CTO")
    enroll(sequence, "lacks1@example.com")
    enroll(sequence, "lacks2@example.com")
    step = Step.objects.get(sequence=sequence, position=2)
    form = {"subject": "", "body": "As {{ role }} you know", "wait": "1 hour", "thread": "on"}
    response = operator.post(reverse("step_edit", args=[step.pk]), form)
    text = response.content.decode()
    assert response.status_code == 400
    assert "2 of the 3 people still to get step 2 lack a value this text uses without a fallback" in text
    assert "no value for role" in text
    assert Step.objects.get(pk=step.pk).body != form["body"], "nothing saved before the operator confirms"
    assert operator.post(reverse("step_edit", args=[step.pk]), form | {"save_anyway": "1"}).status_code == 302
    assert Step.objects.get(pk=step.pk).body == form["body"]
    fallback = form | {"body": 'As {{ role|default:"a leader" }} you know'}
    assert operator.post(reverse("step_edit", args=[step.pk]), fallback).status_code == 302
