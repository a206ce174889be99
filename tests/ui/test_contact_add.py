"""Adding one contact in the browser (/contacts/new/), in Debian's Chromium: the import's checks, an optional
enrollment, nothing written when a check refuses, and an address that is already a contact pointed to."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from sequences.models import Contact, Enrollment, OperatorAction, SendJob
from sequences.services.suppressions import suppression_add
from tests.factories import MailboxFactory, make_sequence
from tests.ui.test_browser import log_in

pytestmark = [pytest.mark.django_db(transaction=True)]


def fill(page: Page, **values: str) -> None:
    for name, value in values.items():
        page.fill(f"#{name}", value)


def test_operator_adds_a_contact_and_enrolls_it_with_the_checks_of_an_import(live_server, page: Page, users,
                                                                             screenshot):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=2, waits=(0, 86400), name="Welcome",
                             body="Hi {{ first_name }}, about your {{ plan }} plan.")
    log_in(page, f"{live_server.url}/contacts/new/", users["operator"].username)
    expect(page.locator("h1")).to_have_text("Add contact")

    # The import's check of a time zone, in its words; nothing is written.
    fill(page, email="New.Person@Example.COM", first_name="Nora", last_name="Person", company="Acme",
         timezone="Mars/Olympus")
    page.select_option("#sequence", label="Welcome")
    page.click("#add-contact")
    expect(page.locator("#add-error")).to_contain_text("timezone: unknown time zone 'Mars/Olympus'")
    expect(page.locator("#first_name")).to_have_value("Nora")  # what was typed is kept
    assert not Contact.objects.exists()

    # The sequence's step uses {{ plan }} without a fallback: refused as an import refuses the row.
    fill(page, timezone="Europe/Berlin")
    page.click("#add-contact")
    expect(page.locator("#add-error")).to_contain_text("no value for plan, used by step 1 without a fallback")
    screenshot("contact-add-refused")
    assert not Contact.objects.exists()

    fill(page, field_name_1="plan", field_value_1="gold")
    page.click("#add-contact")
    expect(page).to_have_url(re.compile(r"/enrollments/\d+/$"))
    expect(page.locator(".msg.success")).to_contain_text("Added new.person@example.com and enrolled it in Welcome")
    contact = Contact.objects.get()
    assert (contact.email, contact.first_name, contact.last_name, contact.company, contact.timezone,
            contact.fields) == ("new.person@example.com", "Nora", "Person", "Acme", "Europe/Berlin", {"plan": "gold"})
    enrollment = Enrollment.objects.get(contact=contact, sequence=sequence)
    assert SendJob.objects.filter(enrollment=enrollment, state=SendJob.State.SCHEDULED).count() == 1
    assert OperatorAction.objects.filter(action="contact_add", target="new.person@example.com",
                                         actor=users["operator"].username).exists()

    # The same address again: not changed here, the page points to the contact.
    page.goto(f"{live_server.url}/contacts/new/")
    fill(page, email="new.person@example.com", first_name="Someone else")
    page.click("#add-contact")
    expect(page.locator("#add-error")).to_contain_text("new.person@example.com is already a contact")
    page.click("#existing-contact")
    expect(page).to_have_url(f"{live_server.url}/contacts/{contact.pk}/")
    assert Contact.objects.get().first_name == "Nora"


def test_a_suppressed_address_is_not_enrolled_and_nothing_is_written(live_server, page: Page, users):
    make_sequence(mailbox=MailboxFactory(), steps=1, name="Spring")
    suppression_add(value="@blocked.example", reason="manual", note="whole domain", actor="ops")
    log_in(page, f"{live_server.url}/contacts/new/", users["operator"].username)
    fill(page, email="someone@blocked.example", first_name="Sam")
    page.select_option("#sequence", label="Spring")
    page.click("#add-contact")
    expect(page.locator("#add-error")).to_contain_text("someone@blocked.example is suppressed")
    assert not Contact.objects.exists()


def test_a_contact_without_a_sequence_is_added_alone(live_server, page: Page, users):
    log_in(page, f"{live_server.url}/contacts/new/", users["admin"].username)
    fill(page, email="not an address")
    page.click("#add-contact")
    expect(page.locator("#add-error")).to_contain_text("'not an address' is not a valid address")
    fill(page, email="ada@example.net", first_name="Ada", field_name_1="first_name", field_value_1="x")
    page.click("#add-contact")
    expect(page.locator("#add-error")).to_contain_text("'first_name' is one of the contact's own details")
    fill(page, field_name_1="", field_value_1="")
    page.click("#add-contact")
    contact = Contact.objects.get()
    expect(page).to_have_url(f"{live_server.url}/contacts/{contact.pk}/")
    expect(page.locator(".msg.success")).to_contain_text("Added ada@example.net (not enrolled in any sequence)")
    assert not Enrollment.objects.exists()


def test_staff_may_not_add_contacts(client, users):
    client.force_login(users["staff"])
    assert client.get("/contacts/new/").status_code == 403
    assert client.post("/contacts/new/", {"email": "x@example.com"}).status_code == 403
    assert not Contact.objects.exists()
