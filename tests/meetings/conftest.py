"""Fixtures for the booking webhooks: sealed signing keys, one source per provider, a person in two sequences."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from cryptography.fernet import Fernet
from django.urls import reverse

from mailboxes.models import Mailbox
from mailboxes.sealed import KEYS_ENV
from meetings.models import BookingSource
from meetings.services import booking_source_create, booking_source_url
from sequences.models import Enrollment, Sequence
from sequences.services.campaigns import sequence_booking_url_set
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.meetings.payloads import CALCOM_SECRET, CALENDLY_KEY

CALENDLY_PAGE = "https://calendly.com/sam-outreach/intro"
CALCOM_PAGE = "https://cal.com/sam/30min"
BODY = "Hi {{ first_name }}, step {position}. Pick a time: {{ booking_link }}"


@pytest.fixture
def sealing_key(monkeypatch):
    """An encryption key of the test's own for sealed secrets (children started later inherit it)."""
    monkeypatch.setenv(KEYS_ENV, Fernet.generate_key().decode())


@pytest.fixture
def calendly(sealing_key) -> BookingSource:
    return booking_source_create(name="Sales Calendly", provider="calendly", secret=CALENDLY_KEY, actor="admin-user")


@pytest.fixture
def calcom(sealing_key) -> BookingSource:
    return booking_source_create(name="Demo Cal.com", provider="calcom", secret=CALCOM_SECRET, actor="admin-user")


def receiving_url(live_server, source: BookingSource) -> str:
    """The source's URL on the live server: the path of the one the page shows (under OUTREACH_PUBLIC_URL)."""
    path = reverse("booking_webhook", kwargs={"slug": source.slug})
    assert booking_source_url(source).endswith(path)
    return live_server.url + path


@dataclass
class People:
    mailbox: Mailbox
    first: Sequence  # links to the Calendly page
    second: Sequence  # links to the Cal.com page
    ada: list[Enrollment]  # Ada in both
    bob: Enrollment  # a bystander in the first


@pytest.fixture
def people(smtp_server) -> People:
    mailbox = MailboxFactory(smtp_port=smtp_server.port)
    first = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Intro", body=BODY)
    second = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Demo", body=BODY)
    sequence_booking_url_set(sequence_id=first.pk, url=CALENDLY_PAGE, actor="fixture")
    sequence_booking_url_set(sequence_id=second.pk, url=CALCOM_PAGE, actor="fixture")
    ada = [enroll(first, "ada@acme.test"), enroll(second, "ada@acme.test")]
    return People(mailbox=mailbox, first=first, second=second, ada=ada, bob=enroll(first, "bob@acme.test"))
