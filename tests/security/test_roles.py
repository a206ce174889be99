"""Admins manage operators and staff but cannot make anyone (themselves included) superuser or grant more."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from sequences.admin.reauth import CONFIRMED_AT

pytestmark = pytest.mark.django_db


def test_an_admin_cannot_grant_superuser_or_single_permissions(users):
    admin = users["admin"]
    client = Client()
    client.force_login(admin)
    url = reverse("admin:auth_user_change", args=[admin.pk])
    page = client.get(url).content.decode()
    assert 'name="is_superuser"' not in page and 'name="user_permissions"' not in page

    data = {"username": admin.username, "is_active": "on", "is_staff": "on", "is_superuser": "on",
            "groups": [g.pk for g in admin.groups.all()], "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"}
    client.post(url, data)
    admin.refresh_from_db()
    assert not admin.is_superuser


def test_an_admin_cannot_edit_a_superuser(users, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="x" * 20)
    client = Client()
    client.force_login(users["admin"])
    assert client.get(reverse("admin:auth_user_change", args=[root.pk])).status_code in (302, 403) or \
        'name="username"' not in client.get(reverse("admin:auth_user_change", args=[root.pk])).content.decode()
    client.post(reverse("admin:auth_user_change", args=[root.pk]), {"username": "root", "is_active": ""})
    root.refresh_from_db()
    assert root.is_active


def test_an_admin_still_manages_operators_and_staff(users):
    client = Client()
    client.force_login(users["admin"])
    session = client.session
    session[CONFIRMED_AT] = int(time.time())  # the admin confirmed their password a moment ago (sequences.admin.reauth)
    session.save()
    operator = users["operator"]
    page = client.get(reverse("admin:auth_user_change", args=[operator.pk])).content.decode()
    assert 'name="groups"' in page
    offered = {g.name for g in Group.objects.all() if f'value="{g.pk}"' in page}
    assert {"staff", "operators", "admins"} <= offered
