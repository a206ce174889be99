"""The reports' rollups: what every message counted for, and those counts summed per day.

`DailyFigures` is what the reports page, its exports and `manage.py report` read: one row per day (UTC) and
(sequence, step, variant, mailbox), never a scan of the jobs per request. `PersonFigures` holds, per person in a
sequence, what the rollup last counted for each of their messages, so a later run adds only the difference: a
reply, a bounce or an operator's new category changes a message counted days ago by exactly what changed, and a
run repeated changes nothing (reports.rollup). `RollupMark` is how far the rollup has read the timeline.

Both tables are written only by reports.rollup, under the mark's row lock.

The weekly report by email (reports.weekly, reports.weekly_send): `WeeklyReportRecipient` is who an admin chose
to receive it, `WeeklyReportSequence` a sequence turned off (or on again) for it, and `WeeklyReportWeek` one
row per week sent or being sent, unique on its workspace and week: the claim that makes a week go out once. Each
workspace has its own weekly report: its recipients, its sequences, its weeks.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from db.clock import DbClock
from workspaces.current import workspace_default
from workspaces.scoping import WorkspaceManager

# The counts each row holds, in the order the reports show them (reports.figures says what each one means). For one
# message each is 0 or 1: PersonFigures keeps them as the bits of one number, in this order.
COUNTS = ("sent", "delivered", "replied", "interested", "meeting", "out_of_office", "not_interested",
          "unsubscribed", "bounced_hard", "bounced_soft", "complained", "tried")


class Counted(models.Model):
    sent = models.IntegerField(default=0)  # handed off and taken by the server or provider
    delivered = models.IntegerField(default=0)  # sent, and no bounce of it known
    replied = models.IntegerField(default=0)  # people: a human reply correlated to their enrollment
    interested = models.IntegerField(default=0)  # people: their conversation's category
    meeting = models.IntegerField(default=0)
    out_of_office = models.IntegerField(default=0)
    not_interested = models.IntegerField(default=0)
    unsubscribed = models.IntegerField(default=0)  # people: the enrollment's stop reason
    bounced_hard = models.IntegerField(default=0)
    bounced_soft = models.IntegerField(default=0)  # messages: a soft bounce (not a delay warning) of this one
    complained = models.IntegerField(default=0)
    tried = models.IntegerField(default=0)  # sent, or refused by the server at the hand-off: the bounce rate's base

    class Meta:
        abstract = True

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTS}


class DailyFigures(Counted):
    """The counts of the messages handed off (or refused) on one day, for one step, variant and mailbox."""

    day = models.DateField()  # UTC, of the hand-off (of the refusal for a message the server refused)
    # No index of its own: dailyfigures_sequence_day_idx leads with it.
    sequence = models.ForeignKey("sequences.Sequence", on_delete=models.CASCADE, related_name="+", db_index=False)
    step = models.ForeignKey("sequences.Step", on_delete=models.CASCADE, related_name="+", db_index=False)
    variant = models.ForeignKey("sequences.StepVariant", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+", db_index=False)
    mailbox = models.ForeignKey("mailboxes.Mailbox", on_delete=models.CASCADE, related_name="+", db_index=False)

    objects = WorkspaceManager("sequence__workspace")

    class Meta:
        constraints = [
            # NULL never equals NULL in a unique index: a step's own text (no variant) has its own constraint.
            models.UniqueConstraint(fields=["day", "step", "mailbox", "variant"], name="dailyfigures_once",
                                    condition=Q(variant__isnull=False)),
            models.UniqueConstraint(fields=["day", "step", "mailbox"], name="dailyfigures_once_no_variant",
                                    condition=Q(variant__isnull=True)),
        ]
        # A report reads a date range, of one sequence or of all.
        indexes = [models.Index(fields=["sequence", "day"], name="dailyfigures_sequence_day_idx"),
                   models.Index(fields=["day"], name="dailyfigures_day_idx")]

    def __str__(self) -> str:
        return f"{self.day} step {self.step_id} variant {self.variant_id} mailbox {self.mailbox_id}"


class PersonFigures(models.Model):
    """What the rollup counted for one person in one sequence (an enrollment): for each of their messages that
    counts for something, [job id, day, sequence id, step id, variant id, mailbox id, counts as bits of COUNTS].

    Plain ids in one JSON value, no foreign keys: a row only remembers what was added to DailyFigures, so the next
    run can take exactly that away again; and one row per person, not per message, so the first run over a
    million messages writes a fifth as many rows, each one value.
    """

    enrollment_id = models.BigIntegerField(primary_key=True)
    messages = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"figures of enrollment {self.enrollment_id}"


class RollupMark(models.Model):
    """One row: how far the rollup has read the timeline, and what its last run cost."""

    read_to = models.DateTimeField(null=True)  # database clock at the start of the last complete run
    rolled_at = models.DateTimeField(null=True)  # when that run ended
    seconds = models.FloatField(default=0.0)  # how long it took
    enrollments = models.PositiveIntegerField(default=0)  # people (enrollments) it counted again
    messages = models.PositiveIntegerField(default=0)  # messages whose counts changed

    def __str__(self) -> str:
        return f"reports rolled up to {self.read_to}"


MANAGE_WEEKLY = "reports.manage_weekly_report"


class WeeklyReportRecipient(models.Model):
    """A user an admin chose to receive a workspace's weekly report. The mail goes to them only while they are
    active, have an email address and a role there that may see results (reports.weekly_send.recipients)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+",
                                  default=workspace_default, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    chosen_at = models.DateTimeField(db_default=DbClock())
    chosen_by = models.CharField(max_length=200, blank=True)

    objects = WorkspaceManager("workspace")

    class Meta:
        permissions = [("manage_weekly_report",
                        "Can choose who receives the weekly report and which sequences it covers")]
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="weeklyreportrecipient_once")]

    def __str__(self) -> str:
        return f"weekly report to user {self.user_id}"


