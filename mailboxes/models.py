"""Mailboxes: sending identities (SMTP, ESP), the IMAP cursors of their reply folders, ESP tracking events and
the refusals counted against a mailbox."""

from __future__ import annotations

from email.utils import formataddr

from django.db import models

from db.clock import DbClock
from workspaces.current import workspace_default
from workspaces.scoping import WorkspaceManager

from . import bound


class Security(models.TextChoices):
    NONE = "none", "none"
    STARTTLS = "starttls", "STARTTLS"
    TLS = "tls", "TLS"


class Auth(models.TextChoices):
    PASSWORD = "password", "password"
    OAUTH2 = "oauth2", "OAuth2 (XOAUTH2 / OAUTHBEARER)"


class SaveToSent(models.TextChoices):
    """Whether a copy of each message sent is appended to the mailbox's Sent folder over IMAP (sequences.sent_copies).

    "auto": unless the server keeps one itself (SMTP through Gmail / Google Workspace) or there is no IMAP Sent
    folder to keep it in (an ESP transport, no IMAP settings)."""

    AUTO = "auto", "automatic: unless the server keeps a copy itself"
    ALWAYS = "always", "always"
    NEVER = "never", "never"


# A mailbox's name is unique across the install, not per workspace: it is the mailbox's label in the metrics
# (`outreach_mailbox_*{mailbox=NAME}`), the health check, the logs and the pause events of the timeline, all of
# which read every workspace at once. A name another workspace holds is refused in these words, which tell no
# more than that it is taken (docs/workspaces.md).
MAILBOX_NAME_TAKEN = "this name is not available: choose another"


