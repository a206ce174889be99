"""`bench watcher`: the reply view the watcher keeps, as the final check reads it.

- How far each mailbox's replies-read-through time (the oldest of its reply folders', `inbound.ingest.view`)
  trails the database clock, sampled every SAMPLE_SECONDS while the folders are idle and while replies
  arrive, and what `sequences.reply_view.view_of` says of it at each sample (fresh, unread mail being read,
  stale, never read).
- Follow-ups held on a healthy mailbox: one follow-up per mailbox through the real final check (claim, then
  `send_job_authorize`) after the idle window, with nobody replying: the count held for the reply view (0
  expected), and how old the view was at each authorization (its event's `replies_read_seconds_before`).
  An authorized follow-up is left there: nothing is handed to a transport.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from db.clock import db_now
from mailboxes.models import ImapCursor, Mailbox
from proving.bench.stats import summary_ms
from sequences.loads import folder_views
from sequences.models import SendJob, TimelineEvent
from sequences.reply_view import view_of
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim

SAMPLE_SECONDS = 0.5
WORKER = "bench-watcher-final-check"


@dataclass
class ViewSampler:
    """Samples of every bench mailbox's reply view, by phase ("idle", "replies")."""

    mailboxes: list[Mailbox]
    lags: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # seconds behind now
    views: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    last: float = 0.0

    def sample(self, phase: str) -> None:
        """One read of every mailbox's reply folders (one query), on the database clock."""
        self.last = time.monotonic()
        by_id = {m.pk: m for m in self.mailboxes}
        marks: dict[int, list] = defaultdict(list)
        now = db_now()
        rows = ImapCursor.objects.filter(mailbox_id__in=by_id).values_list("mailbox_id", "folder", "read_through",
                                                                          "unread_since")
        for mailbox_id, folder, read_through, unread_since in rows:
            if folder in by_id[mailbox_id].reply_folders:
                marks[mailbox_id].append((read_through, unread_since))
        for pk, mailbox in by_id.items():
            views = folder_views(marks[pk])
            self.views[phase][view_of(mailbox, views, now=now).value] += 1
            if views.read_through is not None:
                self.lags[phase].append(max((now - views.read_through).total_seconds(), 0.0))

    def wait(self, seconds: float, phase: str) -> None:
        """Sleep `seconds`, sampling every SAMPLE_SECONDS meanwhile."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if time.monotonic() - self.last >= SAMPLE_SECONDS:
                self.sample(phase)
                left = deadline - time.monotonic()
            time.sleep(max(min(SAMPLE_SECONDS, left), 0))

    def report(self, phase: str) -> dict[str, Any]:
        return {"lag": summary_ms(self.lags[phase]), "views": dict(self.views[phase])}


def follow_ups_checked(jobs: list[SendJob]) -> dict[str, Any]:
    """Each follow-up through claim and the final check now; what it decided, and the view's age it recorded."""
    SendJob.objects.filter(pk__in=[j.pk for j in jobs]).update(scheduled_at=db_now())
    wanted = {j.pk for j in jobs}
    outcomes: Counter = Counter()
    for job_id in dispatch_due(limit=len(jobs) + 100):
        if job_id not in wanted:
            continue
        job = send_job_claim(job_id=job_id, worker_id=WORKER)
        if job is None:
            outcomes["lost"] += 1
            continue
        decision = send_job_authorize(job_id=job_id, worker_id=WORKER, version=job.version)
        outcomes[decision.outcome if decision.outcome != "deferred" else f"deferred: {decision.reason}"] += 1
    ages = [
        seconds for seconds in TimelineEvent.objects.filter(job_id__in=wanted, kind="job_authorized").values_list(
            "data__replies_read_seconds_before", flat=True)
        if seconds is not None
    ]
    return {"checked": len(jobs), "outcomes": dict(outcomes), "held": outcomes["deferred: reply_view"],
            "view_age_at_check": summary_ms(ages)}
