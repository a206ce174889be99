"""What a stop or pause did: a leaf (no imports of the product), so every layer can carry one."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Kept on the summary for the pages (what was canceled, what had already left, step by step), never in the
# timeline or the operator log: those carry the counts.
_PAGE_ONLY = ("job_ids_canceled", "job_ids_passed", "steps")


@dataclass
class StopSummary:
    """What a stop or pause did. `labels.stop_summary_text` puts it into words for every surface."""

    enrollments: int = 0  # enrollments whose status changed
    canceled: int = 0  # jobs canceled before authorization: never sent
    in_flight: int = 0  # jobs authorized but not yet recorded: may be leaving right now
    submitted: int = 0  # jobs already handed to the transport: cannot recall
    changed: bool = False
    job_ids_canceled: list[int] = field(default_factory=list)
    job_ids_passed: list[int] = field(default_factory=list)  # the in-flight and submitted jobs
    # step position -> [canceled, in flight, submitted]
    steps: dict[int, list[int]] = field(default_factory=dict)

    def add(self, other: StopSummary) -> None:
        self.enrollments += other.enrollments
        self.canceled += other.canceled
        self.in_flight += other.in_flight
        self.submitted += other.submitted
        self.changed = self.changed or other.changed
        self.job_ids_canceled += other.job_ids_canceled
        self.job_ids_passed += other.job_ids_passed
        for position, counts in other.steps.items():
            mine = self.steps.setdefault(position, [0, 0, 0])
            for i, n in enumerate(counts):
                mine[i] += n

    def count_step(self, position: int, column: int) -> None:
        """One more job at this step: column 0 canceled, 1 in flight, 2 submitted."""
        self.steps.setdefault(position, [0, 0, 0])[column] += 1

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in _PAGE_ONLY:
            data.pop(key)
        return data
