"""The designs the product rejects, kept only to prove the guard: never imported by the product.

- send_job_authorize_unchecked: trust the claim and send, with no final check.
  Tests and `bench guard` call it to show what the final check prevents and
  what it costs.
- send_job_process_lock_held: one transaction locks the enrollment (the row
  every stop path locks), runs the final check, authorizes, talks SMTP and
  records the submission, so the lock is held for as long as the provider
  takes. The product's authorize transaction commits before the hand-off
  (sequences.pipeline); here a stop of this enrollment -- the commit of a
  reply -- waits for the provider. `bench slow-provider` measures it.
- UncheckedJob: the guard bypassed in a real worker, for showing that a drill
  can FAIL. Only the drill's own worker launcher uses it, and only when the
  drill command runs with OUTREACH_DRILL_UNCHECKED=1: it starts its worker with
  `--job-class proving.variants.UncheckedJob`, which runs `send_job_unchecked`
  in place of `sequences.tasks.send_job`. The product's workers, tasks and
  settings know nothing of it.
- watch_thread_per_folder: the IDLE watcher as it was before inbound.watcher multiplexed every folder in
  one thread: one thread and one IMAP connection per folder, each in its own idle_wait loop. `bench
  watcher` runs it next to the product's watcher on the same folders, as the baseline.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from rq.job import Job

from db.clock import DbClock, db_now
from inbound.watcher import watched
from mailboxes.imap.errors import ImapError
from mailboxes.imap.session import ImapSession
from mailboxes.models import Mailbox
from mailboxes.selectors import imap_config_for, transport_for
from sequences.loads import facts_read, job_read
from sequences.messages import message_prepare
from sequences.models import SendJob
from sequences.pipeline import send_job_process
from sequences.sending_mailbox import enrollment_mailbox
from sequences.services.sending import Authorization, final_check, job_locked, send_job_claim
from sequences.states import job_move
from sequences.tasks import worker_identity
from sequences.timeline import Event, event_record

S = SendJob.State
ENV_FLAG = "OUTREACH_DRILL_UNCHECKED"


def send_job_authorize_unchecked(*, job_id: int, worker_id: str, version: int) -> Authorization:
    """The design this product rejects: trust the claim and send, with no final check.

    Forces the job to authorized whatever happened since it was claimed (as a
    worker that checked eligibility only when it picked the job up would).
    Never used by the product: tests and benchmarks call it to show what the
    final check prevents and what it costs.
    """
    with transaction.atomic(durable=True):
        # The same read of the job and its mailbox as the product's transactions, without their lock or checks.
        job = job_read(job_id)
        lease = db_now() + timedelta(seconds=settings.OUTREACH_LEASE_SECONDS)
        SendJob.objects.filter(pk=job_id).update(
            state=S.AUTHORIZED, authorized_at=DbClock(), lease_until=lease, version=F("version") + 1
        )
        event_record(kind=Event.JOB_AUTHORIZED, job=job_id, worker_id=worker_id, final_check=False)
        return Authorization("authorized", "", version + 1, mailbox=enrollment_mailbox(job.enrollment))


def send_job_process_lock_held(*, job_id: int, worker_id: str) -> str:
    """claim -> prepare -> [lock enrollment, check, authorize, SMTP, submitted] in one transaction."""
    claimed = send_job_claim(job_id=job_id, worker_id=worker_id)
    if claimed is None:
        return "noop"
    prepared = message_prepare(job_id=job_id)
    with transaction.atomic():
        # The same lock and the same fresh read as the product's stop and authorize paths.
        locked = job_locked(job_id)
        mailbox, job = locked.mailbox, locked.job
        if job.state != S.CLAIMED:
            return job.state
        reason = final_check(job=job, enrollment=locked.enrollment, mailbox=mailbox, facts=facts_read(job, mailbox))
        if reason:
            job_move(job=job, to=S.CANCELED, worker_id=worker_id,
                     fields={"cancel_reason": reason}, reason=reason, final_check=True)
            return S.CANCELED
        job_move(job=job, to=S.AUTHORIZED, worker_id=worker_id, final_check=True, lock_held=True)
        # The network call inside the transaction: exactly what the product forbids.
        submission = transport_for(mailbox).send(sender=prepared.sender, recipient=prepared.recipient,
                                                 message=prepared.data)
        job_move(job=job, to=S.SUBMITTED, worker_id=worker_id, fields={"smtp_reply": submission.reply},
                 smtp_reply=submission.reply)
    return S.SUBMITTED


def send_job_unchecked(job_id: int) -> str:
    """sequences.tasks.send_job with the final check replaced by send_job_authorize_unchecked."""
    outcome = send_job_process(job_id=job_id, worker_id=worker_identity(),
                               authorize=send_job_authorize_unchecked)
    return outcome.state


class UncheckedJob(Job):
    @property
    def func(self):
        if self.func_name == "sequences.tasks.send_job":
            return send_job_unchecked
        return super().func


def watch_thread_per_folder(stop: threading.Event, *, name: str | None, on_new: Callable[[int, str], None],
                            idle_seconds: float, say: Callable[[str], None]) -> None:
    """The rejected watcher: one thread and one connection per folder (the mailbox list is read once)."""
    threads = [threading.Thread(target=_watch_one, args=(box, folder, stop, on_new, idle_seconds), daemon=True,
                                name=f"idle-{box.name}-{folder}")
               for box in watched(name) for folder in (box.imap_folders or ["INBOX"])]
    connection.close()
    for thread in threads:
        thread.start()
    say(f"watching {len(threads)} folder{'s' if len(threads) != 1 else ''} with IDLE, one thread each")
    stop.wait()  # the threads are daemons, blocked in IDLE: they end with the process


def _watch_one(mailbox: Mailbox, folder: str, stop: threading.Event, on_new: Callable[[int, str], None],
               idle_seconds: float) -> None:
    """IDLE on one folder; on EXISTS or a new UIDVALIDITY after a cycle, ask for a poll; reconnect with backoff."""
    backoff = 1.0
    while not stop.is_set():
        try:
            with ImapSession(imap_config_for(mailbox)) as session:
                uidvalidity = session.select(folder).uidvalidity
                backoff = 1.0
                on_new(mailbox.pk, folder)  # catch up on anything that arrived while we were not watching
                while not stop.is_set():
                    pushed = session.idle_wait(min(idle_seconds, 29 * 60))
                    now = session.select(folder).uidvalidity
                    if pushed or now != uidvalidity:
                        uidvalidity = now
                        on_new(mailbox.pk, folder)
        except ImapError as exc:
            logging.getLogger("outreach.ingest").warning("IDLE on %s/%s: %s; retrying in %.0fs", mailbox.name,
                                                         folder, exc, backoff)
            stop.wait(backoff)
            backoff = min(backoff * 2, 300)
        finally:
            connection.close()
