"""API tokens, idempotency keys and bulk enrollments (their app: `api`; tables and migrations stay with
`sequences`)."""

from __future__ import annotations

from django.db import models

from db.clock import DbClock
from workspaces.scoping import WorkspaceManager


class ApiToken(models.Model):
    """A bearer token for the API. Only its SHA-256 is stored; the token itself is printed once."""

    class Role(models.TextChoices):
        STAFF = "staff", "Staff (read only)"
        OPERATOR = "operator", "Operator"
        ADMIN = "admin", "Admin"

    name = models.CharField(max_length=100, unique=True)
    # The workspace it acts in; None: an agency token, which names the workspace of each call (X-Workspace).
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+", null=True,
                                  blank=True)
    role = models.CharField(max_length=10, choices=Role.choices)
    prefix = models.CharField(max_length=16, unique=True)  # shown in the admin to tell tokens apart
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the whole token
    rate_per_minute = models.PositiveIntegerField(default=120)
    created_at = models.DateTimeField(db_default=DbClock())
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = WorkspaceManager("workspace")

    class Meta:
        app_label = "sequences"
        ordering = ["name"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


class IdempotencyKey(models.Model):
    """The first response to a POST with an Idempotency-Key, replayed for a retry of the same request."""

    token = models.ForeignKey(ApiToken, on_delete=models.CASCADE, related_name="idempotency_keys")
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64)  # sha256 of method, path and body
    status_code = models.PositiveSmallIntegerField()
    content_type = models.CharField(max_length=100)
    body = models.TextField()
    created_at = models.DateTimeField(db_default=DbClock())

    class Meta:
        app_label = "sequences"
        constraints = [models.UniqueConstraint(fields=["token", "key"], name="idempotency_key_once_per_token")]

    def __str__(self) -> str:
        return f"{self.key} ({self.status_code})"


class BulkEnrollment(models.Model):
    """One bulk enrollment call: its rows, its progress, and what became of each row."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    sequence = models.ForeignKey("sequences.Sequence", on_delete=models.PROTECT, related_name="+")
    update_contacts = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0)
    processed = models.PositiveIntegerField(default=0)
    rows = models.JSONField(default=list)  # validated rows still to enroll
    results = models.JSONField(default=list)  # [{"line", "email", "status", "enrollment", "reason"}]
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(db_default=DbClock())
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = WorkspaceManager("sequence__workspace")

    class Meta:
        app_label = "sequences"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"bulk enrollment {self.pk} ({self.status})"
