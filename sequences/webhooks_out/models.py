"""Webhook endpoints, the outbox of deliveries, and the log of each attempt (their app: `sequences.webhooks_out`;
tables and migrations stay with `sequences`)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from db.clock import DbClock
from mailboxes.secrets import validate_secret_env_name
from workspaces.current import workspace_default
from workspaces.scoping import WorkspaceManager


class WebhookEndpoint(models.Model):
    """A URL that receives signed events. The signing secret lives in an OUTREACH_SECRET_* variable."""

    # The workspace whose events it receives; None: the agency's, which receives every workspace's.
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+", null=True,
                                  blank=True, editable=False, default=workspace_default)
    url = models.URLField(max_length=500)
    secret_env = models.CharField(
        max_length=100,
        validators=[validate_secret_env_name],
        help_text="environment variable holding the signing secret (OUTREACH_SECRET_...)",
    )
    event_types = models.JSONField(default=list)  # webhook event type names
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("workspace")

    class Meta:
        app_label = "sequences"
        ordering = ["id"]
        permissions = [("manage_webhooks", "Can register webhook endpoints and read their delivery log")]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """An outbox row: written in the transaction of the event, sent by an RQ job after commit."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        GAVE_UP = "gave_up", "Gave up"

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(
        "sequences.TimelineEvent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    event_type = models.CharField(max_length=60)
    body = models.TextField()  # the exact bytes that are signed and sent (UTF-8 JSON)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(db_default=DbClock())
    lease_until = models.DateTimeField(null=True, blank=True)
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("endpoint__workspace")

    class Meta:
        app_label = "sequences"
        ordering = ["-id"]
        indexes = [models.Index(fields=["next_attempt_at"], name="webhook_due_idx", condition=Q(state="pending"))]

    def __str__(self) -> str:
        return f"{self.event_type} to {self.endpoint_id} ({self.state})"


REFUSED_TARGET = "refused target: "


class WebhookAttempt(models.Model):
    """One POST of a delivery and what the receiver answered."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="tries")
    at = models.DateTimeField(db_default=DbClock())
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)  # None: no answer
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    objects = WorkspaceManager("delivery__endpoint__workspace")

    class Meta:
        app_label = "sequences"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.at} {self.status_code or 'no answer'}"

    @property
    def refused(self) -> bool:
        """Not sent: the target is one the install does not allow; no time or answer is shown for it."""
        return self.error.startswith(REFUSED_TARGET)
