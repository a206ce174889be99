"""Sequences, enrollments, send jobs, the suppression ledger and the timeline.

Models hold fields, states and constraints only. Every status field changes
through its state machine in `sequences.states`, called by `sequences.services`.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from db.clock import DbClock
from db.sql import EmailDomain
from workspaces.current import workspace_default
from workspaces.scoping import WorkspaceManager

from .reasons import Reason, StopReason


class Contact(models.Model):
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+",
                                  default=workspace_default, editable=False)
    email = models.EmailField(db_index=True)  # normalized: stripped, lowercased; one contact per workspace
    first_name = models.CharField(max_length=200, blank=True)
    last_name = models.CharField(max_length=200, blank=True)
    company = models.CharField(max_length=200, blank=True)
    fields = models.JSONField(default=dict, blank=True)
    # An IANA zone name; empty: none known (a mailbox that sends in the recipient's zone uses its fallback zone).
    timezone = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("workspace")

    class Meta:
        ordering = ["email"]
        # Ingestion finds the people at a colleague's company by their domain (inbound.ingest.colleague): an
        # index lookup, never a suffix search over every address.
        indexes = [models.Index(EmailDomain("email"), name="contact_email_domain_idx")]
        # The same address may be a contact in two workspaces, each with its own.
        constraints = [models.UniqueConstraint(fields=["workspace", "email"], name="contact_workspace_email_uniq")]

    def __str__(self) -> str:
        return self.email

    @property
    def domain(self) -> str:
        return self.email.rsplit("@", 1)[-1]


CROSSED_NOTE = "Our automatic follow-up crossed your reply — please disregard it."
CROSSED_NOTE_MAX = 2000


class Sequence(models.Model):
    class Status(models.TextChoices):
        # A draft takes enrollments but sends nothing until an operator launches it (draft -> active, once):
        # the dispatcher leaves its jobs alone and the final check holds them.
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"

    class StopOnReply(models.TextChoices):
        # A reply always stops the person in every sequence and mailbox; "domain" also stops every
        # enrollment at the same company domain (never a free-mail domain: sequences.freemail).
        PERSON = "person", "The person, everywhere"
        DOMAIN = "domain", "Everyone at the company's domain"

    class UnsubscribeStyle(models.TextChoices):
        # How each message offers to unsubscribe (sequences.messages). HEADERS: List-Unsubscribe and
        # List-Unsubscribe-Post (RFC 8058 one-click), which Gmail's and Yahoo's bulk-sender rules ask for; Sieve
        # `vacation` and other auto-responders that skip list mail never answer such a message, so no
        # out-of-office hold starts. LINE: no List-* headers, the same link on a plain line at the end of the text.
        HEADERS = "headers", "One-click unsubscribe headers"
        LINE = "line", "A plain unsubscribe line at the end of the text"

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+",
                                  default=workspace_default, editable=False)
    name = models.CharField(max_length=200)  # unique in its workspace (two clients may each have "Onboarding")
    mailbox = models.ForeignKey("mailboxes.Mailbox", on_delete=models.PROTECT, related_name="sequences")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    stop_on_reply = models.CharField(max_length=10, choices=StopOnReply.choices, default=StopOnReply.PERSON)
    unsubscribe_style = models.CharField(max_length=10, choices=UnsubscribeStyle.choices,
                                         default=UnsubscribeStyle.HEADERS)
    # The scheduling page (Calendly, Cal.com) a step links to with `{{ booking_link }}`: this URL with the
    # person's booking token (sequences.booking_token), which the provider's webhook gives back. "" = none.
    booking_url = models.CharField(max_length=500, blank=True)
    # The note the replies page offers, one click, when a follow-up of ours crossed a person's reply
    # (sequences.crossing): sent from the mailbox that received the reply, threaded on it; never automatically.
    crossed_note = models.CharField(max_length=CROSSED_NOTE_MAX, default=CROSSED_NOTE)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(db_default=DbClock())

    # --- mailbox rotation -------------------------------------------------------------------------
    # A pool to send from (TOML `mailboxes = ["a", "b"]`); empty: `mailbox` alone. Each enrollment is
    # given one mailbox of the pool when it is created and keeps it (sequences.services.rotation).
    pool = models.ManyToManyField("mailboxes.Mailbox", blank=True, related_name="pool_sequences")

    objects = WorkspaceManager("workspace")

    class Meta:
        ordering = ["name"]
        # A name finds the sequence within its workspace (a command's `--workspace`, a file's reply rules): two
        # workspaces may each name one the same, and neither learns of the other's.
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="sequence_workspace_name_uniq")]
        permissions = [
            ("operate", "Can pause/resume sequences, enrollments and mailboxes and stop enrollments"),
        ]

    def __str__(self) -> str:
        return self.name


class Step(models.Model):
    sequence = models.ForeignKey(Sequence, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveIntegerField()  # 1-based
    subject = models.TextField()  # Django template
    body = models.TextField()  # Django template
    wait_seconds = models.PositiveIntegerField(default=0)  # after the previous step was submitted
    thread = models.BooleanField(default=True)  # send as a reply in the previous step's thread

    objects = WorkspaceManager("sequence__workspace")

    class Meta:
        ordering = ["sequence", "position"]
        constraints = [
            models.UniqueConstraint(fields=["sequence", "position"], name="step_unique_position"),
            models.CheckConstraint(condition=Q(position__gte=1), name="step_position_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.sequence.name} #{self.position}"


class StepVariant(models.Model):
    """One version of a step's text in an A/B test. A step with variants sends theirs, never its own text.

    Each job of the step carries the variant it was given when it was created (`sequences.variants`), by
    weight among the variants not stopped. An operator's stop (`stopped_at`) is read by the final check with
    the job itself: a job of a stopped variant is refused and its step given to a remaining variant.
    """

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="variants")
    name = models.CharField(max_length=40)  # "A", "B", "short subject"
    subject = models.TextField(blank=True)  # Django template, as a step's
    body = models.TextField()  # Django template
    weight = models.PositiveIntegerField(default=1)  # share of the people, against the other running variants
    stopped_at = models.DateTimeField(null=True, blank=True)
    stopped_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("step__sequence__workspace")

    class Meta:
        ordering = ["step", "id"]
        constraints = [
            models.UniqueConstraint(fields=["step", "name"], name="stepvariant_unique_name"),
            models.CheckConstraint(condition=Q(weight__gte=1), name="stepvariant_weight_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.step} variant {self.name}"


class Enrollment(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        STOPPED = "stopped", "Stopped"
        COMPLETED = "completed", "Completed"

    StopReason = StopReason  # the reasons a person stops: sequences.reasons

    # No index of its own: enrollment_once_per_sequence (and, on PostgreSQL, enrollment_sequence_status_idx)
    # lead with it, and every index is written again by each move of an enrollment.
    sequence = models.ForeignKey(Sequence, on_delete=models.PROTECT, related_name="enrollments", db_index=False)
    contact = models.ForeignKey(Contact, on_delete=models.PROTECT, related_name="enrollments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    stop_reason = models.CharField(max_length=20, choices=StopReason.choices, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(db_default=DbClock())

    # --- mailbox rotation -------------------------------------------------------------------------
    # The mailbox every message of this enrollment leaves from, chosen once at enrollment (threads and
    # replies stay together). Empty only for rows written without the services: the sequence's mailbox.
    # Read it through sequences.services.rotation, never through sequence.mailbox.
    mailbox = models.ForeignKey("mailboxes.Mailbox", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="enrollments")

    objects = WorkspaceManager("sequence__workspace")

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["sequence", "contact"], name="enrollment_once_per_sequence"),
            models.CheckConstraint(
                condition=Q(status="stopped", stop_reason__gt="") | ~Q(status="stopped"),
                name="enrollment_stopped_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.contact.email} in {self.sequence.name}"


class ProviderCancel(models.TextChoices):
    """What a provider was asked about a message it holds for later delivery, and what it answered."""

    REQUESTED = "requested", "requested"
    CONFIRMED = "confirmed", "confirmed"
    REFUSED = "refused", "refused"  # past cancelable_until
    FAILED = "failed", "failed"  # provider error


MAILBOX_BLOCKED = "mailbox blocked: "  # the error of a job waiting for its mailbox; cleared when it is unblocked
# The jobs waiting for their mailbox: a partial index has this same condition, so the results count them cheaply.
HELD_BY_MAILBOX = Q(state="scheduled", error__startswith=MAILBOX_BLOCKED)


class SendJob(models.Model):
    class State(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"
        QUEUED = "queued", "Queued"
        CLAIMED = "claimed", "Claimed"
        AUTHORIZED = "authorized", "Authorized"
        SUBMITTED = "submitted", "Submitted"
        ACCEPTED = "accepted", "Accepted"
        CANCELED = "canceled", "Canceled"
        FAILED = "failed", "Failed"
        UNKNOWN = "unknown", "Outcome unknown"

    enrollment = models.ForeignKey(Enrollment, on_delete=models.PROTECT, related_name="jobs")
    # No index of its own: sendjob_step_state_idx leads with the step (each index is written by every new job).
    step = models.ForeignKey(Step, on_delete=models.PROTECT, related_name="jobs", db_index=False)
    # The A/B variant of the step this job sends, chosen when the job was created; null: the step's own text.
    # No index of its own (each one is written again by every move of a job): the reads by variant go through
    # the step's index first (`sequences.variants`).
    variant = models.ForeignKey(StepVariant, null=True, blank=True, on_delete=models.PROTECT, related_name="jobs",
                                db_index=False)
    state = models.CharField(max_length=12, choices=State.choices, default=State.SCHEDULED)
    version = models.PositiveIntegerField(default=1)

    scheduled_at = models.DateTimeField()  # when it may be sent (after backoff for retries)
    queued_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    authorized_at = models.DateTimeField(null=True, blank=True)  # the final check's commit
    submitted_at = models.DateTimeField(null=True, blank=True)
    canceled_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)  # failed / unknown

    worker_id = models.CharField(max_length=200, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    message_id = models.CharField(max_length=255, unique=True)  # ours, generated before sending
    smtp_reply = models.TextField(blank=True)
    provider_message_id = models.CharField(max_length=255, blank=True, db_index=True)
    provider_request_id = models.CharField(max_length=255, blank=True)
    cancel_reason = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)

    # Scheduled send at a provider: the boundary moves to the provider, which
    # may still cancel until `cancelable_until`.
    provider_send_at = models.DateTimeField(null=True, blank=True)
    provider_schedule_id = models.CharField(max_length=255, blank=True)
    cancelable_until = models.DateTimeField(null=True, blank=True)
    provider_cancel_status = models.CharField(max_length=10, blank=True, choices=ProviderCancel.choices)
    provider_cancel_detail = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    objects = WorkspaceManager("step__sequence__workspace")

    class Meta:
        ordering = ["scheduled_at", "id"]
        constraints = [
            # One live job per step. Canceled jobs, and jobs a provider confirmed it canceled before
            # their send time, and failed jobs an operator retried, stay as history; a resume or a retry
            # schedules a new one.
            models.UniqueConstraint(
                fields=["enrollment", "step"],
                condition=~Q(state__in=["canceled", "failed"]) & ~Q(provider_cancel_status="confirmed"),
                name="sendjob_once_per_step",
            ),
            models.CheckConstraint(
                condition=Q(state="canceled", cancel_reason__gt="") | ~Q(state="canceled"),
                name="sendjob_canceled_has_reason",
            ),
        ]
        indexes = [
            models.Index(
                fields=["scheduled_at"], name="sendjob_due_idx", condition=Q(state="scheduled")
            ),
            # The deliverability guardrail counts a mailbox's sends over its rolling window.
            models.Index(fields=["authorized_at"], name="sendjob_authorized_idx",
                         condition=Q(authorized_at__isnull=False)),
            models.Index(fields=["state", "lease_until"], name="sendjob_state_lease_idx"),
            # The results count a step's jobs by state (and find each person's last step) from this index alone.
            models.Index(fields=["step", "state", "provider_cancel_status", "enrollment"],
                         name="sendjob_step_state_idx"),
            models.Index(fields=["step"], name="sendjob_held_by_mailbox_idx", condition=HELD_BY_MAILBOX),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} ({self.state})"


class DailySendCount(models.Model):
    """How many of a mailbox's messages passed the final check on one calendar day of its window's time zone.

    Kept by the final check itself (`sequences.services.sending`): the authorize
    transaction takes a slot with one conditional upsert that never lets `sent`
    pass the mailbox's daily_cap, and a job that goes back from authorized to
    scheduled (a retry, a held message) gives its slot back. Counted, never
    recounted from the jobs: the cap costs one row, however many jobs exist.
    """

    # No index of its own: dailysendcount_once_per_day leads with it.
    mailbox = models.ForeignKey("mailboxes.Mailbox", on_delete=models.CASCADE, related_name="daily_counts",
                                db_index=False)
    day = models.DateField()  # in the mailbox's window_timezone
    sent = models.PositiveIntegerField(default=0)

    objects = WorkspaceManager("mailbox__workspace")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["mailbox", "day"], name="dailysendcount_once_per_day")]

    def __str__(self) -> str:
        return f"{self.mailbox_id} {self.day}: {self.sent}"


class Suppression(models.Model):
    """Append-only ledger. The latest entry for a value decides; lifting is a new entry."""

    class Action(models.TextChoices):
        ADD = "add", "Suppressed"
        LIFT = "lift", "Lifted"

    class Reason(models.TextChoices):
        UNSUBSCRIBE = "unsubscribe", "Unsubscribe"
        COMPLAINT = "complaint", "Complaint"
        HARD_BOUNCE = "hard_bounce", "Hard bounce"
        SOFT_BOUNCES = "soft_bounces", "Repeated soft bounces"
        MANUAL = "manual", "Manual"
        # A reply that may ask to stop, read without certainty: suppressed until an operator confirms (a new
        # UNSUBSCRIBE entry) or lifts it (Replies → Needs review). Suppresses like any other reason meanwhile.
        POSSIBLE_OPTOUT = "possible_optout", "Possible opt-out (needs review)"

    value = models.CharField(max_length=320, db_index=True)  # "addr@example.com" or "@example.com"
    is_domain = models.BooleanField(default=False)
    action = models.CharField(max_length=4, choices=Action.choices)
    reason = models.CharField(max_length=20, choices=Reason.choices, blank=True)
    note = models.TextField(blank=True)
    # "inbound:42", "operator", "command", "unsubscribe-link:job 7"
    source = models.CharField(max_length=200, blank=True)
    actor = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(db_default=DbClock())

    # The ledger's part: a workspace's, or None: the agency's, which holds every workspace (sequences.selectors).
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+", null=True,
                                  blank=True, editable=False)

    objects = WorkspaceManager("workspace", shared=True)

    class Meta:
        ordering = ["-id"]
        permissions = [("manage_suppressions", "Can add, lift, import and export suppressions")]
        constraints = [
            models.CheckConstraint(
                condition=Q(action="lift") | Q(action="add", reason__gt=""), name="suppression_add_has_reason"
            ),
            models.CheckConstraint(condition=Q(action="add") | Q(note__gt=""), name="suppression_lift_has_note"),
        ]

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.value}"


# The reasons a person gives (the pages, the API, the command, a CSV import): a provisional opt-out is ingestion's
# alone, decided under Replies → Needs review.
GIVEN_REASONS = tuple(r.value for r in Suppression.Reason if r != Suppression.Reason.POSSIBLE_OPTOUT)
GIVEN_REASON_CHOICES = [(value, label) for value, label in Suppression.Reason.choices if value in GIVEN_REASONS]




class ErasedAddress(models.Model):
    """The hashed ledger: an erased person's normalized address as a keyed hash (HMAC-SHA256), never the address.

    Suppresses like a ledger entry that is never lifted: the import and the final check refuse the address. Like
    the suppression ledger it has a part per workspace (a person erased by one client) and the agency's part
    (`workspace` None: erased everywhere, as every erasure was before workspaces).
    """

    workspace = models.ForeignKey("workspaces.Workspace", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="+")
    digest = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("workspace", shared=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "digest"], name="erasedaddress_once"),
            # NULL never equals NULL in a unique index: the agency's part has its own.
            models.UniqueConstraint(fields=["digest"], condition=models.Q(workspace__isnull=True),
                                    name="erasedaddress_once_everywhere"),
        ]

    def __str__(self) -> str:
        return f"erased address {self.digest[:12]}…"


class GuardrailSignal(models.Model):
    """A hard bounce or complaint counted against the mailbox that sent the message (deliverability guardrail)."""

    class Kind(models.TextChoices):
        HARD_BOUNCE = "hard_bounce", "Hard bounce"
        COMPLAINT = "complaint", "Complaint"

    mailbox = models.ForeignKey("mailboxes.Mailbox", on_delete=models.CASCADE, related_name="guardrail_signals")
    job = models.ForeignKey(SendJob, on_delete=models.PROTECT, related_name="guardrail_signals")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("mailbox__workspace")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "kind"], name="guardrailsignal_once_per_job")]
        indexes = [models.Index(fields=["mailbox", "kind", "at"], name="guardrailsignal_window_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of job {self.job_id}"


# The timeline's kinds that a page finds by kind alone, not through a job, an enrollment or an address
# (ui.rows.enrollment_events): an operator's pause or resume of a sequence or a mailbox, and the
# ledger's entries. Only these are in the kind index; every other event (a send writes four) skips it.
KINDS_FOUND_BY_KIND = ("sequence_paused", "sequence_resumed", "mailbox_paused", "mailbox_resumed",
                       "suppression_added", "suppression_lifted")
# Two rare kinds of event the results count among millions (ui/results.py). Each has a partial index
# whose condition is this same expression, so the database can see that the index serves the query.
FINAL_CHECK_CANCEL = Q(kind="job_canceled", data__final_check=True)  # the last check before the hand-off canceled
HOLD = Q(kind="job_held_out_of_office") | Q(kind="job_deferred", data__reason=Reason.REPLY_VIEW)  # a job held, not late


class TimelineEvent(models.Model):
    """One row per transition, written in the transition's own transaction."""

    at = models.DateTimeField(db_default=DbClock(), db_index=True)
    kind = models.CharField(max_length=40)
    email = models.CharField(max_length=320, blank=True, db_index=True)
    enrollment = models.ForeignKey(Enrollment, null=True, blank=True, on_delete=models.PROTECT, related_name="events")
    job = models.ForeignKey(SendJob, null=True, blank=True, on_delete=models.PROTECT, related_name="events")
    version_seen = models.PositiveIntegerField(null=True, blank=True)
    worker_id = models.CharField(max_length=200, blank=True)
    data = models.JSONField(default=dict, blank=True)

    # The workspace it was written in (None: by background work outside any; seen while the install has one).
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+", null=True,
                                  blank=True, editable=False)
    objects = WorkspaceManager("enrollment__sequence__workspace", unowned="workspace")

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["kind"], name="timelineevent_kind_found_idx",
                         condition=Q(kind__in=KINDS_FOUND_BY_KIND)),
            models.Index(fields=["job"], name="timelineevent_final_check_idx", condition=FINAL_CHECK_CANCEL),
            models.Index(fields=["job", "at"], name="timelineevent_hold_idx", condition=HOLD),
        ]

    def __str__(self) -> str:
        return f"{self.at} {self.kind}"


