"""A/B variants of a step: which variant a person gets, and how sure a difference in reply rates is.

The choice is made once, when a job is created, and stored on the job (`SendJob.variant`): a retry, a
deferral or a resume of that job sends the same variant. It is a pure function of the enrollment, the step
and the running variants' weights: `u` is the fractional part of enrollment id × (√5 − 1)/2 plus a per-step
offset, a low-discrepancy sequence, so people enrolled one after another split by weight almost exactly (24
people at 1:1 give 12 and 12, ±1) rather than by coin flips, and a person's share does not depend on who
else was enrolled meanwhile. When a variant is stopped, its people are given a remaining variant by the same
`u` and the remaining weights.

No ORM here beyond `running_variants` (one read); the statistics are plain arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .models import StepVariant

GOLDEN = (math.sqrt(5) - 1) / 2  # 0.618…: consecutive multiples are spread evenly over [0, 1)
STEP_OFFSET = math.sqrt(2) - 1  # 0.414…: each step shifts the sequence, so step 2's split is not step 1's


def share(enrollment_id: int, step_id: int) -> float:
    """The person's point in [0, 1) for this step: where it falls among the weights picks the variant."""
    return (enrollment_id * GOLDEN + step_id * STEP_OFFSET) % 1.0


def variant_pick(variants: list[tuple[int, int]], *, enrollment_id: int, step_id: int) -> int | None:
    """Of (variant id, weight) pairs (the running ones, in id order), the one this person gets; None if none."""
    total = sum(weight for _, weight in variants)
    if not total:
        return None
    point = share(enrollment_id, step_id) * total
    for variant_id, weight in variants:
        if point < weight:
            return variant_id
        point -= weight
    return variants[-1][0]


def running_variants(step_id: int) -> list[tuple[int, int]]:
    """(id, weight) of the step's variants that are not stopped, in id order; one statement."""
    return list(StepVariant.objects.filter(step_id=step_id, stopped_at__isnull=True).order_by("id")
                .values_list("id", "weight"))


# --- how sure a difference is ---------------------------------------------------------------------------------

# Below this many sends of either variant, no comparison is offered: a rate of 1 in 4 says nothing.
MIN_SENDS = 10
SURE = 0.05  # a p-value below this is called unlikely to be chance


@dataclass(frozen=True)
class Arm:
    name: str
    sent: int
    replied: int

    @property
    def rate(self) -> float:
        return self.replied / self.sent if self.sent else 0.0


def two_proportion_p(a: Arm, b: Arm) -> float:
    """The two-sided p-value of a two-proportion z-test (pooled) on the reply rates; 1.0 when it cannot be told."""
    if not a.sent or not b.sent:
        return 1.0
    pooled = (a.replied + b.replied) / (a.sent + b.sent)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / a.sent + 1 / b.sent))
    if spread == 0:
        return 1.0
    z = abs(a.rate - b.rate) / spread
    return math.erfc(z / math.sqrt(2))


def _pct(rate: float) -> str:
    """A rate as people read it: whole percents, one decimal below 1 %."""
    return f"{100 * rate:.1f} %" if 0 < rate < 0.01 else f"{100 * rate:.0f} %"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}" if p < SURE else f"p = {p:.2f}"


def _sends(a: Arm, b: Arm) -> str:
    if a.sent == b.sent:
        return f"{a.sent} sends each"
    return f"{a.sent} and {b.sent} sends"


def comparison_words(arms: list[Arm]) -> str:
    """The plain statement of how the two leading variants' reply rates differ and how sure that is."""
    arms = [arm for arm in arms if arm.sent]
    if len(arms) < 2:
        return "Nothing to compare yet: fewer than two variants have been sent."
    a, b = sorted(arms, key=lambda arm: (-arm.rate, -arm.sent))[:2]
    if min(a.sent, b.sent) < MIN_SENDS:
        return (f"Too early to tell: {_sends(a, b)} so far; the comparison starts at {MIN_SENDS} sends of each "
                "variant.")
    p = two_proportion_p(a, b)
    if a.rate == b.rate:
        return f"{a.name} and {b.name} reply equally often ({_pct(a.rate)}) with {_sends(a, b)}."
    head = f"{a.name} replies more often than {b.name} ({_pct(a.rate)} vs {_pct(b.rate)})"
    if p < SURE:
        return f"{head}, and with {_sends(a, b)} that is unlikely to be chance ({_p(p)})."
    return f"{head}, but with {_sends(a, b)} this could be chance ({_p(p)})."
