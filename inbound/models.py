"""Mail that comes in: the inbound ledger (every message read, once, with what it was and what it did), the
evidence that a colleague's mail answers a person (`ReplyMatch`), the data-protection requests read in replies,
the IDLE watchers' leases; the replies inbox: one conversation per person and sequence, its replies, and our
answers from the app; and the ESP tracking-webhook batches too large to apply inside the request.

The ledger, the matches, the requests and the leases keep the tables they were created with in `mailboxes` and
`sequences` (`db_table`): moving them here changed no table.

A `Conversation` is created by ingestion, in the inbound message's own transaction, when a reply that correlates
to a message we sent is recorded (a human reply, an out-of-office auto-reply, an unsubscribe request); its replies
are the enrollment's inbound messages of those kinds. Mail that names nothing we sent never makes one. Its
`category` is what the pages filter on: the operator's choice when there is one (`chosen`), the classifier's
suggestion otherwise; both are kept, so a page can say which decided.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from db.clock import DbClock
from mailboxes.models import Mailbox
from sequences.models import Enrollment, SendJob
from workspaces.scoping import WorkspaceManager

from .kinds import LABELS, Category, Kind

CATEGORY_CHOICES = [(c.value, LABELS[c]) for c in Category]


class Conversation(models.Model):
    """Every reply of one person to one enrollment (a person in a sequence), and what the operator made of it."""

    # Its key is the enrollment's: ingestion knows it without a read (an UPDATE by key, or an INSERT).
    enrollment = models.OneToOneField("sequences.Enrollment", on_delete=models.PROTECT, related_name="conversation",
                                      primary_key=True)
    contact = models.ForeignKey("sequences.Contact", on_delete=models.PROTECT, related_name="conversations",
                                db_index=False)  # contact_id_idx below leads with it
    sequence = models.ForeignKey("sequences.Sequence", on_delete=models.PROTECT, related_name="conversations",
                                 db_index=False)
    # The mailbox that received the latest reply: the one an answer leaves from.
    mailbox = models.ForeignKey("mailboxes.Mailbox", on_delete=models.PROTECT, related_name="conversations",
                                db_index=False)
    # None: no reply yet, the person booked a meeting without one (meetings); nothing to answer then.
    latest = models.ForeignKey("InboundMessage", on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    last_reply_at = models.DateTimeField()  # committed, database clock (db.clock.db_clock_written): the page's order
    replies = models.PositiveIntegerField(default=1)

    # The classifier's suggestion for the latest reply: its category, the words that decided, how sure.
    suggested = models.CharField(max_length=20, choices=CATEGORY_CHOICES, default=Category.OTHER.value)
    suggested_phrase = models.CharField(max_length=300, blank=True)
    suggested_confidence = models.FloatField(default=0.0)
    suggested_language = models.CharField(max_length=8, blank=True)
    # The operator's category; wins when set ("" = none chosen).
    chosen = models.CharField(max_length=20, choices=CATEGORY_CHOICES, blank=True)
    chosen_by = models.CharField(max_length=200, blank=True)
    chosen_at = models.DateTimeField(null=True, blank=True)
    # chosen or suggested: kept in step by inbound.replies.services, so a filter reads one indexed column.
    category = models.CharField(max_length=20, choices=CATEGORY_CHOICES, default=Category.OTHER.value)

    assigned_to = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+", db_index=False)
    handled = models.BooleanField(default=False)
    handled_by = models.CharField(max_length=200, blank=True)
    handled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("sequence__workspace")

    class Meta:
        ordering = ["-last_reply_at", "-enrollment"]
        # Every listing is newest first and pages by (last_reply_at, id): each filter has an index that
        # leads with it and ends in that order, so a page is an index range scan at any size.
        indexes = [
            models.Index(fields=["-last_reply_at", "-enrollment"], name="conv_newest_idx"),
            models.Index(fields=["-last_reply_at", "-enrollment"], name="conv_unhandled_idx",
                         condition=Q(handled=False)),
            models.Index(fields=["category", "-last_reply_at", "-enrollment"], name="conv_category_idx"),
            models.Index(fields=["mailbox", "-last_reply_at", "-enrollment"], name="conv_mailbox_idx"),
            models.Index(fields=["sequence", "-last_reply_at", "-enrollment"], name="conv_sequence_idx"),
            models.Index(fields=["assigned_to", "-last_reply_at", "-enrollment"], name="conv_assigned_idx"),
            models.Index(fields=["contact"], name="conv_contact_idx"),
        ]

    def __str__(self) -> str:
        return f"conversation {self.pk} ({self.category})"

    @property
    def category_label(self) -> str:
        return LABELS[Category(self.category)]

    @property
    def suggested_label(self) -> str:
        return LABELS[Category(self.suggested)]


class Answer(models.Model):
    """An operator's answer to a conversation, sent from the mailbox that received the reply.

    `state` says honestly what became of it: `sending` between the hand-off's start and its record, then
    `submitted` (the server took it), `failed` (refused: never sent) or `unknown` (the connection broke after the
    message data was on its way: it may have been delivered; never resent automatically).
    """

    class State(models.TextChoices):
        SENDING = "sending", "Sending"
        SUBMITTED = "submitted", "Sent"
        FAILED = "failed", "Failed — not sent"
        UNKNOWN = "unknown", "Outcome unknown — may have been sent"

    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="answers")
    mailbox = models.ForeignKey("mailboxes.Mailbox", on_delete=models.PROTECT, related_name="+")
    in_reply_to = models.ForeignKey("InboundMessage", on_delete=models.PROTECT, related_name="+")
    author = models.CharField(max_length=200)  # the operator's user name
    author_name = models.CharField(max_length=200, blank=True)  # the signature's name
    recipient = models.CharField(max_length=320)
    subject = models.TextField()
    body = models.TextField()
    message_id = models.CharField(max_length=255, unique=True)
    references = models.TextField(blank=True)
    confirmed_suppressed = models.BooleanField(default=False)  # the person was suppressed; the operator confirmed
    state = models.CharField(max_length=10, choices=State.choices, default=State.SENDING)
    server_reply = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(db_default=DbClock())
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = WorkspaceManager("mailbox__workspace")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"answer {self.pk} ({self.state})"


class WebhookBatch(models.Model):
    """An ESP's tracking-webhook batch kept as received, applied in the background a chunk at a time.

    The row is the record of truth and Redis only carries its id (`inbound.webhooks`): the request stores the body
    and answers; each RQ job applies the next chunk from `applied` and moves `applied` past it. An event is applied
    once whatever happens to the jobs, because the provider-event ledger records each (provider, event id) once:
    a chunk applied again after a lost worker finds its events recorded and changes nothing. `touched_at` is the
    last sign of life (stored, a chunk recorded, enqueued again); an unfinished batch quiet for longer is enqueued
    again by the periodic resume pass. The body is emptied when the last chunk is recorded.
    """

    provider = models.CharField(max_length=40)  # anymail's ESP name, lower case ("sendgrid")
    digest = models.CharField(max_length=64)  # SHA-256 of the body: the ESP's re-delivery of the batch is this row
    body = models.TextField()  # the JSON array of events, as received
    events = models.PositiveIntegerField()
    applied = models.PositiveIntegerField(default=0)  # events [0, applied) are recorded in the ledger
    resumes = models.PositiveSmallIntegerField(default=0)  # times enqueued again since the last chunk was recorded
    received_at = models.DateTimeField(db_default=DbClock())
    touched_at = models.DateTimeField()  # database clock (db.clock.db_clock_written)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "digest"], name="webhookbatch_once"),
            models.CheckConstraint(condition=Q(applied__lte=F("events")), name="webhookbatch_applied_within"),
        ]
        indexes = [models.Index(fields=["touched_at"], name="webhookbatch_unfinished_idx",
                                condition=Q(finished_at__isnull=True))]

    def __str__(self) -> str:
        return f"{self.provider} batch {self.pk} ({self.applied}/{self.events})"


class ReplyLabel(models.Model):
    """A person's reply labelled by an operator: a relabel on the conversation page, or a decision under Needs
    review (confirmed opt-out: unsubscribe; lifted: what the operator said it is). ``manage.py
    export_reply_labels`` writes them in the labelled corpus's format, so an install scores and retrains on its
    own mail. The text is the inbound message's: erasing the person blanks it, and its labels export nothing."""

    class Origin(models.TextChoices):
        RELABEL = "relabel", "Category chosen on the conversation"
        REVIEW = "review", "Needs-review decision"

    inbound = models.ForeignKey("InboundMessage", on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=20, choices=CATEGORY_CHOICES)
    suggested = models.CharField(max_length=20, choices=CATEGORY_CHOICES, blank=True)  # what was suggested then
    origin = models.CharField(max_length=10, choices=Origin.choices)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(db_default=DbClock())

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.get_origin_display()}: {self.category} (inbound {self.inbound_id})"


