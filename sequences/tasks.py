"""Every RQ entry point of the sequences app: take ids, call a service. Redis is transport, never the record."""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

from rq import get_current_job

from mailboxes.address_check import domains_check, verdicts_plain

from .pipeline import send_job_process
from .queues import (
    STALE_AFTER_SECONDS,
    enqueue_probe,
    enqueue_provider_cancel,
    enqueue_sends,
    enqueue_webhook_deliveries,
    send_enqueued_recently,
)
from .services import mailbox_health, suppressions
from .services.doctor import enrollments_doctor
from .services.domain_auth import domain_auth_sweep
from .services.enrollments import ContactRow, EnrollCounts, enrollments_create_many
from .services.mailbox_health import mailbox_probes_due
from .services.provider_cancel import provider_cancels_stale, send_job_provider_cancel
from .services.reply_view_episodes import reply_view_episodes_sweep
from .services.sending import dispatch_due, leases_sweep, queued_stale
from .services.stops import mailbox_pause_sweep
from .services.suppressions import ImportRow
from .webhooks_out import deliver

log = logging.getLogger("outreach.tasks")


def worker_identity() -> str:
    current = get_current_job()  # None outside a worker
    rq_id = current.id if current else "inline"
    return f"{socket.gethostname()}:{os.getpid()}:{rq_id}"


def send_job(job_id: int) -> str:
    outcome = send_job_process(job_id=job_id, worker_id=worker_identity())
    log.info("job %s -> %s %s", job_id, outcome.state, outcome.detail)
    return outcome.state


def provider_cancel(job_id: int) -> str:
    status = send_job_provider_cancel(job_id=job_id)
    log.info("job %s: provider cancel -> %s", job_id, status)
    return status


def mailbox_guardrail_sweep(mailbox_id: int) -> int:
    """After the guardrail paused a mailbox: cancel its pending jobs, as an operator's pause does."""
    summary = mailbox_pause_sweep(mailbox_id=mailbox_id)
    log.info("mailbox %s: guardrail pause canceled %s jobs", mailbox_id, summary.canceled)
    return summary.canceled


def dispatch(stale_after_seconds: int = STALE_AFTER_SECONDS) -> dict[str, int]:
    """One dispatcher pass: queue due jobs, re-enqueue queued jobs Redis may have lost, sweep leases."""
    sweep = leases_sweep()
    due = dispatch_due()
    stale = [
        job_id for job_id in queued_stale(older_than_seconds=stale_after_seconds)
        if job_id not in due and not send_enqueued_recently(job_id)
    ]
    requeue = sweep["requeued_ids"] + due + stale
    enqueue_sends(requeue, mark_seconds=stale_after_seconds)
    # Provider cancel requests whose RQ job was lost: ask again while the send time is ahead.
    for job_id in provider_cancels_stale():
        enqueue_provider_cancel(job_id)
    # Blocked mailboxes whose next probe is due.
    probes = mailbox_probes_due()
    for mailbox_id in probes:
        enqueue_probe(mailbox_id)
    return {"queued": len(due), "re_enqueued": len(stale) + sweep["requeued"], "marked_unknown": sweep["unknown"],
            "probes": len(probes)}


def doctor() -> int:
    """Periodic: repair active enrollments left without a live job (see sequences.services.doctor)."""
    repaired = [f for f in enrollments_doctor(repair=True) if f.done]
    for finding in repaired:
        log.warning("enrollment %s (%s): %s -> %s", finding.enrollment_id, finding.email, finding.finding,
                    finding.action)
    return len(repaired)


def reply_view_episodes() -> int:
    """Periodic: record (and announce by webhook) each mailbox's reply view going blind or reading again."""
    changes = reply_view_episodes_sweep()
    for change in changes:
        log.warning("mailbox %s: %s", change.mailbox, change.kind)
    return len(changes)


