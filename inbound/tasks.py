"""RQ tasks for reply ingestion: a periodic fan-out, one poll per mailbox under a lock; ESP webhook batches."""

from __future__ import annotations

import logging

import django_rq
from rq import Retry

from mailboxes.imap.errors import ImapAuthError
from mailboxes.models import Mailbox
from mailboxes.selectors import mailbox_workspace

from .classify import learned
from .classify.intent import suggest
from .ingest.poll import mailbox_poll
from .ingest.retention import inbound_raw_purge as _raw_purge
from .reply_rules import reply_rules_due as _rules_due
from .reply_rules import reply_rules_run as _rules_run
from .webhook_events import event_converter
from .webhooks import webhook_batch_chunk_apply, webhook_batches_forget, webhook_batches_resume

log = logging.getLogger("outreach.ingest")
LOCK_TIMEOUT = 600  # seconds; a crashed poller's lock expires on its own


# Read once by warm(): a reply that goes through the phrase tables and the learned model.
WARM_REPLY = "Thanks, sounds interesting. Please take me off your list though."


def warm() -> None:
    """Load in the worker, before it forks its work horses, what reading a reply loads on first use: the learned
    classifier (SciPy, the weights) and the phrase tables compiled: about a second that each horse would
    otherwise spend on its first reply, with the reply's stop waiting in its transaction (outreach.worker.WARM)."""
    learned.shipped()
    suggest(WARM_REPLY)


def poll_lock(mailbox_id: int):
    """Two polls of one mailbox never run at once (Redis lock with a timeout).

    The lock saves work; correctness does not depend on it: the inbound
    ledger's unique keys make a doubled poll a no-op.
    """
    conn = django_rq.get_connection("ingest")
    return conn.lock(f"outreach:poll:{mailbox_id}", timeout=LOCK_TIMEOUT, blocking=False)


def poll_again_key(mailbox_id: int) -> str:
    """Stands while a pass of every folder of the mailbox has been asked for and has not begun."""
    return f"outreach:poll:{mailbox_id}:again"


def poll_folders_key(mailbox_id: int) -> str:
    """A set: the folders of the mailbox whose pass has been asked for and has not begun."""
    return f"outreach:poll:{mailbox_id}:folders"


def poll_ask(mailbox_id: int, folder: str | None) -> bool:
    """Leave the ask for a pass of `folder` (None: every folder) that the next pass to begin takes. False when an
    ask that covers it stands already: a pass of every folder covers any folder, a folder's covers that folder."""
    conn = django_rq.get_connection("ingest")
    if folder is None:
        return bool(conn.set(poll_again_key(mailbox_id), "1", ex=LOCK_TIMEOUT, nx=True))
    if conn.exists(poll_again_key(mailbox_id)):
        return False
    pipe = conn.pipeline()
    pipe.sadd(poll_folders_key(mailbox_id), folder)
    pipe.expire(poll_folders_key(mailbox_id), LOCK_TIMEOUT)  # a lost job's ask ends with the lock it never took
    return bool(pipe.execute()[0])


def _asks_take(conn, mailbox_id: int, folders: set[str] | None) -> set[str] | None:
    """Take the asks the pass about to begin covers, in one MULTI: what it reads (None: every folder). A pass of
    every folder takes every ask; a pass of some folders adds the folders asked for and leaves an ask for every
    folder standing (the pass after it)."""
    pipe = conn.pipeline()
    if folders is None:
        pipe.delete(poll_again_key(mailbox_id))
    pipe.smembers(poll_folders_key(mailbox_id))
    pipe.delete(poll_folders_key(mailbox_id))
    asked = pipe.execute()[-2]
    return None if folders is None else folders | {name.decode() for name in asked}


def _asks_standing(conn, mailbox_id: int) -> tuple[bool, bool]:
    """After a pass: whether a pass of every folder is asked for, and whether some folders are."""
    pipe = conn.pipeline(transaction=False)
    pipe.exists(poll_again_key(mailbox_id))
    pipe.exists(poll_folders_key(mailbox_id))
    whole, some = pipe.execute()
    return bool(whole), bool(some)


