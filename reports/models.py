"""The reports' rollups: what every message counted for, and those counts summed per day.

`DailyFigures` is what the reports page, its exports and `manage.py report` read: one row per day (UTC) and
(sequence, step, variant, mailbox), never a scan of the jobs per request. `PersonFigures` holds, per person in a
sequence, what the rollup last counted for each of their messages, so a later run adds only the difference: a
reply, a bounce or an operator's new category changes a message counted days ago by exactly what changed, and a
run repeated changes nothing (reports.rollup). `RollupMark` is how far the rollup has read the timeline.

Both tables are written only by reports.rollup, under the mark's row lock.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

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
