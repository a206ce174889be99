"""The replies inbox: one conversation per person and sequence, its replies, and our answers from the app; and the
ESP tracking-webhook batches too large to apply inside the request.

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

from .classify.intent import LABELS, Category

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
    latest = models.ForeignKey("mailboxes.InboundMessage", on_delete=models.PROTECT, related_name="+")
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
    in_reply_to = models.ForeignKey("mailboxes.InboundMessage", on_delete=models.PROTECT, related_name="+")
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

    inbound = models.ForeignKey("mailboxes.InboundMessage", on_delete=models.CASCADE, related_name="+")
    category = models.CharField(max_length=20, choices=CATEGORY_CHOICES)
    suggested = models.CharField(max_length=20, choices=CATEGORY_CHOICES, blank=True)  # what was suggested then
    origin = models.CharField(max_length=10, choices=Origin.choices)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(db_default=DbClock())

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.get_origin_display()}: {self.category} (inbound {self.inbound_id})"
