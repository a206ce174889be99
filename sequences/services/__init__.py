"""Domain actions, one module per job; this package exposes them under one name (`services.enrollment_stop`).

| module            | what it owns                                                                 |
|-------------------|------------------------------------------------------------------------------|
| `stops`           | the one stop path: stop, pause and resume of enrollments, sequences, mailboxes |
| `suppressions`    | the ledger: add (stops the person everywhere), lift, import                   |
| `enrollments`     | contacts and enrolling them                                                   |
| `scheduling`      | the next step's job, or completion                                            |
| `doctor`          | active enrollments without a live job: explained or repaired                   |
| `sending`         | dispatch, claim, the final check (`send_job_authorize`), the record of a send |
| `mailbox_health`  | a mailbox that fails as a whole: block, hold its jobs, probe, unblock         |
| `provider_cancel` | scheduled sends at a provider and their cancels                               |
| `provider_events` | providers' tracking events                                                    |
| `guardrails`      | a mailbox's hard-bounce and complaint rates: pause when a limit is crossed    |
| `holds`           | an out-of-office answer holds the person's live jobs until their return       |
| `erasure`         | erase a person (a keyed hash of the address stays) and export what is held    |
| `campaigns`       | building a sequence in the UI: create, edit, steps, a test send to oneself   |

Lock order and why: `sequences.locks`. State changes: `sequences.states`.
"""

from sequences.stop_summary import StopSummary

from .campaigns import (
    StepInvalid,
    sequence_create,
    sequence_update,
    step_delete,
    step_jobs_refusal,
    step_move,
    step_save,
    step_send_test,
)
from .common import ServiceError
from .doctor import Finding, enrollments_doctor
from .enrollments import (
    BatchResult,
    ContactRow,
    Refusal,
    contact_upsert,
    enrollment_create,
    enrollments_create_batch,
    enrollments_create_many,
    enrollments_dry_run,
)
from .erasure import contact_erase, contact_export
from .guardrails import Figures, guardrail_crossed, guardrail_figures, guardrail_may_cross, guardrail_record
from .holds import person_hold_for_auto_reply
from .mailbox_health import (
    ProbeResult,
    mailbox_block,
    mailbox_probe,
    mailbox_probes_due,
    send_job_record_mailbox_refused,
    send_job_record_unreachable,
)
from .provider_cancel import (
    enrollment_after_provider_answer,
    provider_cancel_request,
    provider_cancels_stale,
    provider_send_at_for,
    send_job_provider_cancel,
)
from .provider_events import TrackingEvent, provider_event_record, provider_event_reject
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
    mailbox_pause_sweep,
    mailbox_resume,
    person_stop_in_transaction,
    reply_stop_in_transaction,
    send_job_retry,
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
    "Authorization", "BatchResult", "ContactRow", "Figures", "Finding", "ImportRow", "ProbeResult", "Refusal",
    "ServiceError", "StepInvalid", "StopSummary", "TrackingEvent", "contact_erase", "contact_export", "contact_upsert",
    "dispatch_due", "enrollment_after_provider_answer", "enrollment_create", "enrollment_pause",
    "enrollment_pause_in_transaction", "enrollment_resume", "enrollment_stop", "enrollment_stop_in_transaction",
    "enrollments_create_batch", "enrollments_create_many", "enrollments_doctor", "enrollments_dry_run", "final_check",
    "guardrail_crossed", "guardrail_figures", "guardrail_may_cross", "guardrail_record", "leases_sweep",
    "mailbox_block", "mailbox_pause", "mailbox_pause_sweep", "mailbox_probe", "mailbox_probes_due", "mailbox_resume",
    "person_hold_for_auto_reply", "person_stop_in_transaction", "provider_cancel_request", "provider_cancels_stale",
    "provider_event_record", "provider_event_reject", "provider_send_at_for", "queued_stale",
    "reply_stop_in_transaction", "send_job_authorize", "send_job_claim", "send_job_provider_cancel",
    "send_job_record_failed", "send_job_record_mailbox_refused", "send_job_record_retry", "send_job_record_submitted",
    "send_job_record_unknown", "send_job_record_unpreparable", "send_job_record_unreachable", "send_job_retry",
    "sequence_create", "sequence_pause", "sequence_resume", "sequence_update", "step_delete", "step_jobs_refusal",
    "step_move", "step_save", "step_send_test", "suppression_add", "suppression_add_in_transaction",
    "suppression_import", "suppression_lift",
]
