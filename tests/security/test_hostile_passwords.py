"""Every way a password is set refuses a weak one: at least 12 characters, not common, not all digits
(issue 34, item 9)."""

from __future__ import annotations

import io

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

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