class OperatorAction(models.Model):
    """The operator log: who did what, to what, and what came of it."""

    class TargetKind(models.TextChoices):
        ENROLLMENT = "enrollment", "Enrollment"
        SEQUENCE = "sequence", "Sequence"
        MAILBOX = "mailbox", "Mailbox"
        SUPPRESSION = "suppression", "Suppression"

    at = models.DateTimeField(db_default=DbClock())
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=60)
    target = models.CharField(max_length=400)  # in words, for people
    target_kind = models.CharField(max_length=12, choices=TargetKind.choices, blank=True)
    target_id = models.PositiveIntegerField(null=True, blank=True)  # the row, for links (suppressions: none)
    result = models.JSONField(default=dict, blank=True)

    # The workspace it was written in (None: by background work outside any; seen while the install has one).
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+", null=True,
                                  blank=True, editable=False)
    objects = WorkspaceManager("workspace")

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.actor}: {self.action} {self.target}"




class DashboardCounts(models.Model):
    """The dashboard's numbers over all time as last counted: one row per workspace (ui/dashboard_counts.py)."""

    workspace = models.OneToOneField("workspaces.Workspace", null=True, on_delete=models.CASCADE, related_name="+")
    counted_at = models.DateTimeField()
    numbers = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"dashboard counted at {self.counted_at}"
