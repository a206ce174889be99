"""Bookings made on a scheduling page (Calendly, Cal.com): where they come from, and every one received.

A `BookingSource` is one webhook subscription an admin set up at a provider: its receiving URL carries a random
slug (nothing guessable), and its signing key is sealed at rest with the mailboxes' keys (mailboxes.sealed), never
shown again. A `BookingEvent` is one signed event received from it, once (its provider event id is unique per
source: a replay finds it and does nothing), with what it did in words. Only what explains the effect is kept of
the payload (`payload`): the provider's ids, the invitee's address, the booking token and the meeting's time,
never the invitee's answers or name.
"""

from __future__ import annotations

from django.db import models

from db.clock import DbClock
from workspaces.current import workspace_default
from workspaces.scoping import WorkspaceManager

# The sealed column of a source, and what it is called in words (mailboxes.sealed.sealed_columns_register).
SEALED = {"secret_sealed": "booking webhook signing key"}


class BookingSource(models.Model):
    class Provider(models.TextChoices):
        CALENDLY = "calendly", "Calendly"
        CALCOM = "calcom", "Cal.com"

    # The workspace whose people its bookings stop.
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+",
                                  default=workspace_default, editable=False)
    name = models.CharField(max_length=100, unique=True)
    provider = models.CharField(max_length=10, choices=Provider.choices)
    # The receiving URL's key (/webhooks/bookings/<slug>/): random, so no URL of another source can be guessed.
    slug = models.CharField(max_length=40, unique=True, editable=False)
    secret_sealed = models.TextField(editable=False)  # a Fernet token (mailboxes.sealed)
    created_at = models.DateTimeField(db_default=DbClock())
    # The latest request refused (a bad signature, a stale timestamp, a body that is no event), in words, and when:
    # what the settings page shows while a source is being set up. Refused requests are never stored.
    last_refused_at = models.DateTimeField(null=True, blank=True)
    last_refusal = models.CharField(max_length=300, blank=True)

    objects = WorkspaceManager("workspace")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_provider_display()})"


class BookingEvent(models.Model):
    class Kind(models.TextChoices):
        BOOKED = "booked", "Booked"  # Calendly invitee.created; Cal.com BOOKING_CREATED
        RESCHEDULED = "rescheduled", "Rescheduled"  # Cal.com BOOKING_RESCHEDULED: a booking, as a new one
        CANCELED = "canceled", "Canceled"  # Calendly invitee.canceled; Cal.com BOOKING_CANCELLED: recorded only
        OTHER = "other", "Another event"  # anything else the subscription sends: recorded only

    class Result(models.TextChoices):
        STOPPED = "stopped", "Meeting booked: the person was stopped everywhere"
        RECORDED = "recorded", "Recorded: nothing else changes"
        UNKNOWN_INVITEE = "unknown_invitee", "Unknown invitee: nothing changed"

    # SET_NULL and the name kept: deleting a source keeps the record of what its bookings did.
    source = models.ForeignKey(BookingSource, null=True, on_delete=models.SET_NULL, related_name="events")
    source_name = models.CharField(max_length=100)
    provider = models.CharField(max_length=10, choices=BookingSource.Provider.choices)
    event_id = models.CharField(max_length=300)  # the provider's id of this event (meetings.providers)
    event_type = models.CharField(max_length=60)  # as the provider names it: invitee.created, BOOKING_CREATED
    kind = models.CharField(max_length=12, choices=Kind.choices)
    received_at = models.DateTimeField(db_default=DbClock())  # the database clock
    invitee_email = models.CharField(max_length=254, blank=True)
    contact = models.ForeignKey("sequences.Contact", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="booking_events")
    matched_by = models.CharField(max_length=20, blank=True)  # "booking link" (the token) | "address" | ""
    result = models.CharField(max_length=20, choices=Result.choices, default=Result.RECORDED)
    effect = models.TextField(blank=True)  # what it did, in words
    payload = models.JSONField(default=dict)  # the little of the event that explains its effect

    # Its source's workspace, kept when the source is deleted (the bookings stay).
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+", null=True,
                                  blank=True, editable=False)

    objects = WorkspaceManager("workspace")

    class Meta:
        ordering = ["-received_at", "-id"]
        constraints = [
            # A replay (or a provider's retry of an event already applied) finds its row and does nothing.
            models.UniqueConstraint(fields=["source", "event_id"], name="bookingevent_once_per_source"),
        ]
        indexes = [models.Index(fields=["-received_at", "-id"], name="bookingevent_newest_idx")]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} {self.event_type} {self.invitee_email}"
