"""Test data: factory_boy for plain rows; sequences and enrollments from the shared builders (proving.harness.data)."""

from __future__ import annotations

import itertools

import factory

from mailboxes.models import Mailbox
from proving.harness import data
from sequences.models import Enrollment, Sequence

_seq = itertools.count(1)


class MailboxFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Mailbox

    name = factory.Sequence(lambda n: f"mailbox-{n}")
    address = factory.Sequence(lambda n: f"sender{n}@outreach.test")
    display_name = "Sales Team"
    smtp_host = "127.0.0.1"
    smtp_port = 2525
    # The test servers (aiosmtpd, Dovecot) listen on loopback without TLS, where a login in clear text is allowed.
    smtp_security = "none"
    imap_security = "none"
    daily_cap = 100000
    # Test mailboxes read no replies unless a test gives them IMAP settings (then the reply view applies).
    follow_ups_without_reply_view = True


def make_sequence(*, mailbox: Mailbox, steps: int = 2, waits: tuple[int, ...] | None = None,
                  name: str = "", **templates: str) -> Sequence:
    """`templates`: `subject` and `body` for data.sequence_create (its defaults otherwise)."""
    waits = (waits or (0,) * steps)[:steps]
    return data.sequence_create(mailbox=mailbox, name=name or f"sequence-{next(_seq)}", waits=waits, **templates)


def enroll(sequence: Sequence, email: str, **fields) -> Enrollment:
    return data.enroll(sequence, email, **fields)
