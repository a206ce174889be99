"""Results per A/B variant on a sequence page: the counts that judge a winner and how sure the difference is.

Two grouped reads per page, whatever the number of variants: the jobs sent per variant, and the stopped
enrollments per variant of the last message that reached the mail server before the stop (as the results per
step count them, `results.step_results`). "Interested" stays empty ("—") until replies carry a category.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, OuterRef, Subquery

from sequences.models import Enrollment, SendJob, Sequence, StepVariant
from sequences.variants import Arm, comparison_words

from .results import OUTCOMES, REACHED_SERVER, SENT

COLUMNS = ("sent", "replied", "bounced", "unsubscribed")


@dataclass
class VariantRow:
    variant: StepVariant
    sent: int = 0
    replied: int = 0
    bounced: int = 0
    unsubscribed: int = 0
    complained: int = 0
    interested: int | None = None  # filled once replies carry a category; None shows "—"

    def rate(self, name: str) -> str:
        return f"{100 * getattr(self, name) / self.sent:.1f}%" if self.sent else "—"

    @property
    def cells(self) -> list[tuple[str, int, str]]:
        return [(name.capitalize(), getattr(self, name), self.rate(name) if name != "sent" else "")
                for name in COLUMNS]


@dataclass
class StepVariants:
    position: int
    step_id: int
    rows: list[VariantRow] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return comparison_words([Arm(r.variant.name, r.sent, r.replied) for r in self.rows])


def variant_results(sequence: Sequence) -> list[StepVariants]:
    """Every step of the sequence that has variants, with each variant's counts, by position then variant id."""
    variants = list(StepVariant.objects.filter(step__sequence=sequence).select_related("step")
                    .order_by("step__position", "id"))
    if not variants:
        return []
    rows = {v.pk: VariantRow(v) for v in variants}
    sent = (SendJob.objects.filter(step__sequence=sequence, variant__isnull=False).values("variant_id")
            .annotate(n=Count("id", filter=SENT)))
    for row in sent:
        rows[row["variant_id"]].sent = row["n"]
    last_reached = (SendJob.objects.filter(enrollment=OuterRef("pk"), state__in=REACHED_SERVER)
                    .order_by("-step__position", "-pk").values("variant_id")[:1])
    stopped = (Enrollment.objects.filter(sequence=sequence, status=Enrollment.Status.STOPPED,
                                         stop_reason__in=list(OUTCOMES))
               .annotate(variant_id=Subquery(last_reached)).filter(variant_id__isnull=False)
               .values("variant_id", "stop_reason").annotate(n=Count("id")))
    for row in stopped:
        if row["variant_id"] in rows:
            column = OUTCOMES[row["stop_reason"]]
            setattr(rows[row["variant_id"]], column, getattr(rows[row["variant_id"]], column) + row["n"])
    steps: dict[int, StepVariants] = {}
    for variant in variants:
        step = steps.setdefault(variant.step_id, StepVariants(variant.step.position, variant.step_id))
        step.rows.append(rows[variant.pk])
    return list(steps.values())
