"""Domain actions, one module per job; this package exposes them under one name (`services.enrollment_stop`).

| module            | what it owns                                                                 |
|-------------------|------------------------------------------------------------------------------|
| `stops`           | the one stop path: stop, pause and resume of enrollments, sequences, mailboxes |
| `suppressions`    | the ledger: add (stops the person everywhere), lift, import                   |
| `enrollments`     | contacts and enrolling them                                                   |
| `scheduling`      | the next step's job, or completion                                            |
| `sending`         | dispatch, claim, the final check (`send_job_authorize`), the record of a send |
| `provider_cancel` | scheduled sends at a provider and their cancels                               |
| `provider_events` | providers' tracking events                                                    |

Lock order and why: `sequences.locks`. State changes: `sequences.states`.
"""

from .common import ServiceError, StopSummary
from .enrollments import BatchResult, ContactRow, contact_upsert, enrollment_create, enrollments_create_batch
from .provider_cancel import (
    enrollment_after_provider_answer,
    provider_cancel_request,
    provider_cancels_stale,
    provider_send_at_for,
    send_job_provider_cancel,
)
from .provider_events import TrackingEvent, provider_event_record
from .sending import (
    Authorization,
    dispatch_due,
    final_check,
    leases_sweep,
    queued_stale,
    send_job_authorize,
    send_job_claim,
    send_job_record_failed,
    send_job_record_retry,
    send_job_record_submitted,
    send_job_record_unknown,
    send_job_record_unpreparable,
)
from .stops import (
    enrollment_pause,
    enrollment_pause_in_transaction,
    enrollment_resume,
    enrollment_stop,
    enrollment_stop_in_transaction,
    mailbox_pause,
    mailbox_resume,
    sequence_pause,
    sequence_resume,
)
from .suppressions import (
    ImportRow,
    suppression_add,
    suppression_add_in_transaction,
    suppression_import,
    suppression_lift,
)

__all__ = [
    "Authorization", "BatchResult", "ContactRow", "ImportRow", "ServiceError", "StopSummary", "TrackingEvent",
    "contact_upsert", "dispatch_due", "enrollment_after_provider_answer", "enrollment_create", "enrollment_pause",
    "enrollment_pause_in_transaction", "enrollment_resume", "enrollment_stop", "enrollment_stop_in_transaction",
    "enrollments_create_batch",
    "final_check", "leases_sweep", "mailbox_pause", "mailbox_resume", "provider_cancel_request",
    "provider_cancels_stale", "provider_event_record", "provider_send_at_for", "queued_stale", "send_job_authorize",
    "send_job_claim", "send_job_provider_cancel", "send_job_record_failed", "send_job_record_retry",
    "send_job_record_submitted", "send_job_record_unknown",
    "send_job_record_unpreparable", "sequence_pause", "sequence_resume", "suppression_add",
    "suppression_add_in_transaction", "suppression_import", "suppression_lift",
]
