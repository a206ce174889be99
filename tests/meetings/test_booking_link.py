"""`{{ booking_link }}` and the sequence's booking URL: rendering, the TOML file, the editor; and the booking
sources' sealed keys under key rotation, the bookings' addresses under erasure."""

from __future__ import annotations

import os
from email import message_from_bytes, policy
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from inbound.erasure import contact_erase
from mailboxes.sealed import KEYS_ENV, opens_with_newest, unseal
from meetings.models import BookingEvent, BookingSource
from meetings.services import booking_receive
from sequences.booking_token import booking_link, booking_token, booking_token_read
from sequences.config.apply import config_apply
from sequences.config.export import sequence_export_toml
from sequences.config.parse import parse
from sequences.config.validate import ConfigError
from sequences.messages import PrepareError, message_prepare
from sequences.models import Sequence
from sequences.previews import step_preview
from sequences.services.campaigns import sequence_booking_url_set
from sequences.services.common import ServiceError
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.meetings.conftest import CALCOM_PAGE, CALENDLY_PAGE
from tests.meetings.payloads import CALENDLY_KEY, body_of, calendly_event, calendly_headers
from tests.ui import conftest as ui_fixtures

pytestmark = pytest.mark.django_db
roles, users = ui_fixtures.roles, ui_fixtures.users


def body_for(url: str, body: str = "Pick a time: {{ booking_link }}") -> tuple[str, int]:
    """Step 1's text as message_prepare builds it for Ada, in a sequence whose booking URL is `url`; her contact."""
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, body=body)
    if url:
        sequence_booking_url_set(sequence_id=sequence.pk, url=url, actor="test")
    job = enroll(sequence, "ada@acme.test").jobs.get()
    message = message_from_bytes(message_prepare(job_id=job.pk).data, policy=policy.default)
    return message.get_content().strip(), job.enrollment.contact_id


def test_the_link_carries_the_persons_token_as_utm_content():
    text, contact_id = body_for(CALENDLY_PAGE)
    link = text.removeprefix("Pick a time: ")
    assert link.startswith(CALENDLY_PAGE + "?utm_content=")
    query = parse_qs(urlsplit(link).query)
    assert list(query) == ["utm_content"]  # Calendly: utm_content only
    assert booking_token_read(query["utm_content"][0]) == contact_id

    text, contact_id = body_for(CALCOM_PAGE)
    query = parse_qs(urlsplit(text.removeprefix("Pick a time: ")).query)
    # Cal.com: metadata[utm_content] too, which its webhook gives back in payload.metadata.
    assert query["utm_content"] == query["metadata[utm_content]"] == [booking_token(contact_id)]


def test_a_link_keeps_the_pages_own_parameters_and_a_token_is_not_forged():
    link = booking_link("https://calendly.com/sam/intro?month=2026-12&utm_content=old&hide_gdpr_banner=1", 42)
    assert parse_qs(urlsplit(link).query) == {"month": ["2026-12"], "hide_gdpr_banner": ["1"],
                                              "utm_content": [booking_token(42)]}
    assert booking_token_read(booking_token(42)) == 42
    for forged in ("42", "43:" + booking_token(42).split(":")[1], "", "42:", "x:y:z"):
        assert booking_token_read(forged) is None


def test_without_a_booking_url_the_variable_is_missing_unless_the_step_gives_a_fallback():
    with pytest.raises(PrepareError, match="missing value for booking_link"):
        body_for("")
    text, _ = body_for("", body='Pick a time: {{ booking_link|default:"just reply" }}')
    assert text == "Pick a time: just reply"


def test_the_preview_shows_the_link_the_person_gets():
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1, body="{{ booking_link }}")
    sequence_booking_url_set(sequence_id=sequence.pk, url=CALENDLY_PAGE, actor="test")
    contact = enroll(sequence, "ada@acme.test").contact
    sequence.refresh_from_db()
    preview = step_preview(step=sequence.steps.get(), contact=contact)
    assert preview.errors == [] and preview.body == booking_link(CALENDLY_PAGE, contact.pk)


