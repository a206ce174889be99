"""What a stop or pause did: a leaf (no imports of the product), so every layer can carry one."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class StopSummary:
    """What a stop or pause did. `labels.stop_summary_text` puts it into words for every surface."""

    enrollments: int = 0  # enrollments whose status changed
    canceled: int = 0  # jobs canceled before authorization: never sent
    in_flight: int = 0  # jobs authorized but not yet recorded: may be leaving right now
    submitted: int = 0  # jobs already handed to the transport: cannot recall
    changed: bool = False
    job_ids_canceled: list[int] = field(default_factory=list)

    def add(self, other: StopSummary) -> None:
        self.enrollments += other.enrollments
        self.canceled += other.canceled
        self.in_flight += other.in_flight
        self.submitted += other.submitted
        self.changed = self.changed or other.changed
        self.job_ids_canceled += other.job_ids_canceled

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("job_ids_canceled")
        return data
