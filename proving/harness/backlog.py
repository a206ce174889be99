"""A send backlog on the product's own processes: the stack of #35's test, `bench reply-to-stop` and `drill race`.

The processes are the ones `scripts/run` starts, each a `manage.py` child: the RQ workers, the RQ cron
scheduler and the IDLE watcher. Replies reach the mailbox as a delivery would, by IMAP APPEND into its
folder on a real server; the watcher hears them, the `ingest` worker polls, the final check in the `send`
worker decides. Layouts:

- `scripts/run`: the product. `rqworker ingest default --with-scheduler` and `rqworker send`: a poll never
  waits behind a send; the watcher marks a folder unread before it asks for the poll, and the final check
  holds the mailbox's follow-ups until a poll has read it.
- `one worker`: one `rqworker send ingest default --with-scheduler`, as `scripts/run` started it before: a
  poll waits behind every queued send (RQ serves `send` first), so only the unread mark keeps a replier's
  follow-up from leaving.
- `before`: one worker and a watcher that asks for the poll without marking the folder (the watcher before
  the reply view, `watch_unmarked`): what #35 measured; repliers get their follow-ups.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django_rq import get_queue
from rq import Worker

from db.clock import db_now
from mailboxes.models import ImapCursor, Mailbox
from proving.harness import data, mails
from proving.harness.stack import DrillError, Process, stop_all, wait_for
from sequences.models import SendJob, TimelineEvent
from sequences.tasks import dispatch
from sequences.timeline import Event

S = SendJob.State


@dataclass(frozen=True)
class Layout:
    workers: tuple[tuple[str, ...], ...]  # the queues of each `rqworker`, in the order it serves them
    marks: bool  # the watcher marks a folder unread before it asks for the poll


LAYOUTS = {
    "scripts/run": Layout(workers=(("ingest", "default"), ("send",)), marks=True),
    "one worker": Layout(workers=(("send", "ingest", "default"),), marks=True),
    "before": Layout(workers=(("send", "ingest", "default"),), marks=False),
}


def watch_unmarked(mailbox_name: str) -> None:
    """The IDLE watcher as it was before the reply view: new mail asks for a poll and marks nothing.

    Run in a process of its own (`manage.py shell -c`), never by the product."""
    import signal
    import threading

    from inbound import watcher
    from inbound.tasks import enqueue_poll

    class Unmarked(watcher.Watcher):
        def _new_mail(self, watch: watcher.Watch) -> None:
            self.on_new(watch.mailbox.pk)

    watcher.Watcher = Unmarked
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    watcher.run(stop, name=mailbox_name, on_new=enqueue_poll, refresh=1.0, idle_seconds=300.0, say=print)


@contextmanager
def processes(layout: str, *, mailbox: Mailbox, env: dict[str, str], log_dir: Path,
              timeout: float = 90.0) -> Iterator[list[Process]]:
    """Start the layout's processes; yield once the workers listen and the watcher's catch-up poll has read
    the mailbox's folders; stop them all at the end."""
    shape = LAYOUTS[layout]
    tag = f"{os.getpid()}-{secrets.token_hex(3)}"
    names = [f"backlog-{'-'.join(queues)}-{tag}" for queues in shape.workers]
    started: list[Process] = []
    try:
        for name, queues in zip(names, shape.workers, strict=True):
            scheduler = ("--with-scheduler",) if "default" in queues else ()
            started.append(Process(name, ["rqworker", *queues, *scheduler, "--name", name, "-v", "0"], env=env,
                                   log_dir=log_dir))
        started.append(Process("rqcron", ["rqcron", "outreach.cron", "--logging-level", "WARNING"], env=env,
                               log_dir=log_dir))
        if shape.marks:
            watch = ["watch_mailboxes", "--mailbox", mailbox.name, "--refresh", "1"]
        else:
            watch = ["shell", "-c", f"from proving.harness.backlog import watch_unmarked; "
                                    f"watch_unmarked({mailbox.name!r})"]
        started.append(Process("watcher", watch, env=env, log_dir=log_dir))

        def ready() -> bool:
            for process in started:
                if not process.alive():
                    raise DrillError(f"{process.name} exited:\n{process.log_tail()}")
            listening = {w.name for queue in ("send", "ingest") for w in Worker.all(queue=get_queue(queue))}
            return set(names) <= listening and folders_read(mailbox)

        wait_for(ready, timeout=timeout, what=f"the {layout} processes and the watcher's first poll")
        yield started
    finally:
        stop_all(started)


def folders_read(mailbox: Mailbox) -> bool:
    """Every reply folder read through by a completed poll, and none marked unread."""
    cursors = ImapCursor.objects.filter(mailbox=mailbox, folder__in=mailbox.reply_folders,
                                        read_through__isnull=False, unread_since__isnull=True)
    return cursors.count() == len(mailbox.reply_folders)


def followups_waiting(*, mailbox: Mailbox, count: int, tag: str) -> list[SendJob]:
    """`count` people mailed by step 1 an hour ago; their follow-ups wait for tomorrow (`release` makes them
    due). In the order the dispatcher queues them."""
    (sequence,) = data.sequences_create([mailbox])
    return data.followups_create(count, sequences=[sequence], tag=tag, state=S.SCHEDULED,
                                 due_in=timedelta(days=1))


DISPATCH_WAIT = 10  # seconds


def release(jobs: list[SendJob]) -> list[int]:
    """Make the follow-ups due now and run one dispatcher pass: all of them queued on `send`, in order.

    The scheduler's own dispatcher runs meanwhile (rqcron, every OUTREACH_DISPATCH_INTERVAL): a pass of its that
    starts between the update and this pass queues them instead, as it would in production; what counts is that
    every follow-up was queued. One a worker has already taken back to `scheduled` (its final check deferred it:
    a reply view not read through yet, on a loaded machine) was queued all the same: its `job_queued` event says
    so. A pass that finds nothing to queue (the scheduler's, or a loaded machine's, took them a moment before
    and let go) is followed by another, as the scheduler's next one would, for up to DISPATCH_WAIT seconds."""
    ids = [j.pk for j in jobs]
    since = db_now()
    SendJob.objects.filter(pk__in=ids).update(scheduled_at=since)
    deadline = time.monotonic() + DISPATCH_WAIT
    while True:
        dispatch()
        waiting = set(SendJob.objects.filter(pk__in=ids, state=S.SCHEDULED).values_list("pk", flat=True))
        waiting -= set(TimelineEvent.objects.filter(job_id__in=waiting, kind=Event.JOB_QUEUED, at__gte=since)
                       .values_list("job_id", flat=True))
        if not waiting:
            return ids
        if time.monotonic() > deadline:
            raise DrillError(f"the dispatcher queued {len(jobs) - len(waiting)} of {len(jobs)} follow-ups "
                             f"in {DISPATCH_WAIT} s")
        time.sleep(0.2)


def submitted(jobs: list[SendJob]) -> int:
    return SendJob.objects.filter(pk__in=[j.pk for j in jobs], state=S.SUBMITTED).count()


def reply_append(server, user: str, *, tag: str, index: int, folder: str = "INBOX") -> float:
    """Person `index` of `tag` answers step 1, delivered into the folder (IMAP APPEND); returns the time the
    server confirmed it (this process's clock), the moment the reply was in the inbox."""
    raw = mails.bench_reply(sender=f"p{index}.{tag}@prospects.test", to_message_id=data.first_message_id(tag, index))
    server.append(user, folder, raw)
    return time.time()
