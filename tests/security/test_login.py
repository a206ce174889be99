"""Login throttling (django-axes): by username and by address, on the UI's login and the admin's."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.ui.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def login(client: Client, username: str, password: str, url: str | None = None, ip: str = "10.0.0.1"):
    return client.post(url or reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_many_wrong_passwords_lock_the_username_even_with_the_right_one(users, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login(client, "operator-user", f"wrong-{n}", ip=f"10.0.1.{n}").status_code == 200
    assert login(client, "operator-user", "wrong-last", ip="10.0.1.99").status_code == 429
    response = login(client, "operator-user", PASSWORD, ip="10.0.2.1")
    assert response.status_code == 429
    assert b"Login locked" in response.content and b"axes_reset_username" in response.content
    assert "_auth_user_id" not in client.session

    call_command("axes_reset_username", "operator-user")
    assert login(client, "operator-user", PASSWORD, ip="10.0.2.1").status_code == 302


def test_many_failures_from_one_address_lock_that_address(users, settings):
    client = Client()
    for n in range(settings.AXES_FAILURE_LIMIT):
        login(client, f"guess-{n}", "wrong", ip="10.0.3.3")
    assert login(client, "staff-user", PASSWORD, ip="10.0.3.3").status_code == 429
    assert login(Client(), "staff-user", PASSWORD, ip="10.0.3.4").status_code == 302


def test_the_admin_login_has_the_same_throttle(users, settings):
    client = Client()
    url = reverse("admin:login")
    for n in range(settings.AXES_FAILURE_LIMIT):
        login(client, "admin-user", f"wrong-{n}", url=url, ip=f"10.0.4.{n}")
    response = login(client, "admin-user", PASSWORD, url=url, ip="10.0.5.1")
    assert response.status_code == 429 and b"Login locked" in response.content
