"""Test data built through the real services (factory_boy only for plain rows)."""

from __future__ import annotations

import itertools

import factory

from mailboxes.models import Mailbox
from sequences import services
from sequences.models import Enrollment, Sequence, Step

_seq = itertools.count(1)


class MailboxFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Mailbox

    name = factory.Sequence(lambda n: f"mailbox-{n}")
    address = factory.Sequence(lambda n: f"sender{n}@outreach.test")
    display_name = "Sales Team"
    smtp_host = "127.0.0.1"
    smtp_port = 2525
    daily_cap = 100000


def make_sequence(*, mailbox: Mailbox, steps: int = 2, waits: tuple[int, ...] | None = None, name: str = "") -> Sequence:
    sequence = Sequence.objects.create(name=name or f"sequence-{next(_seq)}", mailbox=mailbox)
    waits = waits or tuple([0] * steps)
    for position in range(1, steps + 1):
        Step.objects.create(
            sequence=sequence,
            position=position,
            subject="Hello {{ first_name }}" if position == 1 else "",
            body=f"Step {position} for {{{{ first_name }}}} at {{{{ company }}}}.",
            wait_seconds=waits[position - 1],
            thread=position > 1,
        )
    return sequence


def enroll(sequence: Sequence, email: str, **fields) -> Enrollment:
    contact = services.contact_upsert(email=email, first_name=fields.pop("first_name", "Ada"),
                                      company=fields.pop("company", "Acme"), fields=fields)
    return services.enrollment_create(sequence_id=sequence.pk, contact_id=contact.pk)