def domain_auth() -> dict[str, int]:
    """Periodic: each mailbox's SPF, DKIM and DMARC once a day (a failing one hourly); pauses after the grace."""
    counts = domain_auth_sweep()
    if counts["failing"] or counts["paused"]:
        log.warning("domain authentication: %s", domain_auth_words(counts))
    return counts


def domain_auth_words(counts: dict[str, int]) -> str:
    """A sweep's counts as the terminal says them: '1 of the 3 mailboxes checked fails SPF, DKIM or DMARC (…)'."""
    failing, checked, paused = counts["failing"], counts["checked"], counts["paused"]
    mailboxes = "mailbox" if checked == 1 else "mailboxes"
    words = (f"{failing} of the {checked} {mailboxes} checked {'fails' if failing == 1 else 'fail'} SPF, DKIM or "
             "DMARC (the Mailboxes page says which record and what to publish)")
    return words + (f"; {paused} paused for it, past the grace period" if paused else "; none paused for it yet")


def mailbox_probe(mailbox_id: int) -> str:
    result = mailbox_health.mailbox_probe(mailbox_id=mailbox_id)
    log.info("mailbox %s probe: %s", mailbox_id, result.text)
    return result.outcome


def _meta_progress():
    """A progress(done, total) callback keeping the counts in the current RQ job's meta, which its status page reads."""
    job = get_current_job()

    def progress(done: int, total: int) -> None:
        if job is not None:
            job.meta.update({"done": done, "total": total})
            job.save_meta()

    return progress


def suppression_import(rows: list[dict[str, Any]], actor: str, source: str, invalid: list[dict[str, Any]]):
    """A large CSV import; reports progress in the RQ job's meta for the status page."""
    result = suppressions.suppression_import(rows=[ImportRow(**r) for r in rows], actor=actor, source=source,
                                         progress=_meta_progress())
    result["errors"] = sorted(invalid + result["errors"], key=lambda e: e["line"])
    return result


def addresses_verify(domains: list[str], budget: float) -> dict[str, list[str]]:
    """The address check of an enroll upload's dry run: each domain's verdict, all looked up within `budget`
    seconds (mailboxes.address_check); progress in the RQ job's meta for the page that waits on it."""
    return verdicts_plain(domains_check(domains, budget=budget, progress=_meta_progress()))


def webhook_deliver(delivery_id: int) -> str:
    outcome = deliver.webhook_deliver(delivery_id=delivery_id)
    log.info("webhook delivery %s: %s", delivery_id, outcome)
    return outcome


def webhooks_due() -> int:
    """Periodic: enqueue outbound webhook deliveries whose retry is due (or whose RQ job was lost)."""
    due = deliver.webhook_deliveries_due()
    enqueue_webhook_deliveries(due)
    return len(due)


def enrollment_upload(sequence_id: int, rows: list[dict[str, Any]], refused: dict[str, Any] | list, actor: str,
                      allow_missing: bool = False, source: str = "") -> dict[str, Any]:
    """Enroll the rows of a CSV uploaded in the UI that its dry run would enroll; `refused`: the rows the dry run
    refused, by kind (`EnrollCounts.plain`). Progress in the RQ job's meta for its status page; the result is the
    upload's counts (`EnrollCounts.shown`), as its dry run showed them. `allow_missing`: the operator chose to
    enroll the rows that lack a value a step needs; `source`: the file's name."""
    # A run queued before the counts were kept by kind passed the file's invalid rows only.
    counts = (EnrollCounts.from_plain(refused) if isinstance(refused, dict)
              else EnrollCounts(rejected=[(int(line), str(reason)) for line, reason in refused]))
    result = enrollments_create_many(sequence_id=sequence_id, rows=[ContactRow(**r) for r in rows],
                                     actor=actor, progress=_meta_progress(), allow_missing=allow_missing,
                                     source=source, counts=counts)
    return counts.shown() | {"contacts_created": result.contacts_created, "contacts_kept": result.contacts_kept}