@pytest.mark.parametrize("url", ["http://calendly.com/sam", "calendly.com/sam", "https://cal.com/sam#x",
                                 "https://cal.com/s am", "https://" + "x" * 500])
def test_a_booking_url_that_cannot_carry_a_token_is_refused(url):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    with pytest.raises(ServiceError, match="Booking URL"):
        sequence_booking_url_set(sequence_id=sequence.pk, url=url, actor="test")


TOML = """
[[mailbox]]
name = "sales"
address = "sales@acme.test"
smtp = { host = "127.0.0.1", port = 2525, security = "none" }
follow_ups_without_reply_view = true

[[sequence]]
name = "Intro"
mailbox = "sales"
%s

[[sequence.step]]
subject = "Hi {{ first_name }}"
body = "Book a time: {{ booking_link }}"
"""


def test_the_toml_file_sets_exports_and_keeps_the_booking_url():
    config_apply(parse(TOML % f'booking_url = "{CALENDLY_PAGE}"'))
    sequence = Sequence.objects.get(name="Intro")
    assert sequence.booking_url == CALENDLY_PAGE
    exported = sequence_export_toml(sequence)
    assert f'booking_url = "{CALENDLY_PAGE}"' in exported
    config_apply(parse(exported))  # the export loads back unchanged
    config_apply(parse(TOML % ""))  # a file without the key leaves it as it is
    sequence.refresh_from_db()
    assert sequence.booking_url == CALENDLY_PAGE
    result = config_apply(parse(TOML % 'booking_url = ""'))  # "" removes it
    sequence.refresh_from_db()
    assert sequence.booking_url == "" and any("booking_url" in c for c in result.changes)
    assert "booking_url" not in sequence_export_toml(sequence)
    with pytest.raises(ConfigError) as refused:
        parse(TOML % 'booking_url = "http://calendly.com/sam"')
    assert "sequence[0].booking_url" in str(refused.value) and "https://" in str(refused.value)


def test_the_sequence_editor_sets_it(users):
    client = Client()
    client.force_login(users["operator"])
    mailbox = MailboxFactory()
    sequence = make_sequence(mailbox=mailbox, steps=1)
    edit = reverse("sequence_edit", args=[sequence.pk])
    assert "{{ booking_link }}" in client.get(edit).content.decode()  # the help says how a step uses it
    assert client.post(edit, {"name": sequence.name, "mailbox": mailbox.pk,
                              "booking_url": CALCOM_PAGE}).status_code == 302
    sequence.refresh_from_db()
    assert sequence.booking_url == CALCOM_PAGE
    client.post(edit, {"name": sequence.name, "mailbox": mailbox.pk})  # posted without it: kept
    sequence.refresh_from_db()
    assert sequence.booking_url == CALCOM_PAGE
    response = client.post(edit, {"name": sequence.name, "mailbox": mailbox.pk, "booking_url": "http://x.test/"})
    assert response.status_code == 400 and "must be an https:// address" in response.content.decode()


def test_key_rotation_reseals_a_sources_signing_key(sealing_key, calendly, monkeypatch):
    old = calendly.secret_sealed
    new_key = Fernet.generate_key().decode()
    monkeypatch.setenv(KEYS_ENV, f"{new_key},{os.environ[KEYS_ENV]}")
    assert not opens_with_newest(old)
    call_command("rotate_encryption_key")
    calendly.refresh_from_db()
    assert calendly.secret_sealed != old and opens_with_newest(calendly.secret_sealed)
    assert unseal(calendly.secret_sealed) == CALENDLY_KEY


def test_erasing_a_person_removes_their_address_from_the_bookings(calendly):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    enroll(sequence, "ada@acme.test")
    body = body_of(calendly_event("invitee.created", "ada@acme.test"))
    assert booking_receive(slug=calendly.slug, headers=calendly_headers(body), body=body).status == 200
    contact_erase(email="ada@acme.test", actor="dpo")
    row = BookingEvent.objects.get()
    assert "ada@acme.test" not in repr([row.invitee_email, row.payload, row.effect])
    assert BookingSource.objects.get().secret_sealed  # the source itself is untouched
    assert CALENDLY_KEY not in repr(row.payload)
