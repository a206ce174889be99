"""Workspaces: one install serves several clients, each sealed from the others.

A tenant row belongs to one workspace: a mailbox, a sequence, a contact carry it; what hangs below them (steps,
enrollments, jobs, replies, the timeline) belongs to theirs. A user with no membership works across the install (an
agency's staff); a user with memberships sees only those workspaces, each with the role its membership names.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from db.clock import DbClock

DEFAULT_NAME = "Default"  # the workspace an install had before it had workspaces


class Workspace(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(db_default=DbClock())

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    """A membership's role: the groups of the same name hold its permissions (sequences/migrations/0002_roles.py),
    and the client role's (migration workspaces/0002_client_role)."""

    ADMIN = "admin", "Admin"
    OPERATOR = "operator", "Operator"
    STAFF = "staff", "Staff (read only)"
    CLIENT = "client", "Client (results and replies, read only)"


ROLE_GROUP = {Role.ADMIN: "admins", Role.OPERATOR: "operators", Role.STAFF: "staff", Role.CLIENT: "clients"}


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices)

    class Meta:
        ordering = ["workspace__name"]
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="membership_user_workspace_uniq")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"
