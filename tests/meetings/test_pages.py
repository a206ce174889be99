"""The admins' page of booking sources: add, edit, delete; the receiving URL shown; the signing key never."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from meetings.models import BookingEvent, BookingSource
from meetings.services import booking_receive, booking_source_create
from sequences.models import OperatorAction
from tests.api.conftest import api_roles  # noqa: F401 - the admins' webhook permission
from tests.meetings.payloads import CALENDLY_KEY, body_of, calendly_event, calendly_headers
from tests.ui.conftest import roles, users  # noqa: F401 - the UI's role fixtures

pytestmark = pytest.mark.django_db
LIST = "/booking-webhooks/"


@pytest.fixture
def admin(api_roles, users, sealing_key):  # noqa: F811
    client = Client()
    client.force_login(users["admin"])
    return client


def everything_stored() -> str:
    """Every text the booking sources' table holds."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM meetings_bookingsource")
        return repr(cursor.fetchall())


def test_an_admin_adds_a_source_sees_its_url_and_never_its_key(admin):
    page = admin.get(LIST)
    assert page.status_code == 200 and b"No booking sources yet" in page.content
    response = admin.post(LIST, {"name": "Sales Calendly", "provider": "calendly", "secret": CALENDLY_KEY})
    assert response.status_code == 302
    source = BookingSource.objects.get()
    page = admin.get(LIST).content.decode()
    assert f"http://testserver/webhooks/bookings/{source.slug}/" in page  # OUTREACH_PUBLIC_URL + the path
    assert "stored encrypted" in page
    edit = admin.get(f"{LIST}{source.pk}/").content.decode()
    assert "Signing key (set — replace)" in edit
    for text in (page, edit, everything_stored()):
        assert CALENDLY_KEY not in text
    assert source.secret_sealed.startswith("gAAAA")  # a Fernet token
    # The operator log has the addition without it too.
    assert CALENDLY_KEY not in repr(list(OperatorAction.objects.values()))


def test_an_edit_keeps_the_key_unless_a_new_one_is_typed_and_a_delete_keeps_the_bookings(admin):
    admin.post(LIST, {"name": "Sales Calendly", "provider": "calendly", "secret": CALENDLY_KEY})
    source = BookingSource.objects.get()
    sealed = source.secret_sealed
    assert admin.post(f"{LIST}{source.pk}/", {"name": "Calendly (sales)", "provider": "calendly",
                                              "secret": ""}).status_code == 302
    source.refresh_from_db()
    assert (source.name, source.secret_sealed) == ("Calendly (sales)", sealed)
    body = body_of(calendly_event("invitee.created", "nobody@elsewhere.test"))
    assert booking_receive(slug=source.slug, headers=calendly_headers(body), body=body).status == 200

    new_key = "a-new-signing-key-0987654321"
    admin.post(f"{LIST}{source.pk}/", {"name": "Calendly (sales)", "provider": "calendly", "secret": new_key})
    assert booking_receive(slug=source.slug, headers=calendly_headers(body), body=body).status == 403  # old key
    assert booking_receive(slug=source.slug, headers=calendly_headers(body, key=new_key), body=body).status == 200

    assert admin.post(f"{LIST}{source.pk}/delete/").status_code == 302
    assert not BookingSource.objects.exists()
    assert booking_receive(slug=source.slug, headers=calendly_headers(body), body=body).status == 404
    page = admin.get(LIST).content.decode()
    assert BookingEvent.objects.filter(source=None, source_name="Calendly (sales)").count() == 1
    assert "nobody@elsewhere.test" in page and "Unknown invitee" in page


def test_a_short_key_and_a_taken_name_are_refused_in_words(admin):
    response = admin.post(LIST, {"name": "Cal", "provider": "calcom", "secret": "short"})
    assert response.status_code == 400 and "16 to 500 characters" in response.content.decode()
    admin.post(LIST, {"name": "Cal", "provider": "calcom", "secret": "x" * 32})
    response = admin.post(LIST, {"name": "Cal", "provider": "calendly", "secret": "y" * 32})
    assert response.status_code == 400 and "named &#x27;Cal&#x27; already" in response.content.decode()
    assert BookingSource.objects.count() == 1


@pytest.mark.parametrize("role", ["staff", "operator"])
def test_only_admins_open_it(api_roles, users, role, sealing_key):  # noqa: F811
    source = booking_source_create(name="Cal", provider="calcom", secret="y" * 32, actor="admin-user")
    client = Client()
    client.force_login(users[role])
    for path in (LIST, f"{LIST}{source.pk}/", f"{LIST}{source.pk}/delete/"):
        assert client.get(path).status_code == 403
        assert client.post(path, {"name": "x", "provider": "calcom", "secret": "z" * 32}).status_code == 403
        assert Client().get(path).status_code == 302  # anonymous: the login page
    assert list(BookingSource.objects.values_list("name", flat=True)) == ["Cal"]


def test_an_admin_gets_405_for_a_delete_by_get_and_404_for_a_source_that_is_not(admin):
    source = booking_source_create(name="Cal", provider="calcom", secret="y" * 32, actor="admin-user")
    assert admin.get(f"{LIST}{source.pk}/delete/").status_code == 405
    assert admin.get(f"{LIST}{source.pk + 1}/").status_code == 404
    assert BookingSource.objects.count() == 1


def test_the_webhooks_page_links_to_it(admin):
    assert b'href="/booking-webhooks/"' in admin.get("/outbound-webhooks/").content