class InboundMessage(models.Model):
    """The inbound ledger: every fetched message, recorded once, with what it was and what it did."""

    Kind = Kind  # the inbound kinds live in inbound.kinds, shared with the classifier

    class Rule(models.TextChoices):
        IN_REPLY_TO = "in_reply_to", "In-Reply-To names our Message-ID"
        REFERENCES = "references", "References names our Message-ID"
        EMBEDDED = "embedded_headers", "Original headers inside the DSN/ARF"
        RECIPIENT = "report_recipient", "Failed or complained-about recipient named in the report"
        SENDER = "sender_address", "Sender is an address this mailbox sent to (weaker)"
        QUOTED_TEXT = "quoted_text", "A colleague at the person's company answers or quotes what we sent"
        NO_EVIDENCE = "no_evidence", "No evidence we sent to it"
        NONE = "none", "Not correlated"

    class Content(models.TextChoices):
        # Correlated to something we sent: kept to act and explain, until the retention period ends.
        FULL = "full", "Stored"
        # Anything else, machine mail (DSN, ARF, auto-reply) included: mailbox, folder, UID, Message-ID,
        # INTERNALDATE, size, kind, status codes and what it did only.
        METADATA = "metadata", "Not stored: unrelated to anything we sent"
        # Content (raw source, subject, sender's name, headers, reply text) removed after
        # OUTREACH_INBOUND_RETENTION_DAYS; the row, its kind, correlation, codes and effect stay.
        PURGED = "purged", "Content removed after the retention period"

    # No index of its own: inbound_once_per_uid leads with it (each index is written for every message read).
    mailbox = models.ForeignKey(Mailbox, on_delete=models.PROTECT, related_name="inbound", db_index=False)
    folder = models.CharField(max_length=255)
    uidvalidity = models.BigIntegerField()
    uid = models.BigIntegerField()
    message_id = models.CharField(max_length=998, blank=True, db_index=True)
    internaldate = models.DateTimeField(null=True, blank=True)  # reply received (IMAP INTERNALDATE)
    committed_at = models.DateTimeField(db_default=DbClock())  # reply committed (database clock)
    from_address = models.CharField(max_length=320, blank=True, db_index=True)
    from_name = models.CharField(max_length=400, blank=True)
    subject = models.TextField(blank=True)
    headers = models.JSONField(default=dict, blank=True)  # key headers, decoded
    size = models.PositiveIntegerField(default=0)

    kind = models.CharField(max_length=24, choices=Kind.choices)
    bounce_type = models.CharField(max_length=4, blank=True)
    recipients = models.JSONField(default=list, blank=True)
    status_codes = models.JSONField(default=list, blank=True)
    classification_reason = models.TextField(blank=True)
    reply_text = models.TextField(blank=True)

    correlation_rule = models.CharField(max_length=20, choices=Rule.choices, default=Rule.NONE)
    job = models.ForeignKey(SendJob, null=True, blank=True, on_delete=models.PROTECT,
                            related_name="inbound")
    enrollment = models.ForeignKey(Enrollment, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="inbound")
    effect = models.TextField(blank=True)  # what ingestion did, in words
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="copies")

    raw = models.BinaryField(blank=True)  # kept up to OUTREACH_INBOUND_RAW_LIMIT bytes
    raw_truncated = models.BooleanField(default=False)
    content = models.CharField(max_length=10, choices=Content.choices, default=Content.FULL)
    raw_purged_at = models.DateTimeField(null=True, blank=True)
    parse_error = models.TextField(blank=True)

    objects = WorkspaceManager("mailbox__workspace")

    class Meta:
        db_table = "mailboxes_inboundmessage"  # the table it had in mailboxes
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["mailbox", "folder", "uidvalidity", "uid"], name="inbound_once_per_uid"),
            # The same mail in two folders, or seen again after a rescan, acts once.
            models.UniqueConstraint(
                fields=["mailbox", "message_id"],
                condition=models.Q(duplicate_of__isnull=True) & ~models.Q(message_id=""),
                name="inbound_acts_once_per_message_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} from {self.from_address or '?'}"



class ReplyMatch(models.Model):
    """A mail from someone at a person's company, without our thread headers, that answers a message we sent
    to that person by its subject or its quoted text (inbound rule `quoted_text`): the evidence, and what came
    of it. One row per person it may answer, written in the inbound message's own transaction.

    `stopped` when it fits one person beyond doubt (the person was stopped then); `probable` when an operator
    must decide (the same text sent to several people there, a subject with no quote), until they stop the
    person (`operator_stopped`) or dismiss it.
    """

    class Status(models.TextChoices):
        STOPPED = "stopped", "Stopped on receipt"
        PROBABLE = "probable", "Probable reply: an operator decides"
        OPERATOR_STOPPED = "operator_stopped", "Stopped by an operator"
        DISMISSED = "dismissed", "Dismissed by an operator"

    inbound = models.ForeignKey("InboundMessage", on_delete=models.PROTECT, related_name="reply_matches")
    job = models.ForeignKey(SendJob, on_delete=models.PROTECT, related_name="reply_matches")  # what it answers
    enrollment = models.ForeignKey(Enrollment, on_delete=models.PROTECT, related_name="reply_matches")
    replier = models.CharField(max_length=320)  # who wrote it (not the person we mailed)
    subject_match = models.BooleanField(default=False)
    quoted_share = models.FloatField(default=0.0)  # of our message's words found quoted, 0..1
    quoted_chars = models.PositiveIntegerField(default=0)
    why = models.TextField(blank=True)  # the verdict, in words
    status = models.CharField(max_length=16, choices=Status.choices)
    created_at = models.DateTimeField(db_default=DbClock())
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)

    objects = WorkspaceManager("enrollment__sequence__workspace")

    class Meta:
        db_table = "sequences_replymatch"  # the table it had in sequences
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["inbound", "enrollment"], name="replymatch_once_per_person"),
        ]
        indexes = [models.Index(fields=["created_at"], name="replymatch_probable_idx",
                                condition=Q(status="probable"))]

    def __str__(self) -> str:
        return f"{self.replier} for {self.enrollment_id} ({self.status})"



