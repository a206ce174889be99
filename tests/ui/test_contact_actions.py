"""From a contact's page: change its details (the import's checks), enroll it, suppress it; every change in the
operator log; operators edit and enroll, admins also suppress, staff read."""

from __future__ import annotations

from html import unescape

from django.urls import reverse

from sequences.models import Contact, Enrollment, OperatorAction, SendJob, Step, Suppression
from tests.factories import MailboxFactory, enroll, make_sequence

E = Enrollment.Status


def _form(contact: Contact, **changes) -> dict:
    data = {"first_name": contact.first_name, "last_name": contact.last_name, "company": contact.company,
            "timezone": contact.timezone, **{f"field:{k}": v for k, v in (contact.fields or {}).items()}}
    return {**data, **changes}


def test_an_operator_changes_a_contacts_details_with_the_imports_checks(client, users):
    sequence = make_sequence(mailbox=MailboxFactory(), steps=1)
    contact = enroll(sequence, "ada@example.com", first_name="Ada", city="Oslo", plan="gold").contact
    client.force_login(users["operator"])
    url = reverse("contact_edit", args=[contact.pk])
    assert client.get(url).status_code == 200

    refused = client.post(url, _form(contact, timezone="Mars/Olympus"))
    assert refused.status_code == 400
    assert "Not saved: timezone: " in unescape(refused.content.decode())
    refused = client.post(url, _form(contact, company="Acme\nInc"))
    assert refused.status_code == 400 and "company: contains a line break" in refused.content.decode()
    assert client.post(url, {"first_name": "Eve"}).status_code == 400  # an incomplete form saves nothing
    contact.refresh_from_db()
    assert (contact.first_name, contact.timezone, contact.company) == ("Ada", "", "Acme")

    response = client.post(url, _form(contact, first_name="Ada Mae", timezone="Europe/Oslo", **{
        "field:plan": "", "field:city": "Bergen", "new_field_name": "Role", "new_field_value": "CTO"}))
    assert response["Location"] == reverse("contact_detail", args=[contact.pk])
    contact.refresh_from_db()
    assert (contact.first_name, contact.timezone) == ("Ada Mae", "Europe/Oslo")
    assert contact.fields == {"city": "Bergen", "role": "CTO"}
    entry = OperatorAction.objects.get(action="contact_edit")
    assert entry.actor == users["operator"].username and entry.target == "ada@example.com"
    assert entry.result["changed"] == ["first_name", "timezone", "fields"]
    assert entry.result["before"]["fields"] == {"city": "Oslo", "plan": "gold"}
    page = client.get(reverse("contact_detail", args=[contact.pk])).content.decode()
    assert "Saved: first name, timezone, fields." in page
    log = client.get(reverse("operator_log")).content.decode()
    assert f'<a href="{reverse("contact_detail", args=[contact.pk])}">ada@example.com</a>' in log


def test_staff_read_a_contact_but_change_nothing(client, users, world):
    contact = world["active"].contact
    client.force_login(users["staff"])
    page = client.get(reverse("contact_detail", args=[contact.pk])).content.decode()
    assert 'id="edit-contact"' not in page and 'id="enroll-contact"' not in page and "suppress-contact" not in page
    assert client.get(reverse("contact_edit", args=[contact.pk])).status_code == 403
    assert client.post(reverse("contact_enroll", args=[contact.pk]), {"sequence": world["sequence"].pk}
                       ).status_code == 403


def test_enrolling_from_the_contact_page_refuses_what_an_import_refuses(client, users):
    mailbox = MailboxFactory()
    plain = make_sequence(mailbox=mailbox, steps=1, name="Plain")
    needs_city = make_sequence(mailbox=mailbox, steps=1, name="Needs a city")
    Step.objects.filter(sequence=needs_city).update(body="Hello from {{ city }}")
    contact = Contact.objects.create(email="bob@example.com", first_name="Bob", company="Initech")
    client.force_login(users["operator"])
    url = reverse("contact_enroll", args=[contact.pk])
    page = client.get(reverse("contact_detail", args=[contact.pk])).content.decode()
    assert f'<option value="{plain.pk}">Plain</option>' in page

    refused = client.post(url, {"sequence": needs_city.pk}, follow=True).content.decode()
    assert "Not enrolled in Needs a city: bob@example.com: " in unescape(refused) and "city" in refused
    assert not Enrollment.objects.filter(contact=contact).exists()

    response = client.post(url, {"sequence": plain.pk})
    enrollment = Enrollment.objects.get(contact=contact, sequence=plain)
    assert response["Location"] == reverse("enrollment_detail", args=[enrollment.pk])
    assert SendJob.objects.filter(enrollment=enrollment, state=SendJob.State.SCHEDULED).count() == 1
    assert OperatorAction.objects.filter(action="contact_enroll", target_id=contact.pk,
                                         result__sequence="Plain").exists()
    again = client.post(url, {"sequence": plain.pk}, follow=True).content.decode()
    assert "is already enrolled in" in again


def test_an_admin_suppresses_from_the_contact_page_and_it_stops_the_person(client, users, world):
    enrollment = world["active"]
    url = reverse("contact_suppress", args=[enrollment.contact_id])
    client.force_login(users["operator"])
    assert client.post(url, {"reason": "manual"}).status_code == 403, "the ledger is the admins'"
    client.force_login(users["admin"])
    page = client.get(reverse("contact_detail", args=[enrollment.contact_id])).content.decode()
    assert 'id="suppress-contact"' in page
    done = unescape(client.post(url, {"reason": "manual", "note": "asked by phone"}, follow=True).content.decode())
    assert "active@example.com is suppressed (Manual): nothing more is sent to it. 1 email canceled — it will not " \
           "be sent." in done
    assert Suppression.objects.filter(value="active@example.com", action="add", note="asked by phone").exists()
    enrollment.refresh_from_db()
    assert enrollment.status == E.STOPPED
    assert OperatorAction.objects.filter(action="suppression_add", actor=users["admin"].username).exists()
