"""An admin confirms their own password before changing another user's password or role (issue 34, item 9)."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from sequences.admin.reauth import CONFIRMED_AT
from tests.ui.conftest import PASSWORD

pytestmark = pytest.mark.django_db
NEW = "a brand new long passphrase 42"


@pytest.fixture
def admin_client(users):
    client = Client()
    assert client.post(reverse("login"), {"username": "admin-user", "password": PASSWORD}).status_code == 302
    return client


def test_changing_another_users_password_or_role_asks_for_the_admins_password_first(admin_client, users):
    staff = users["staff"]
    password_url = f"/admin/auth/user/{staff.pk}/password/"
    change_url = f"/admin/auth/user/{staff.pk}/change/"

    # Without a fresh confirmation: sent to confirm, and nothing changes.
    for url, data in ((password_url, {"password1": NEW, "password2": NEW}),
                      (change_url, {"username": staff.username, "groups": [Group.objects.get(name="admins").pk],
                                    "is_active": "on", "is_staff": "on"})):
        assert admin_client.get(url)["Location"].startswith("/admin/auth/user/reauthenticate/?next=")
        assert admin_client.post(url, data).status_code == 302
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD) and not staff.is_staff and not staff.groups.filter(name="admins").exists()

    confirm = f"/admin/auth/user/reauthenticate/?next={password_url}"
    page = admin_client.get(confirm)
    assert page.status_code == 200 and b"Your password" in page.content
    wrong = admin_client.post(confirm, {"password": "not my password", "next": password_url})
    assert wrong.status_code == 400 and b"That is not your password" in wrong.content
    right = admin_client.post(confirm, {"password": PASSWORD, "next": password_url})
    assert right.status_code == 302 and right["Location"] == password_url

    assert admin_client.get(password_url).status_code == 200
    assert admin_client.post(password_url, {"password1": NEW, "password2": NEW}).status_code == 302
    staff.refresh_from_db()
    assert staff.check_password(NEW)

    # The confirmation holds a few minutes only.
    session = admin_client.session
    session[CONFIRMED_AT] = int(time.time()) - 6 * 60
    session.save()
    assert "reauthenticate" in admin_client.get(change_url)["Location"]


def test_an_admin_changes_their_own_account_without_confirming(admin_client, users):
    me = users["admin"]
    assert admin_client.get(f"/admin/auth/user/{me.pk}/change/").status_code == 200


def test_the_confirmation_never_redirects_elsewhere(admin_client):
    response = admin_client.post("/admin/auth/user/reauthenticate/", {"password": PASSWORD,
                                                                        "next": "https://attacker.example/"})
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert User.objects.filter(username="admin-user").exists()
