"""Fixtures for the operator UI: roles, users per role, a small world built through the services, Chromium."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from proving.harness.browser import CHROMIUM, CHROMIUM_ARGS

# pytest-playwright's sync API runs an event loop in the test thread; the ORM
# calls in browser tests are still plain synchronous code (RECIPES.md).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
PASSWORD = "correct horse battery"
ROLE_GROUPS = {"staff": "staff", "operator": "operators", "admin": "admins"}

_roles_migration = importlib.import_module("sequences.migrations.0002_roles")
_moved_migration = importlib.import_module("inbound.migrations.0005_ledger_moved_here")
_weekly_migration = importlib.import_module("reports.migrations.0002_weekly_report")
_clients_migration = importlib.import_module("workspaces.migrations.0002_client_role")


@pytest.fixture
def roles(db):
    """The groups of the 0002_roles migration.

    pytest-django runs transactional tests last, so the migrated groups are
    there for the others; a transactional test after another one finds the
    tables flushed and gets them recreated by the migration's own function.
    """
    roles_ensure()


def roles_ensure() -> None:
    from django.apps import apps
    from django.contrib.auth.models import Group

    if Group.objects.filter(name__in=ROLE_GROUPS.values(), permissions__codename="view_sequence").count() < 3:
        _roles_migration.roles_create(apps)
        _moved_migration.roles_after_move(apps)
        _weekly_migration.weekly_perm_grant(apps)
    if not Group.objects.filter(name="clients", permissions__codename="view_sequence").exists():
        _clients_migration.client_role_create(apps)


@pytest.fixture
def users(roles, django_user_model):
    return users_make(django_user_model)


def users_make(user_model) -> dict:
    from django.contrib.auth.models import Group

    made = {}
    for role, group in ROLE_GROUPS.items():
        user = user_model.objects.create_user(username=f"{role}-user", password=PASSWORD, is_staff=(role == "admin"))
        user.groups.add(Group.objects.get(name=group))
        made[role] = user
    return made


@pytest.fixture
def world(db):
    """One of everything the pages show, built through the real services (no SMTP needed)."""
    return world_make()


def world_make() -> dict:
    from inbound.models import InboundMessage
    from sequences.models import SendJob
    from sequences.services.stops import enrollment_pause
    from sequences.services.suppressions import suppression_add
    from tests.factories import MailboxFactory, enroll, make_sequence

    mailbox = MailboxFactory(name="ui-box", smtp_password_env="OUTREACH_SECRET_UI_BOX_SMTP")
    sequence = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="UI sequence")
    active = enroll(sequence, "active@example.com")
    paused = enroll(sequence, "paused@example.com")
    enrollment_pause(enrollment_id=paused.pk, actor="fixture")
    job = SendJob.objects.filter(enrollment=active).first()
    inbound = InboundMessage.objects.create(
        mailbox=mailbox, folder="INBOX", uidvalidity=1, uid=1, message_id="<reply-1@example.com>",
        from_address="active@example.com", from_name="Active", subject="Re: Hello", kind="human_reply",
        reply_text="Thanks!", job=job, enrollment=active, correlation_rule="in_reply_to",
    )
    suppression_add(value="blocked@example.com", reason="manual", note="fixture", actor="fixture")
    return {"mailbox": mailbox, "sequence": sequence, "active": active, "paused": paused, "job": job,
            "inbound": inbound}


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    # Debian's Chromium, never a downloaded one (RECIPES.md).
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture
def screenshot(page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