def poll_mailbox(mailbox_id: int, folder: str | None = None) -> dict:
    """Poll one mailbox: the folder a push was heard in, or every reply folder (`folder` None: the periodic poll,
    and any job enqueued without a folder). A poll asked for while another runs is not lost: that one polls again
    when done.

    A push (IDLE) or a cron tick that finds the mailbox being polled leaves
    its ask (`poll_ask`) and tries the lock once more (the running poll may
    have ended just then). The running poll takes the asks it covers before it
    reads and looks for asks after it released the lock: mail that arrived
    during its pass is read by a further pass, never left for the next periodic
    poll. A pass of one folder moves that folder's cursor and reply view only.
    """
    conn = django_rq.get_connection("ingest")
    reading: set[str] | None = None if folder is None else {folder}
    rounds, fetched, result = 0, 0, None
    while True:
        lock = poll_lock(mailbox_id)
        if not lock.acquire():
            if rounds == 0:
                poll_ask(mailbox_id, folder)
            if not lock.acquire():
                if result is None:
                    return {"skipped": "another poll of this mailbox is running; it polls again when done"}
                break
        try:
            reading = _asks_take(conn, mailbox_id, reading)
            if reading is not None and not reading:  # the asks were taken by a pass that began meanwhile
                break
            # Inside the mailbox's workspace: a reply stops, suppresses and matches that workspace's people only.
            with mailbox_workspace(mailbox_id):
                result = mailbox_poll(mailbox_id=mailbox_id, folders=None if reading is None else sorted(reading))
            rounds, fetched = rounds + 1, fetched + result.fetched
        except ImapAuthError as exc:
            # The server refused the login: the poll recorded it on the mailbox and logged one line with the
            # server's words. Not a failed job: RQ would log a traceback for it and retry a login that has to
            # wait for its interval anyway (`inbound.ingest.login`).
            return {"mailbox_id": mailbox_id, "login_refused": str(exc), "rounds": rounds + 1}
        finally:
            try:
                lock.release()
            except Exception:  # noqa: BLE001 - expired lock; nothing to release
                pass
        whole, some = _asks_standing(conn, mailbox_id)
        if not (whole or some):
            break
        reading = None if whole else set()  # the folders asked for are taken when the pass begins
    return {"mailbox": result.mailbox, "fetched": fetched, "folders": result.folders, "rounds": rounds}


def enqueue_poll(mailbox_id: int, folder: str | None = None) -> None:
    """A poll of `folder` of the mailbox (None: of every reply folder) on the `ingest` queue."""
    django_rq.get_queue("ingest").enqueue(
        poll_mailbox, mailbox_id, *([] if folder is None else [folder]), retry=Retry(max=3, interval=[10, 30, 90]),
        result_ttl=600, failure_ttl=86400,
    )


def poll_all() -> int:
    """Periodic fan-out: one poll job per mailbox that has IMAP settings."""
    ids = list(Mailbox.objects.exclude(imap_host="").values_list("pk", flat=True))
    if not ids:
        log.info("no IMAP mailbox configured: nothing to poll")
    for mailbox_id in ids:
        enqueue_poll(mailbox_id)
    return len(ids)


def inbound_raw_purge() -> int:
    """Periodic: remove the content of inbound mail and provider events older than OUTREACH_INBOUND_RETENTION_DAYS."""
    purged = _raw_purge()
    if purged:
        log.info("removed the content of %d inbound messages past the retention period", purged)
    return purged


def webhook_batch_apply(batch_id: int) -> dict:
    """One chunk of a stored ESP webhook batch; the next chunk is enqueued when this one is recorded."""
    result = webhook_batch_chunk_apply(batch_id=batch_id, converter=event_converter)
    return {"batch": result.batch, "applied": result.applied, "events": result.events, "outcome": result.outcome}


def webhook_batches_due() -> dict:
    """Periodic: enqueue again the ESP webhook batches left unfinished (a lost job, a killed worker); forget old
    finished ones."""
    resumed = webhook_batches_resume()
    if resumed:
        log.warning("webhook batches %s had stalled: enqueued again", resumed)
    return {"resumed": len(resumed), "forgotten": webhook_batches_forget()}


def reply_rules_run(conversation_id: int) -> list[dict]:
    """What the sequence's reply rules do with one conversation's category (inbound.reply_rules)."""
    return [vars(done) for done in _rules_run(conversation_id)]


def reply_rules_due() -> int:
    """Periodic: the reply rules nothing ran yet (a lost enqueue) and the notices that failed."""
    return _rules_due()
