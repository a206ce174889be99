"""Every way a password is set refuses a weak one (at least 12 characters, not common, not all digits), and a login
ends when idle or old (issue 34, item 9)."""

from __future__ import annotations

import io
import time

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from tests.ui.conftest import PASSWORD

WEAK = ["a", "short1!", "password1234", "123456789012345", "carol-example"]


@pytest.mark.django_db
@pytest.mark.parametrize("password", WEAK)
def test_add_user_refuses_a_weak_password(roles, monkeypatch, password):
    monkeypatch.setattr("sys.stdin", io.StringIO(password + "\n"))
    with pytest.raises(CommandError, match="the password is refused"):
        call_command("add_user", "carol-example", "--role", "admin", "--password-stdin", stdout=io.StringIO())
    assert not User.objects.filter(username="carol-example").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("password", WEAK)
def test_the_admin_refuses_a_weak_password_for_another_user(admin_user, password):
    other = User.objects.create_user(username="carol-example", password="an old long passphrase")
    admin = site._registry[User]
    form = admin.change_password_form(other, data={"password1": password, "password2": password})
    assert not form.is_valid()
    other.refresh_from_db()
    assert other.check_password("an old long passphrase")


# --- sessions --------------------------------------------------------------------------------------------------------


def _dashboard_after(users, *, started_ago: int, seen_ago: int):
    client = Client()
    client.force_login(users["operator"])
    assert client.get(reverse("dashboard")).status_code == 200
    session = client.session
    now = int(time.time())
    session["outreach_session_started"], session["outreach_session_seen"] = now - started_ago, now - seen_ago
    session.save()
    return client, client.get(reverse("dashboard"))


@pytest.mark.django_db
def test_a_login_ends_after_an_hour_idle(users):
    client, response = _dashboard_after(users, started_ago=2 * 3600, seen_ago=61 * 60)
    assert response.status_code == 302 and reverse("login") in response["Location"]
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_a_login_ends_after_twelve_hours_however_busy(users, settings):
    assert settings.SESSION_COOKIE_AGE <= 12 * 3600
    client, response = _dashboard_after(users, started_ago=12 * 3600 + 60, seen_ago=30)
    assert response.status_code == 302 and reverse("login") in response["Location"]
    client, response = _dashboard_after(users, started_ago=11 * 3600, seen_ago=50 * 60)
    assert response.status_code == 200  # inside both bounds: still logged in


# --- behind a reverse proxy ------------------------------------------------------------------------------------------


def _login(client: Client, username: str, password: str, forwarded: str):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR="10.9.9.9",
                       HTTP_X_FORWARDED_FOR=forwarded)


@pytest.mark.django_db
def test_behind_the_proxy_one_clients_failures_lock_that_client_not_everyone(users, settings):
    settings.OUTREACH_BEHIND_PROXY = True
    for n in range(settings.AXES_FAILURE_LIMIT):  # the client's own first entry changes; the proxy's last does not
        _login(Client(), f"guess-{n}", "wrong", forwarded=f"1.2.3.{n}, 198.51.100.7")
    assert _login(Client(), "staff-user", PASSWORD, forwarded="198.51.100.7").status_code == 429
    assert _login(Client(), "staff-user", PASSWORD, forwarded="203.0.113.5").status_code == 302

    # Without the setting a forwarded address is the client's own claim: only REMOTE_ADDR counts.
    settings.OUTREACH_BEHIND_PROXY = False
    call_command("axes_reset")
    for n in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), f"guess-{n}", "wrong", forwarded=f"198.51.100.{n}")
    assert _login(Client(), "staff-user", PASSWORD, forwarded="203.0.113.5").status_code == 429

