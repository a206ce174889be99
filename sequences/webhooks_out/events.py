"""Which timeline events a webhook receiver hears about, under which name, with which data.

Pure: a timeline event (kind, email, ids, data) in, a webhook event type and
its `data` out, or None. Only events tied to a message we sent become
`contact.replied`, `message.bounced` and `message.complained` (ingestion
records the correlated job; uncorrelated mail has none and stays silent).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ..labels import stop_summary_lines
from ..stop_summary import StopSummary
from ..timeline import Event


class WebhookEvent(StrEnum):
    CONTACT_REPLIED = "contact.replied"
    ENROLLMENT_STOPPED = "enrollment.stopped"
    MESSAGE_SUBMITTED = "message.submitted"
    MESSAGE_BOUNCED = "message.bounced"
    MESSAGE_COMPLAINED = "message.complained"
    CONTACT_UNSUBSCRIBED = "contact.unsubscribed"
    MAILBOX_BLOCKED = "mailbox.blocked"
    # Written by the mailbox guardrails (timeline kind "mailbox_paused_by_guardrail"); known here so that
    # endpoints can subscribe before the first one happens.
    MAILBOX_PAUSED_BY_GUARDRAIL = "mailbox.paused_by_guardrail"
    # Once per episode: the mailbox stopped reading its replies for longer than its reply_view_max_age
    # (follow-ups held), and when it reads them again.
    MAILBOX_REPLY_VIEW_STALE = "mailbox.reply_view_stale"
    MAILBOX_REPLY_VIEW_RESTORED = "mailbox.reply_view_restored"
    # The IMAP server refused the mailbox's credentials (on a poll, the IDLE watcher's login or a check), with its
    # words: at once, once until a login is accepted again. Its follow-ups are held meanwhile.
    MAILBOX_CREDENTIALS_REFUSED = "mailbox.credentials_refused"
    # The replies inbox: a correlated reply joined the person's conversation (with the suggested category), and
    # an operator chose a category.
    REPLY_RECEIVED = "reply.received"
    REPLY_CATEGORIZED = "reply.categorized"
    # A booking made through Calendly or Cal.com stopped the person everywhere (meetings).
    MEETING_BOOKED = "meeting.booked"


GUARDRAIL_KIND = "mailbox_paused_by_guardrail"
# Timeline kinds that may become a webhook event: anything else is skipped without a query.
KINDS = frozenset(
    {
        Event.INBOUND_RECEIVED,
        Event.ENROLLMENT_STOPPED,
        Event.JOB_SUBMITTED,
        Event.PROVIDER_EVENT,
        Event.SUPPRESSION_ADDED,
        Event.MAILBOX_BLOCKED,
        Event.MAILBOX_REPLY_VIEW_STALE,
        Event.MAILBOX_REPLY_VIEW_RESTORED,
        Event.MAILBOX_CREDENTIALS_REFUSED,
        GUARDRAIL_KIND,
        Event.REPLY_RECEIVED,
        Event.REPLY_CATEGORIZED,
        Event.MEETING_BOOKED,
    }
)
PROVIDER_EVENT = {"bounced": WebhookEvent.MESSAGE_BOUNCED, "complained": WebhookEvent.MESSAGE_COMPLAINED}


def webhook_event_for(
    kind: str, *, email: str, enrollment_id: int | None, job_id: int | None, data: dict[str, Any]
) -> tuple[WebhookEvent, dict[str, Any]] | None:
    """The webhook event a timeline event becomes, with its data; None when receivers do not hear of it."""
    ids = {"email": email, "enrollment_id": enrollment_id, "job_id": job_id}
    if kind == Event.INBOUND_RECEIVED:
        # The inbound side names the webhook its kind of mail becomes (inbound.kinds.WEBHOOK_OF_KIND).
        event = WebhookEvent(data["webhook"]) if data.get("webhook") in WebhookEvent else None
        if event is None or job_id is None:
            return None
        keep = ("inbound", "internaldate", "bounce_type", "rule", "message_id", "mailbox")
        return event, ids | {k: data.get(k, "") for k in keep}
    if kind == Event.PROVIDER_EVENT:
        event = PROVIDER_EVENT.get(data.get("event_type", ""))
        if event is None or job_id is None:
            return None
        return event, ids | {k: data.get(k, "") for k in ("provider", "event_id", "occurred_at", "effect")}
    if kind == Event.ENROLLMENT_STOPPED:
        summary = StopSummary(
            canceled=data.get("canceled", 0), in_flight=data.get("in_flight", 0), submitted=data.get("submitted", 0)
        )
        return WebhookEvent.ENROLLMENT_STOPPED, ids | {
            "reason": data.get("reason", ""),
            "source": data.get("source", ""),
            "canceled": summary.canceled,
            "in_flight": summary.in_flight,
            "already_submitted": summary.submitted,
            "summary": stop_summary_lines(summary),
        }
    if kind == Event.JOB_SUBMITTED:
        return WebhookEvent.MESSAGE_SUBMITTED, ids | {"step": data.get("step")}
    if kind == Event.SUPPRESSION_ADDED:
        if data.get("reason") != "unsubscribe" or email.startswith("@"):
            return None
        return WebhookEvent.CONTACT_UNSUBSCRIBED, ids | {"source": data.get("source", "")}
    if kind == Event.MAILBOX_BLOCKED:
        return WebhookEvent.MAILBOX_BLOCKED, {"mailbox": data.get("mailbox", ""), "reason": data.get("reason", "")}
    if kind == Event.MAILBOX_REPLY_VIEW_STALE:
        keep = ("mailbox", "read_through", "blind_since", "max_age_seconds", "reason")
        return WebhookEvent.MAILBOX_REPLY_VIEW_STALE, {k: data.get(k, "") for k in keep}
    if kind == Event.MAILBOX_REPLY_VIEW_RESTORED:
        keep = ("mailbox", "read_through", "blind_since", "max_age_seconds")
        return WebhookEvent.MAILBOX_REPLY_VIEW_RESTORED, {k: data.get(k, "") for k in keep}
    if kind == Event.MAILBOX_CREDENTIALS_REFUSED:
        keep = ("mailbox", "side", "connection", "reason", "refused_at", "next_attempt_at")
        return WebhookEvent.MAILBOX_CREDENTIALS_REFUSED, {k: data.get(k, "") for k in keep}
    if kind == Event.REPLY_RECEIVED:
        keep = ("conversation", "inbound", "suggested", "phrase", "confidence", "mailbox")
        return WebhookEvent.REPLY_RECEIVED, ids | {k: data.get(k, "") for k in keep}
    if kind == Event.REPLY_CATEGORIZED:
        keep = ("conversation", "category", "previous", "suggested", "by")
        return WebhookEvent.REPLY_CATEGORIZED, ids | {k: data.get(k, "") for k in keep}
    if kind == Event.MEETING_BOOKED:
        keep = ("provider", "source", "booking", "event", "start_time", "matched_by", "stopped", "canceled",
                "conversation")
        return WebhookEvent.MEETING_BOOKED, ids | {k: data.get(k, "") for k in keep}
    if kind == GUARDRAIL_KIND:
        # The mailbox, the reason in words and the figures the guardrail decided on.
        return WebhookEvent.MAILBOX_PAUSED_BY_GUARDRAIL, dict(data)
    return None