class Mailbox(models.Model):
    """A sending identity. A secret is either named (an allow-listed environment variable, `*_env`) or entered in
    the browser and kept sealed (`*_sealed`: a Fernet token, mailboxes.sealed); a sealed one wins when both are set.
    A plain secret is never a field of this model."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+",
                                  default=workspace_default, editable=False)
    name = models.SlugField(max_length=100, unique=True)
    address = models.EmailField()
    display_name = models.CharField(max_length=200, blank=True)

    smtp_host = models.CharField(max_length=255, default="127.0.0.1")
    # Submission with STARTTLS by default; "none" logs in only to a loopback host (mailboxes.tls).
    smtp_port = models.PositiveIntegerField(default=587)
    smtp_username = models.CharField(max_length=255, blank=True)
    smtp_password_env = models.CharField(max_length=100, blank=True)
    smtp_password_sealed = models.TextField(blank=True, editable=False)
    smtp_security = models.CharField(max_length=10, choices=Security.choices, default=Security.STARTTLS)

    daily_cap = models.PositiveIntegerField(default=200)
    # Spacing (sequences.daily_cap, enforced by the final check under this row's lock): two messages are never
    # handed off closer than `min_gap` seconds, plus a random extra up to `gap_jitter`; `next_handoff_at` is the
    # earliest moment the next one may leave, written by the final check only.
    min_gap = models.PositiveIntegerField(default=0)
    gap_jitter = models.PositiveIntegerField(default=0)
    next_handoff_at = models.DateTimeField(null=True, blank=True)
    # Ramp-up: at most `ramp_start` messages on the mailbox's first sending day, `ramp_step` more each day after,
    # up to daily_cap; no ramp when ramp_start is null.
    ramp_start = models.PositiveIntegerField(null=True, blank=True)
    ramp_step = models.PositiveIntegerField(default=0)
    # Sending window: weekdays as "mon,tue,..." (empty = every day), local times.
    window_days = models.CharField(max_length=40, blank=True)
    window_start = models.TimeField(null=True, blank=True)
    window_end = models.TimeField(null=True, blank=True)
    window_timezone = models.CharField(max_length=64, default="UTC")  # an IANA zone, or "recipient"
    # With window_timezone "recipient": the zone of a contact who has none.
    window_fallback_timezone = models.CharField(max_length=64, default="UTC")

    # Transport: "smtp" (above) or "anymail" (an ESP through django-anymail).
    transport_kind = models.CharField(max_length=10, choices=[("smtp", "SMTP"), ("anymail", "ESP (anymail)")],
                                      default="smtp")
    esp_name = models.CharField(max_length=40, blank=True)  # e.g. "sendgrid", "brevo"
    esp_api_key_env = models.CharField(max_length=100, blank=True)
    # Ignored: an ESP's API URL is fixed (mailboxes.transports.esp.API_URLS) or set in settings, never per mailbox.
    esp_api_url = models.CharField(max_length=255, blank=True)
    # Hand messages to the ESP at most this many minutes before their send time
    # (0: keep scheduling in our own queue and hand off at send time).
    esp_schedule_ahead_minutes = models.PositiveIntegerField(default=0)

    # How SMTP and IMAP log in: a password (smtp/imap_password_env) or OAuth2, whose access tokens are
    # refreshed from these settings and kept in process memory only (mailboxes.oauth2), never here.
    auth = models.CharField(max_length=10, choices=Auth.choices, default=Auth.PASSWORD)
    oauth2_provider = models.CharField(max_length=20, blank=True)  # a preset: "google" | "microsoft"
    oauth2_token_url = models.CharField(max_length=500, blank=True)  # empty: the preset's
    oauth2_client_id = models.CharField(max_length=255, blank=True)
    oauth2_client_secret_env = models.CharField(max_length=100, blank=True)
    oauth2_refresh_token_env = models.CharField(max_length=100, blank=True)
    oauth2_client_secret_sealed = models.TextField(blank=True, editable=False)
    oauth2_refresh_token_sealed = models.TextField(blank=True, editable=False)
    # A provider of the browser's sign-in ("generic"): where its consent page and the signed-in identity are.
    oauth2_authorize_url = models.CharField(max_length=500, blank=True)
    oauth2_userinfo_url = models.CharField(max_length=500, blank=True)
    oauth2_scope = models.CharField(max_length=500, blank=True)  # empty: the preset's

    paused = models.BooleanField(default=False)  # by an operator
    # Health (sequences.states, the mailbox-health machine): blocked when the mailbox as a whole cannot
    # send (authentication, TLS, sender policy, a server that stays unreachable). Jobs wait; one probe
    # at a growing interval, or an operator's check, unblocks it.
    blocked_at = models.DateTimeField(null=True, blank=True)
    blocked_reason = models.TextField(blank=True)  # the server's words and a hint, never a secret
    blocked_probes = models.PositiveIntegerField(default=0)  # failed probes since blocked_at
    next_probe_at = models.DateTimeField(null=True, blank=True)
    connect_failures = models.PositiveIntegerField(default=0)  # in a row; reset by a submission
    ca_file = models.CharField(max_length=500, blank=True)  # a private CA (PEM) trusted for SMTP and IMAP TLS
    # Deliverability guardrail (sequences.services.guardrails): over a rolling window, a hard-bounce rate or a
    # complaint rate at or above its limit, with at least the minimum sample, pauses the mailbox.
    guardrail_window_days = models.PositiveIntegerField(default=7)
    guardrail_bounce_rate = models.FloatField(default=3.0)  # percent of sends
    guardrail_bounce_min_sends = models.PositiveIntegerField(default=50)
    guardrail_complaint_rate = models.FloatField(default=0.1)  # percent of deliveries
    guardrail_complaint_min_deliveries = models.PositiveIntegerField(default=1000)
    guardrail_silence_seconds = models.PositiveIntegerField(default=86400)  # after an operator's resume
    guardrail_paused_at = models.DateTimeField(null=True, blank=True)  # the pause was the guardrail's
    guardrail_reason = models.TextField(blank=True)  # the figures, in words
    guardrail_silenced_until = models.DateTimeField(null=True, blank=True)
    # Refusals that name authentication or a blocklist (550 5.7.26, 5.7.515, 5.7.1 "blocked"): a rate of sends
    # at or above this, with at least the minimum sample, pauses the mailbox like hard bounces do.
    guardrail_refusal_rate = models.FloatField(default=2.0)  # percent of sends
    guardrail_refusal_min_sends = models.PositiveIntegerField(default=20)
    # Domain authentication (mailboxes.domain_auth, sequences.services.domain_auth): the DKIM selector the
    # provider signs with, and what the last check of SPF, DKIM and DMARC found. A check that keeps failing
    # for OUTREACH_DOMAIN_AUTH_GRACE_HOURS pauses the mailbox; "could not check" neither starts nor ends that.
    dkim_selector = models.CharField(max_length=63, blank=True)
    auth_checked_at = models.DateTimeField(null=True, blank=True)
    auth_verdict = models.CharField(max_length=10, blank=True)  # pass | fail | unknown | reserved ("" never checked)
    auth_summary = models.TextField(blank=True)  # one line per record, in words
    auth_failing_since = models.DateTimeField(null=True, blank=True)
    # Only a mailbox marked as a drill target may be used by `manage.py drill`.
    is_drill_target = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=1)

    # IMAP side (reply ingestion); empty host = not polled.
    imap_host = models.CharField(max_length=255, blank=True)
    imap_port = models.PositiveIntegerField(default=993)  # IMAP over TLS by default
    imap_username = models.CharField(max_length=255, blank=True)
    imap_password_env = models.CharField(max_length=100, blank=True)
    imap_password_sealed = models.TextField(blank=True, editable=False)
    imap_security = models.CharField(max_length=10, choices=Security.choices, default=Security.TLS)
    imap_folders = models.JSONField(default=list, blank=True)
    # The reply view (`sequences.services.reply_view`): a follow-up is authorized only while every reply folder
    # has been read through a time within this many seconds of the final check (None: the setting's
    # OUTREACH_REPLY_VIEW_MAX_AGE). A mailbox that reads no replies sends follow-ups only when this says so.
    reply_view_max_age = models.PositiveIntegerField(null=True, blank=True)
    follow_ups_without_reply_view = models.BooleanField(default=False)
    # A copy of each message handed off, appended to the IMAP Sent folder with \Seen after the hand-off is recorded,
    # by a job of its own that never delays the send (sequences.sent_copies). The last copy that failed for good
    # (or is waiting for its next try), in words; cleared by the next copy saved.
    save_to_sent = models.CharField(max_length=10, choices=SaveToSent.choices, default=SaveToSent.AUTO,
                                    help_text="copy each message sent to the IMAP Sent folder")
    sent_copy_failed_at = models.DateTimeField(null=True, blank=True)
    sent_copy_error = models.TextField(blank=True)

    # Health of the poller, shown to operators.
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_poll_ok_at = models.DateTimeField(null=True, blank=True)
    last_poll_error = models.TextField(blank=True)
    poll_failures = models.PositiveIntegerField(default=0)
    # IMAP logins the server refused in a row, and when the next one may be tried (the probe ladder,
    # OUTREACH_PROBE_INTERVALS): one attempt per interval, never a burst a provider would lock the account for.
    imap_login_refusals = models.PositiveIntegerField(default=0)
    imap_next_login_at = models.DateTimeField(null=True, blank=True)
    # The server refused the mailbox's IMAP credentials, on any connection (a poll, the IDLE watcher, a check):
    # since when (the first refusal since a login was last accepted) and its words. Set until a login is accepted;
    # a save that resets the ladder above leaves them. While set, the reply view is not trusted (follow-ups held),
    # however an IDLE session logged in before the change still reads. Written by sequences.services.imap_login.
    imap_login_refused_at = models.DateTimeField(null=True, blank=True)
    imap_login_refused_error = models.TextField(blank=True)
    # When the reply view went blind (stale, or never read), for the episode in progress; null while it sees.
    # Written with the episode's timeline event (sequences.services.reply_view_episodes), never elsewhere.
    reply_view_blind_since = models.DateTimeField(null=True, blank=True)
    # Where each secret may go (mailboxes.bound): secret -> the endpoint in force when it was set, in words.
    # Written when a secret is set, never from a form's field: a changed host does not carry a secret along.
    secret_endpoints = models.JSONField(default=dict, blank=True, editable=False)

    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("workspace")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "mailboxes"

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        """A secret set or replaced through save() (a new row, the admin, a configuration file) is bound to the
        settings it is saved with; one left as it was keeps the endpoint it was entered for."""
        now = bound.sources(self)
        if replaced := bound.replaced(getattr(self, "_secrets_loaded", None), now):
            for which in replaced:
                bound.bind(self, which)
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "secret_endpoints"}
        super().save(*args, **kwargs)
        self._secrets_loaded = now

    @classmethod
    def from_db(cls, db, field_names, values, *args, **kwargs):
        mailbox = super().from_db(db, field_names, values, *args, **kwargs)
        mailbox._secrets_loaded = bound.sources(mailbox)
        return mailbox

    def refresh_from_db(self, *args, **kwargs):
        super().refresh_from_db(*args, **kwargs)
        self._secrets_loaded = bound.sources(self)

    @property
    def from_header(self) -> str:
        return formataddr((self.display_name, self.address)) if self.display_name else self.address

    @property
    def has_imap(self) -> bool:
        return bool(self.imap_host)

    @property
    def reply_folders(self) -> list[str]:
        """The folders the poller and the watcher read (INBOX unless the configuration names others)."""
        return self.imap_folders or ["INBOX"]

    @property
    def guardrail_silence_text(self) -> str:
        """How long an operator's resume silences the guardrail, in words ("24 hours", "2 days")."""
        seconds = self.guardrail_silence_seconds
        for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
            if seconds >= size and seconds % size == 0:
                n = seconds // size
                return f"{n} {unit}{'' if n == 1 else 's'}"
        return f"{seconds} seconds"

    @property
    def domain_auth_text(self) -> str:
        """The last domain-authentication check in words (the Mailboxes page)."""
        if self.auth_checked_at is None:
            return "not checked yet"
        if self.auth_failing_since is not None:
            return f"failing since {self.auth_failing_since:%Y-%m-%d %H:%M} UTC"
        return {"pass": "SPF, DKIM and DMARC pass", "unknown": "not every record could be checked",
                "reserved": "cannot be checked: a reserved test domain"}.get(
            self.auth_verdict, self.auth_verdict)

    @property
    def sending_status(self) -> str:
        """In words: whether mail leaves this mailbox now."""
        if self.paused:
            return "paused"
        return "blocked" if self.blocked_at else "active"


