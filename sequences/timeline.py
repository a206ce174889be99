"""Timeline events: written inside the transaction of the change they describe.

`Event` names every kind of event the product writes. Pages, drills and
commands match on these names, so they are members here, never ad-hoc strings.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from django.db import connection

from db.sql import rows_copied
from workspaces.scoping import scoped_workspace_id

from .models import Enrollment, SendJob, TimelineEvent


class Event(StrEnum):
    # Enrollments
    ENROLLED = "enrolled"
    ENROLLMENT_PAUSED = "enrollment_paused"
    ENROLLMENT_STOPPED = "enrollment_stopped"
    ENROLLMENT_RESUMED = "enrollment_resumed"
    ENROLLMENT_COMPLETED = "enrollment_completed"
    ENROLLMENT_REACTIVATED = "enrollment_reactivated"
    # Sequences and mailboxes
    SEQUENCE_PAUSED = "sequence_paused"
    SEQUENCE_RESUMED = "sequence_resumed"
    SEQUENCE_LAUNCHED = "sequence_launched"  # draft -> active: its held jobs may be sent
    VARIANT_STOPPED = "variant_stopped"  # an A/B variant of a step stopped by an operator
    JOB_VARIANT_CHANGED = "job_variant_changed"  # a job not yet prepared given another variant (its was stopped)
    MAILBOX_PAUSED = "mailbox_paused"
    MAILBOX_RESUMED = "mailbox_resumed"
    MAILBOX_BLOCKED = "mailbox_blocked"  # the mailbox as a whole cannot send
    MAILBOX_PROBE_FAILED = "mailbox_probe_failed"
    MAILBOX_UNBLOCKED = "mailbox_unblocked"
    MAILBOX_CONNECT_FAILED = "mailbox_connect_failed"  # the server could not be reached (counted)
    # The mailbox's reply view went blind / reads again: one of each per episode (sequences.services.
    # reply_view_episodes; the episode in progress is Mailbox.reply_view_blind_since); outbound webhooks of the
    # same names.
    MAILBOX_REPLY_VIEW_STALE = "mailbox_reply_view_stale"
    MAILBOX_REPLY_VIEW_RESTORED = "mailbox_reply_view_restored"
    # The IMAP server refused the mailbox's credentials, on any connection: once per run of refusals (the first since
    # a login was accepted; sequences.services.imap_login); outbound webhook `mailbox.credentials_refused`.
    MAILBOX_CREDENTIALS_REFUSED = "mailbox_credentials_refused"
    # The deliverability guardrail paused the mailbox (outbound webhook `mailbox.paused_by_guardrail`), with the
    # figures; an operator's resume silences it for a stated period.
    MAILBOX_PAUSED_BY_GUARDRAIL = "mailbox_paused_by_guardrail"
    GUARDRAIL_SILENCED = "guardrail_silenced"
    # A refusal naming authentication or a blocklist, counted by the guardrail; the domain-authentication check
    # found the records failing, or passing again (sequences.services.domain_auth).
    MAILBOX_REFUSAL_COUNTED = "mailbox_refusal_counted"
    MAILBOX_DOMAIN_AUTH_FAILING = "mailbox_domain_auth_failing"
    MAILBOX_DOMAIN_AUTH_PASSING = "mailbox_domain_auth_passing"
    # Send jobs: one per edge of the job state machine (job_<state>), plus the edges with a name of their own
    JOB_SCHEDULED = "job_scheduled"
    JOB_QUEUED = "job_queued"
    JOB_CLAIMED = "job_claimed"
    JOB_AUTHORIZED = "job_authorized"
    JOB_SUBMITTED = "job_submitted"
    JOB_ACCEPTED = "job_accepted"
    JOB_CANCELED = "job_canceled"
    JOB_FAILED = "job_failed"
    JOB_UNKNOWN = "job_unknown"
    JOB_DEFERRED = "job_deferred"  # claimed -> scheduled: sending window or daily cap
    JOB_RETRY_SCHEDULED = "job_retry_scheduled"  # authorized -> scheduled: transient transport error
    JOB_HELD = "job_held"  # authorized -> scheduled: the mailbox failed as a whole; the message waits for it
    JOB_DELIVERED = "job_delivered"  # submitted -> accepted on a provider's delivery event
    JOB_FAILED_AT_PROVIDER = "job_failed_at_provider"
    JOB_PREPARE_FAILED = "job_prepare_failed"  # claimed -> failed: the message could not be built
    JOB_HELD_OUT_OF_OFFICE = "job_held_out_of_office"  # -> scheduled later: the person is away until a date
    CLAIM_EXPIRED = "claim_expired"  # claimed -> queued: the worker's lease ran out before authorization
    WORKER_LOST = "worker_lost"  # authorized -> unknown: the worker's lease ran out after authorization
    # No-ops: a duplicate or stale delivery found the state moved
    CLAIM_NOOP = "claim_noop"
    AUTHORIZE_NOOP = "authorize_noop"
    SUBMIT_AFTER_STATE_CHANGE = "submit_after_state_change"
    # Scheduled sends at a provider
    PROVIDER_CANCEL_REQUESTED = "provider_cancel_requested"
    PROVIDER_CANCEL_CONFIRMED = "provider_cancel_confirmed"
    PROVIDER_CANCEL_REFUSED = "provider_cancel_refused"
    PROVIDER_CANCEL_FAILED = "provider_cancel_failed"
    PROVIDER_EVENT = "provider_event"
    # The suppression ledger
    SUPPRESSION_ADDED = "suppression_added"
    SUPPRESSION_LIFTED = "suppression_lifted"
    # People
    OUT_OF_OFFICE_HOLD = "out_of_office_hold"  # an auto-reply's return date (and its sentence) holds the person
    CONTACT_ERASED = "contact_erased"  # the person's data removed; only the keyed hash of the address stays
    ERASED_ADDRESS_REFUSED = "erased_address_refused"
    # Ingestion
    INBOUND_RECEIVED = "inbound_received"
    # The replies inbox (inbound.replies): a correlated reply joined the person's conversation (with the suggested
    # category), an operator chose a category, an operator answered from the app.
    REPLY_RECEIVED = "reply_received"
    REPLY_CATEGORIZED = "reply_categorized"
    REPLY_ANSWERED = "reply_answered"
    # A reply rule of the sequence acted on the conversation (inbound.reply_rules): enrolled, assigned, emailed.
    REPLY_RULE_APPLIED = "reply_rule_applied"
    # A booking from Calendly or Cal.com (meetings): the person booked (stopped everywhere; outbound webhook
    # `meeting.booked`), or canceled a booking (recorded only).
    MEETING_BOOKED = "meeting_booked"
    MEETING_CANCELED = "meeting_canceled"
    IMAP_UIDVALIDITY_CHANGED = "imap_uidvalidity_changed"


# Events that stop or pause sending to an enrollment (what an incident page lists as "the stop").
STOP_EVENTS = (
    Event.ENROLLMENT_STOPPED, Event.ENROLLMENT_PAUSED, Event.SEQUENCE_PAUSED, Event.MAILBOX_PAUSED,
    Event.SUPPRESSION_ADDED,
)


def event_record(
    *,
    kind: Event,
    email: str = "",
    enrollment: Enrollment | int | None = None,
    job: SendJob | int | None = None,
    version_seen: int | None = None,
    worker_id: str = "",
    workspace_id: int | None = None,
    **data: Any,
) -> TimelineEvent:
    """Append one event; requires the caller's transaction (stamped by the database clock, its column's default).

    Then every listener hears of it in the same transaction (`listener_add`: the outbound webhooks' outbox).
    """
    assert connection.in_atomic_block, "timeline events are written inside the transition's transaction"
    row = TimelineEvent.objects.create(
        kind=Event(kind).value,
        email=email,
        enrollment_id=enrollment.pk if isinstance(enrollment, Enrollment) else enrollment,
        # An event of a person is its workspace's through the enrollment; one without says the one it was written
        # in: the one named (a ledger entry's part), else the request's.
        workspace_id=None if enrollment is not None else workspace_id or scoped_workspace_id(),
        job_id=job.pk if isinstance(job, SendJob) else job,
        version_seen=version_seen,
        worker_id=worker_id,
        data=data,
    )
    for listener in _listeners:
        listener(row)
    return row


def events_record_many(events: list[TimelineEvent]) -> list[TimelineEvent]:
    """Append many events (unsaved rows) in one INSERT, as event_record appends one; requires the transaction."""
    assert connection.in_atomic_block, "timeline events are written inside the transition's transaction"
    rows = rows_copied(events)
    for row in rows:
        for listener in _listeners:
            listener(row)
    return rows


Listener = Callable[[TimelineEvent], Any]
_listeners: list[Listener] = []


def listener_add(listener: Listener) -> None:
    """Call `listener(event)` after every event is written, inside its transaction. Registered once, at start-up
    (an app's `ready`), so the timeline imports nothing of what follows it."""
    if listener not in _listeners:
        _listeners.append(listener)


def iso(moment) -> str:
    """A timestamp for a timeline event's data: ISO 8601, or '' when there is none."""
    return moment.isoformat() if moment else ""
