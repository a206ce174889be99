"""Mailboxes: sending identities (SMTP) and the inbound side (IMAP cursors, inbound ledger)."""

from __future__ import annotations

from django.db import models

from sequences.dbclock import DbClock


class Security(models.TextChoices):
    NONE = "none", "none"
    STARTTLS = "starttls", "STARTTLS"
    TLS = "tls", "TLS"


class Mailbox(models.Model):
    """A sending identity. Passwords are never stored: only the name of the env var holding them."""

    name = models.SlugField(max_length=100, unique=True)
    address = models.EmailField()
    display_name = models.CharField(max_length=200, blank=True)

    smtp_host = models.CharField(max_length=255, default="127.0.0.1")
    smtp_port = models.PositiveIntegerField(default=2525)
    smtp_username = models.CharField(max_length=255, blank=True)
    smtp_password_env = models.CharField(max_length=100, blank=True)
    smtp_security = models.CharField(max_length=10, choices=Security.choices, default=Security.NONE)

    daily_cap = models.PositiveIntegerField(default=200)
    # Sending window: weekdays as "mon,tue,..." (empty = every day), local times.
    window_days = models.CharField(max_length=40, blank=True)
    window_start = models.TimeField(null=True, blank=True)
    window_end = models.TimeField(null=True, blank=True)
    window_timezone = models.CharField(max_length=64, default="UTC")

    paused = models.BooleanField(default=False)
    # Only a mailbox marked as a drill target may be used by `manage.py drill`.
    is_drill_target = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)

    # IMAP side (reply ingestion); empty host = not polled.
    imap_host = models.CharField(max_length=255, blank=True)
    imap_port = models.PositiveIntegerField(default=143)
    imap_username = models.CharField(max_length=255, blank=True)
    imap_password_env = models.CharField(max_length=100, blank=True)
    imap_security = models.CharField(max_length=10, choices=Security.choices, default=Security.NONE)
    imap_folders = models.JSONField(default=list, blank=True)

    # Health of the poller, shown to operators.
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_poll_ok_at = models.DateTimeField(null=True, blank=True)
    last_poll_error = models.TextField(blank=True)
    poll_failures = models.PositiveIntegerField(default=0)

    created_at = models.DateTimeField(db_default=DbClock())

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def from_header(self) -> str:
        from email.utils import formataddr

        return formataddr((self.display_name, self.address)) if self.display_name else self.address

    @property
    def has_imap(self) -> bool:
        return bool(self.imap_host)