class WeeklyReportSequence(models.Model):
    """Whether a sequence is in the weekly report. A sequence without a row is in it: a new sequence is reported
    without anyone having to remember to add it; an admin turns off the ones a recipient should not see."""

    sequence = models.OneToOneField("sequences.Sequence", on_delete=models.CASCADE, primary_key=True,
                                    related_name="+")
    enabled = models.BooleanField(default=True)
    changed_at = models.DateTimeField(db_default=DbClock())
    changed_by = models.CharField(max_length=200, blank=True)

    objects = WorkspaceManager("sequence__workspace")

    def __str__(self) -> str:
        return f"sequence {self.sequence_id} {'in' if self.enabled else 'not in'} the weekly report"


class WeekState(models.TextChoices):
    """What became of a week's weekly report (WeeklyReportWeek)."""

    SENDING = "sending", "Being sent"
    SENT = "sent", "Sent"
    FAILED = "failed", "Not sent — tried again on the next run"
    UNKNOWN = "unknown", "Outcome unknown — the sender stopped while sending; it may have been sent"


class WeeklyReportWeek(models.Model):
    """One week's weekly report: claimed (a row, unique on its Monday) before it is sent, then its outcome.

    sending -> sent | failed; failed -> sending (the next run tries again); sending for longer than a send can
    take -> unknown (the sender stopped after the hand-off began: the mail may have left, so nothing sends it
    again on its own; `manage.py weekly_report --week` does when asked).
    """

    State = WeekState

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+",
                                  default=workspace_default, editable=False)
    week = models.DateField()  # its Monday
    state = models.CharField(max_length=10, choices=WeekState.choices, default=WeekState.SENDING)
    recipients = models.JSONField(default=list)  # the addresses of the last attempt
    summary = models.CharField(max_length=300, blank=True)  # "12 sent, 3 replied, 1 positive in 2 sequences"
    attempts = models.PositiveIntegerField(default=1)
    claimed_at = models.DateTimeField(db_default=DbClock())  # the last attempt's claim
    finished_at = models.DateTimeField(null=True, blank=True)
    by = models.CharField(max_length=200)  # "the scheduler", or who ran manage.py weekly_report
    error = models.TextField(blank=True)  # the last failure, in words

    objects = WorkspaceManager("workspace")

    class Meta:
        ordering = ["-week"]
        constraints = [
            # The once-guard: whoever inserts a week's row sends it; a second scheduler, a retried job or the
            # command finds the row and sends nothing (reports.weekly_send.week_claim).
            models.UniqueConstraint(fields=["workspace", "week"], name="weeklyreportweek_once"),
            models.CheckConstraint(condition=Q(state__in=WeekState.values),
                                   name="weeklyreportweek_state_known"),
        ]

    def __str__(self) -> str:
        return f"weekly report of the week of {self.week}: {self.state}"