class DataRequest(models.Model):
    """A data-protection demand read in a person's reply: erasure (GDPR Art. 17), access (Art. 15), objection
    (Art. 21) or where the address came from (Art. 14/15). The address is suppressed when it is read; this is
    the admins' task, due one month from receipt (Art. 12(3)), answered with the erasure or the export.

    Erasing the person closes the task (its outcome says so) and the address becomes "[erased]" like
    everywhere else."""

    address = models.CharField(max_length=320, db_index=True)
    words = models.CharField(max_length=300)  # the demand as the person wrote it
    inbound = models.ForeignKey("InboundMessage", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    received_at = models.DateTimeField()  # when the reply arrived (the deadline runs from here)
    due_on = models.DateField()  # one calendar month after receipt
    done_at = models.DateTimeField(null=True, blank=True)
    done_by = models.CharField(max_length=200, blank=True)
    outcome = models.CharField(max_length=300, blank=True)  # "erased", "data exported and sent", an admin's words
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("inbound__mailbox__workspace")

    class Meta:
        db_table = "sequences_datarequest"  # the table it had in sequences
        ordering = ["due_on", "id"]
        indexes = [models.Index(fields=["done_at", "due_on"], name="data_request_open")]

    def __str__(self) -> str:
        return f"data-protection request from {self.address}, due {self.due_on}"



class WatchLease(models.Model):
    """Which IDLE watcher process watches one reply folder, and until when (inbound.leases).

    Taken, renewed and given up only by guarded updates (holder and expiry in the filter), so a folder has
    one holder at a time across every process and host. `account` (IMAP host and login) is what the
    per-account connection limit counts; `term` grows at every change of holder."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="watch_leases")
    folder = models.CharField(max_length=255)
    account = models.CharField(max_length=600)
    holder = models.CharField(max_length=200, blank=True)  # "" when nobody holds it; one row per folder: no index
    expires_at = models.DateTimeField(null=True, blank=True)  # database clock
    taken_at = models.DateTimeField(null=True, blank=True)
    term = models.PositiveIntegerField(default=0)

    objects = WorkspaceManager("mailbox__workspace")

    class Meta:
        db_table = "mailboxes_watchlease"  # the table it had in mailboxes
        constraints = [models.UniqueConstraint(fields=["mailbox", "folder"], name="watchlease_unique_folder")]

    def __str__(self) -> str:
        return f"{self.mailbox_id}/{self.folder} held by {self.holder or 'nobody'}"



class WatcherProcess(models.Model):
    """A running `watch_mailboxes` process, renewed with its leases: the watchers that share the folders."""

    name = models.CharField(max_length=200, unique=True)  # host:pid:space.random (inbound.leases.holder_name)
    started_at = models.DateTimeField(db_default=DbClock())
    expires_at = models.DateTimeField()
    folders = models.PositiveIntegerField(default=0)  # held at its last renewal

    class Meta:
        db_table = "mailboxes_watcherprocess"  # the table it had in mailboxes

    def __str__(self) -> str:
        return self.name


class ReplyRule(models.Model):
    """What a reply of one category does next in one sequence, besides stopping the person (inbound.reply_rules):
    enroll them in another sequence after a while, assign the conversation, or tell a user by email.

    Written by `[[sequence.on_reply]]` in TOML and on the sequence's page. A rule acts on replies categorized
    after it was made, once per conversation (`ReplyRuleRun`)."""

    class Action(models.TextChoices):
        ENROLL = "enroll", "Enroll in a sequence"
        ASSIGN = "assign", "Assign the conversation"
        NOTIFY = "notify", "Email a user"

    sequence = models.ForeignKey("sequences.Sequence", on_delete=models.CASCADE, related_name="reply_rules")
    position = models.PositiveSmallIntegerField()
    category = models.CharField(max_length=20, choices=CATEGORY_CHOICES)
    action = models.CharField(max_length=10, choices=Action.choices)
    # enroll: the sequence and how long after the reply its first step is due.
    enroll_in = models.ForeignKey("sequences.Sequence", on_delete=models.PROTECT, null=True, blank=True,
                                  related_name="+")
    after_seconds = models.PositiveIntegerField(default=0)
    # assign, notify: the user.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                             related_name="+")
    created_at = models.DateTimeField(db_default=DbClock())

    objects = WorkspaceManager("sequence__workspace")

    class Meta:
        ordering = ["sequence", "position"]
        constraints = [
            models.UniqueConstraint(fields=["sequence", "position"], name="reply_rule_position_unique"),
            models.CheckConstraint(condition=Q(action="enroll", enroll_in__isnull=False, user__isnull=True)
                                   | Q(~Q(action="enroll"), enroll_in__isnull=True, user__isnull=False),
                                   name="reply_rule_target"),
        ]

    def __str__(self) -> str:
        return f"rule {self.position} of sequence {self.sequence_id}: {self.category} -> {self.action}"


class ReplyRuleRun(models.Model):
    """One rule acting on one conversation: claimed once (the unique pair), then what it did, in words.

    `undone`: an enrollment the rule made was stopped before it sent anything, because an operator changed the
    conversation's category to another one (inbound.reply_rules); the rule never acts on that conversation again."""

    class Outcome(models.TextChoices):
        PENDING = "pending", "Under way"
        DONE = "done", "Done"
        REFUSED = "refused", "Not done"
        FAILED = "failed", "Failed, will be tried again"
        UNDONE = "undone", "Undone: the category was changed"

    rule = models.ForeignKey(ReplyRule, on_delete=models.CASCADE, related_name="runs")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="rule_runs")
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.PENDING)
    detail = models.CharField(max_length=500, blank=True)
    enrollment = models.ForeignKey(Enrollment, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(db_default=DbClock())
    updated_at = models.DateTimeField(db_default=DbClock())

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "conversation"], name="reply_rule_run_once")]
        indexes = [models.Index(fields=["outcome"], name="reply_rule_run_retry_idx",
                                condition=Q(outcome__in=["pending", "failed"]))]

    def __str__(self) -> str:
        return f"rule {self.rule_id} on conversation {self.conversation_id}: {self.outcome}"
