"""The guarded sender: claim -> prepare -> authorize -> hand off -> record.

Each arrow is its own short transaction or none at all: no database
transaction is open while the transport talks to the network, so a slow SMTP
server never holds a lock that reply ingestion needs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection

from mailboxes.selectors import transport_for
from mailboxes.transports.base import (
    MailboxRefused,
    OutcomeUnknown,
    PermanentError,
    RecipientRefused,
    TransientError,
)

from . import checkpoints
from .messages import PrepareError, message_prepare
from .models import SendJob
from .sending_mailbox import enrollment_mailbox
from .sent_copies import sent_copy_enqueue
from .services.mailbox_health import send_job_record_mailbox_refused, send_job_record_unreachable
from .services.provider_cancel import provider_send_at_for
from .services.sending import (
    Authorization,
    send_job_authorize,
    send_job_claim,
    send_job_record_failed,
    send_job_record_retry,
    send_job_record_submitted,
    send_job_record_unknown,
    send_job_record_unpreparable,
)

log = logging.getLogger("outreach.pipeline")

Authorize = Callable[..., Authorization]


@dataclass(frozen=True)
class Outcome:
    job_id: int
    state: str  # the job's state when this run ended, or "noop"
    detail: str = ""


def send_job_process(*, job_id: int, worker_id: str, authorize: Authorize = send_job_authorize) -> Outcome:
    """Run one send job through the pipeline. `authorize` is replaceable only for tests and benchmarks."""
    job = send_job_claim(job_id=job_id, worker_id=worker_id)
    if job is None:
        return Outcome(job_id, "noop", "not queued (duplicate or stale delivery)")
    checkpoints.reach("claimed", job_id)

    try:
        prepared = message_prepare(job_id=job_id, job=job)
    except PrepareError as exc:
        # Nothing reached a transport: the job ends failed with the reason, never retried by the sweeper.
        send_job_record_unpreparable(job_id=job_id, worker_id=worker_id, error=str(exc))
        return Outcome(job_id, SendJob.State.FAILED, str(exc))
    checkpoints.reach("prepared", job_id)

    decision = authorize(job_id=job_id, worker_id=worker_id, version=job.version)
    if decision.outcome != "authorized":
        return Outcome(job_id, decision.outcome, decision.reason)
    checkpoints.reach("authorized", job_id)

    # The mailbox row the final check read; an authorize step that does not return it (the bypassed variant of
    # proving/variants.py) leaves it to be read here.
    mailbox = decision.mailbox or enrollment_mailbox(
        SendJob.objects.select_related("enrollment__mailbox", "enrollment__sequence__mailbox").get(pk=job_id).enrollment
    )
    transport = transport_for(mailbox)
    # Handed to an ESP before its time (mailbox policy): the provider holds it until send_at.
    send_at = provider_send_at_for(job_id=job_id, mailbox=mailbox)
    schedule_kw = {"send_at": send_at} if send_at else {}
    assert not connection.in_atomic_block, "never hold a transaction across the transport"
    try:
        submission = transport.send(sender=prepared.sender, recipient=prepared.recipient, message=prepared.data,
                                    **schedule_kw)
    except MailboxRefused as exc:
        # The mailbox, not the message: the job waits for the mailbox; nothing is failed.
        state = send_job_record_mailbox_refused(job_id=job_id, worker_id=worker_id, error=str(exc))
        return Outcome(job_id, state, str(exc))
    except TransientError as exc:
        record = send_job_record_unreachable if exc.connection else send_job_record_retry
        state = record(job_id=job_id, worker_id=worker_id, error=str(exc))
        return Outcome(job_id, state, str(exc))
    except RecipientRefused as exc:
        send_job_record_failed(job_id=job_id, worker_id=worker_id, error=str(exc), hard_bounce=exc.hard)
        return Outcome(job_id, SendJob.State.FAILED, str(exc))
    except PermanentError as exc:
        send_job_record_failed(job_id=job_id, worker_id=worker_id, error=str(exc), hard_bounce=False)
        return Outcome(job_id, SendJob.State.FAILED, str(exc))
    except OutcomeUnknown as exc:
        send_job_record_unknown(job_id=job_id, worker_id=worker_id, error=str(exc))
        return Outcome(job_id, SendJob.State.UNKNOWN, str(exc))
    checkpoints.reach("submitted", job_id)
    schedule = submission.schedule  # an ESP's ProviderSchedule for a scheduled send
    recorded = send_job_record_submitted(
        job_id=job_id, worker_id=worker_id, smtp_reply=submission.reply,
        provider_message_id=submission.provider_message_id, provider_request_id=submission.provider_request_id,
        provider_schedule=schedule.as_fields() if schedule else None,
    )
    if recorded and not schedule:
        # A copy in the mailbox's Sent folder, by a job of its own (never one that a provider may still cancel).
        sent_copy_enqueue(mailbox=mailbox, job_id=job_id, message=prepared.data)
    return Outcome(job_id, SendJob.State.SUBMITTED, submission.reply)