class ImapCursor(models.Model):
    """Where the poller is in one folder: advanced in the same transaction that records a message."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="cursors")
    folder = models.CharField(max_length=255)
    uidvalidity = models.BigIntegerField(null=True, blank=True)
    last_uid = models.BigIntegerField(default=0)
    highestmodseq = models.BigIntegerField(null=True, blank=True)
    rescans = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(null=True, blank=True)
    # The reply view of this folder, on the database clock. read_through: every message that reached the
    # folder before it has been ingested (a completed poll sets it to when it began; a healthy IDLE watch
    # advances it; a failure freezes it). unread_since: the watcher heard of new mail here then, and no
    # completed poll has read it yet.
    read_through = models.DateTimeField(null=True, blank=True)
    unread_since = models.DateTimeField(null=True, blank=True)
    # Each folder's own health: one failing folder never stops the others.
    last_error = models.TextField(blank=True)
    failures = models.PositiveIntegerField(default=0)  # passes in a row that failed on this folder

    objects = WorkspaceManager("mailbox__workspace")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["mailbox", "folder"], name="imapcursor_unique_folder")]

    def __str__(self) -> str:
        return f"{self.mailbox.name}/{self.folder} uidvalidity={self.uidvalidity} last_uid={self.last_uid}"








class ProviderEvent(models.Model):
    """A tracking webhook event from an ESP, deduplicated by the provider's event id."""

    provider = models.CharField(max_length=40)
    event_id = models.CharField(max_length=255)
    event_type = models.CharField(max_length=40)
    recipient = models.CharField(max_length=320, blank=True)
    provider_message_id = models.CharField(max_length=255, blank=True)
    job = models.ForeignKey("sequences.SendJob", null=True, blank=True, on_delete=models.PROTECT,
                            related_name="provider_events")
    occurred_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(db_default=DbClock())
    effect = models.TextField(blank=True)
    raw = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["provider", "event_id"], name="providerevent_once")]

    def __str__(self) -> str:
        return f"{self.provider} {self.event_type} {self.recipient or self.event_id}"


class RefusalSignal(models.Model):
    """A refusal of one of our messages that names authentication or a blocklist, counted against the mailbox
    that sent it (deliverability guardrail, `sequences.services.guardrails`)."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="refusal_signals")
    job = models.ForeignKey("sequences.SendJob", on_delete=models.CASCADE, related_name="refusal_signals")
    reason = models.CharField(max_length=20)  # "authentication" | "blocklist"
    reply = models.TextField(blank=True)  # the server's words
    at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("mailbox__workspace")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job"], name="refusalsignal_once_per_job")]
        indexes = [models.Index(fields=["mailbox", "at"], name="refusalsignal_window_idx")]

    def __str__(self) -> str:
        return f"{self.reason} refusal of job {self.job_id}"
