"""Recording one fetched message: the inbound row, its effect and the cursor, in one durable transaction."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction

from sequences.dbclock import db_now
from sequences.timeline import Event, event_record

from ..imap import FetchedMessage
from ..kinds import Kind
from ..models import ImapCursor, InboundMessage, Mailbox
from .correlate import Correlation, correlate
from .effects import inbound_effects_apply
from .parse import Parsed, clean, parse


@dataclass
class IngestResult:
    inbound_id: int | None
    created: bool
    duplicate: bool = False
    effect: str = ""


def inbound_record(*, mailbox_id: int, folder: str, uidvalidity: int, fetched: FetchedMessage,
                   sent_folder: bool = False) -> IngestResult:
    """Record one fetched message and its effects, and advance the cursor; one durable transaction.

    `sent_folder`: the server marks the folder \\Sent (special-use), so nothing in it is a reply.
    """
    parsed = parse(fetched.raw)  # CPU only, before the transaction
    mailbox = Mailbox.objects.get(pk=mailbox_id)
    correlation = (correlate(parsed, mailbox, fetched.internaldate, folder=folder, sent_folder=sent_folder)
                   if parsed.classification else Correlation())
    try:
        with transaction.atomic(durable=True):
            return _record_locked(mailbox, folder, uidvalidity, fetched, parsed, correlation)
    except IntegrityError:
        # Another poller recorded the same UID (or the same Message-ID) first: a no-op.
        _advance_cursor_alone(mailbox_id, folder, uidvalidity, fetched.uid)
        return IngestResult(None, False, True, "already recorded by a concurrent poll")


def _record_locked(mailbox, folder, uidvalidity, fetched, parsed: Parsed, correlation: Correlation) -> IngestResult:
    existing = InboundMessage.objects.filter(mailbox=mailbox, folder=folder, uidvalidity=uidvalidity,
                                             uid=fetched.uid).first()
    if existing is not None:
        _advance_cursor(mailbox.pk, folder, uidvalidity, fetched.uid)
        return IngestResult(existing.pk, False, True, "same UID seen again: no-op")

    c = parsed.classification
    limit = settings.OUTREACH_INBOUND_RAW_LIMIT
    row = InboundMessage(
        mailbox=mailbox, folder=folder, uidvalidity=uidvalidity, uid=fetched.uid,
        message_id=parsed.message_id, internaldate=fetched.internaldate,
        from_address=parsed.from_address[:320], from_name=clean(parsed.from_name)[:400], subject=parsed.subject,
        headers=parsed.headers, size=fetched.size or len(fetched.raw),
        raw=fetched.raw[:limit], raw_truncated=len(fetched.raw) > limit, parse_error=parsed.error,
        correlation_rule=correlation.rule, job=correlation.job,
        enrollment=correlation.job.enrollment if correlation.job else None,
    )
    if c is None:
        row.kind = Kind.QUARANTINED
    else:
        row.kind = c.kind
        row.bounce_type = c.bounce_type
        row.recipients = list(c.recipients)
        row.status_codes = list(c.status_codes)
        row.classification_reason = c.reason[:2000]
        row.reply_text = c.reply_text[:20000]

    original = None
    if parsed.message_id:
        original = InboundMessage.objects.filter(mailbox=mailbox, message_id=parsed.message_id,
                                                 duplicate_of=None).first()
    if original is not None:
        # The same mail in another folder, or again after a UIDVALIDITY rescan: record, never act twice.
        row.duplicate_of = original
        row.effect = f"copy of inbound #{original.pk}: no action"
        row.save()
        _advance_cursor(mailbox.pk, folder, uidvalidity, fetched.uid)
        return IngestResult(row.pk, True, True, row.effect)

    row.save()
    email = correlation.addresses[0] if correlation.addresses else ""
    event_record(
        kind=Event.INBOUND_RECEIVED, email=email, enrollment=row.enrollment_id, job=row.job_id,
        inbound=row.pk, internaldate=fetched.internaldate.isoformat() if fetched.internaldate else "",
        classified=row.kind, bounce_type=row.bounce_type, rule=row.correlation_rule,
        message_id=parsed.message_id[:300], mailbox=mailbox.name, folder=folder,
    )
    row.effect = inbound_effects_apply(row, correlation, c)
    InboundMessage.objects.filter(pk=row.pk).update(effect=row.effect)
    _advance_cursor(mailbox.pk, folder, uidvalidity, fetched.uid)
    return IngestResult(row.pk, True, False, row.effect)


def _advance_cursor(mailbox_id: int, folder: str, uidvalidity: int, uid: int) -> None:
    ImapCursor.objects.filter(mailbox_id=mailbox_id, folder=folder, uidvalidity=uidvalidity, last_uid__lt=uid
                              ).update(last_uid=uid, updated_at=db_now())


def _advance_cursor_alone(mailbox_id: int, folder: str, uidvalidity: int, uid: int) -> None:
    with transaction.atomic():
        _advance_cursor(mailbox_id, folder, uidvalidity, uid)
