"""Recording fetched mail: the inbound row, its effect and the cursor, committed together.

A message that may act (correlated to something we sent, or machine-generated) is committed in its
own durable transaction with its effects. Mail that cannot act is stored as metadata only and many
such rows go in one transaction with the cursor advance (``metadata_batch_record``): a crash loses
nothing and re-fetches at most one batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db import DataError, IntegrityError, transaction
from django.db.models import Q

from db.clock import DbClock
from mailboxes.imap.fetch import FetchedMessage
from mailboxes.models import ImapCursor, Mailbox
from sequences.timeline import Event, event_record
from workspaces.scoping import workspace_scope

from ..handling import WEBHOOK_OF_KIND
from ..kinds import Kind
from ..models import InboundMessage
from ..replies.services import conversation_record_in_transaction
from .correlate import Correlation, correlate
from .effects import NOT_CORRELATED, inbound_effects_apply
from .minimise import source_kept
from .parse import Parsed, clean, parse

Content = InboundMessage.Content
Rule = InboundMessage.Rule
# Errors that the content of one message can cause; anything else (the database gone) is the poll's.
CONTENT_ERRORS = (DataError, ValueError, TypeError, LookupError, RecursionError)


@dataclass
class Recorded:
    """What a folder holds already, for the messages of one batch (read once; kept up to date by the batch)."""

    uids: dict[int, int] = field(default_factory=dict)  # UID -> its row
    originals: dict[str, int] = field(default_factory=dict)  # Message-ID -> the first row of it (not a copy)

    def add(self, rows) -> None:
        """Rows just committed: their UIDs, and the first row of each Message-ID."""
        for row in rows:
            if row.pk is None:
                continue
            self.uids[row.uid] = row.pk
            if row.message_id and row.duplicate_of_id is None:
                self.originals.setdefault(row.message_id, row.pk)


def recorded_for(mailbox: Mailbox, folder: str, uidvalidity: int, uids: list[int], message_ids: list[str]
                 ) -> Recorded:
    """Of these UIDs and Message-IDs, what the mailbox recorded already: one query.

    Read before the messages' transactions, as the per-message read was: the unique constraints on UID and
    on the first row of a Message-ID decide between two pollers (the second one's insert fails, a no-op)."""
    ids = [i for i in message_ids if i]
    same_id = Q(message_id__in=ids, duplicate_of=None) if ids else Q(pk__in=[])
    found = Recorded()
    for pk, row_folder, row_uidvalidity, uid, message_id, duplicate_of in InboundMessage.objects.filter(
            Q(folder=folder, uidvalidity=uidvalidity, uid__in=uids) | same_id, mailbox=mailbox).values_list(
            "pk", "folder", "uidvalidity", "uid", "message_id", "duplicate_of"):
        if (row_folder, row_uidvalidity) == (folder, uidvalidity) and uid in uids:
            found.uids[uid] = pk
        if message_id in ids and duplicate_of is None:
            found.originals.setdefault(message_id, pk)
    return found


@dataclass
class IngestResult:
    inbound_id: int | None
    created: bool
    duplicate: bool = False
    effect: str = ""


def inbound_record(*, mailbox_id: int, mailbox: Mailbox | None = None, **rest) -> IngestResult:
    """Record one fetched message and its effects (`_inbound_record`) inside the mailbox's workspace: what it
    correlates with, stops and suppresses is that workspace's (and the ledger entries it writes are its part)."""
    mailbox = mailbox if mailbox is not None else Mailbox.objects.get(pk=mailbox_id)
    with workspace_scope(mailbox.workspace_id, with_unowned=True):
        return _inbound_record(mailbox_id=mailbox_id, mailbox=mailbox, **rest)


def _inbound_record(*, mailbox_id: int, folder: str, uidvalidity: int, fetched: FetchedMessage,
                    mailbox: Mailbox, known: dict | None = None,
                    looked_up: frozenset[str] | set[str] = frozenset(), recorded: Recorded | None = None,
                    sent_folder: bool = False) -> IngestResult:
    """Record one fetched message and its effects, and advance the cursor; one durable transaction.

    *mailbox*, *known* (our jobs by Message-ID) and *looked_up* (the Message-IDs that lookup asked about)
    save the poller queries it made for the whole batch already, and so does *recorded* (what the folder
    holds of the batch's UIDs and Message-IDs; this message is added to it once committed).
    `sent_folder`: the server marks the folder \\Sent (special-use), so nothing in it is a reply.
    A message whose parsing, classification or recording still fails is quarantined: recorded as
    metadata with the reason in words, and the cursor moves on.
    """
    try:
        parsed = parse(fetched.raw)  # CPU only, before the transaction
        correlation = (correlate(parsed, mailbox, fetched.internaldate, known=known, looked_up=looked_up,
                                 folder=folder, sent_folder=sent_folder, raw=fetched.raw)
                       if parsed.classification else Correlation())
        kept = None  # CPU only too: what is stored of a report or automatic answer tied by an address alone
        if parsed.classification and source_minimised(correlation, parsed.classification.kind):
            kept = source_kept(fetched.raw, recipients=correlation.addresses, our_ids=correlation.our_originals)
        if recorded is None:
            recorded = recorded_for(mailbox, folder, uidvalidity, [fetched.uid], [parsed.message_id])
        with transaction.atomic(durable=True):
            result, row = _record_locked(mailbox, folder, uidvalidity, fetched, parsed, correlation, recorded, kept)
        if row is not None:
            recorded.add([row])
        return result
    except IntegrityError:
        # Another poller recorded the same UID (or the same Message-ID) first: a no-op.
        _advance_cursor_alone(mailbox_id, folder, uidvalidity, fetched.uid)
        return IngestResult(None, False, True, "already recorded by a concurrent poll")
    except CONTENT_ERRORS as exc:
        return _quarantine(mailbox, folder, uidvalidity, fetched, f"could not be recorded: {type(exc).__name__}")


def content_for(correlation: Correlation) -> str:
    """Full content only for mail tied to something we sent (a probable reply too: an operator reads it).

    Machine mail that names nothing we sent is metadata only like any unrelated mail: a bounce or an
    auto-reply to the owner's own mail returns or quotes that private mail. Its kind, rule, status codes and
    what it did (nothing, and why) stay as evidence. Tied by an address alone, such mail keeps its header and
    its report's fields, not its text (``source_minimised``).
    """
    tied = correlation.job is not None or correlation.colleague is not None
    return Content.FULL if tied else Content.METADATA


# What a machine writes about a message: a report returns it, an automatic answer quotes it.
ABOUT_A_MESSAGE = (Kind.BOUNCE, Kind.COMPLAINT, Kind.AUTO_REPLY, Kind.AUTH_FAILURE)
BY_ADDRESS = (Rule.RECIPIENT, Rule.SENDER)


def source_minimised(correlation: Correlation, kind: str) -> bool:
    """Whether only the header and the report's fields about our recipients are stored (inbound.ingest.minimise).

    A report or an automatic answer tied to us by an address alone may be about the owner's own mail to that
    person, which it returns or quotes: it acts on the message as received, and keeps none of that mail.
    Tied by a Message-ID we generated (In-Reply-To, References, the returned original's), what it returns or
    quotes is our own message: kept whole, to explain what it did, until the retention period ends.
    """
    return correlation.rule in BY_ADDRESS and kind in ABOUT_A_MESSAGE


def metadata_row(mailbox: Mailbox, folder: str, uidvalidity: int, fetched: FetchedMessage, message_id: str, *,
                 kind: str = Kind.UNRELATED, effect: str = NOT_CORRELATED, rule: str = InboundMessage.Rule.NONE,
                 parse_error: str = "") -> InboundMessage:
    """An unsaved metadata-only row: no body, subject, raw source, sender or headers."""
    return InboundMessage(
        mailbox=mailbox, folder=folder, uidvalidity=uidvalidity, uid=fetched.uid, message_id=message_id[:998],
        internaldate=fetched.internaldate, size=fetched.size or len(fetched.raw), kind=kind,
        correlation_rule=rule, effect=effect, parse_error=parse_error[:2000], content=Content.METADATA)


def metadata_batch_record(*, folder: str, uidvalidity: int, rows: list[InboundMessage], last_uid: int) -> dict:
    """Write metadata-only rows and advance the cursor to *last_uid*, in one durable transaction.

    Rows whose UID is already recorded are skipped; a second copy of a Message-ID (another folder, a
    rescan, twice in this batch) is recorded as a copy of the first.
    """
    counts = {"recorded": 0, "duplicates": 0}
    if not rows:
        return counts
    mailbox = rows[0].mailbox
    try:
        with transaction.atomic(durable=True):
            _metadata_rows_write(mailbox, folder, uidvalidity, rows, counts)
            _advance_cursor(mailbox.pk, folder, uidvalidity, last_uid)
    except IntegrityError:
        # A concurrent poll recorded some of them first: theirs stand.
        counts = {"recorded": 0, "duplicates": len(rows)}
        _advance_cursor_alone(mailbox.pk, folder, uidvalidity, last_uid)
    return counts


def _metadata_rows_write(mailbox, folder, uidvalidity, rows: list[InboundMessage], counts: dict) -> None:
    seen_uids = set(InboundMessage.objects.filter(mailbox=mailbox, folder=folder, uidvalidity=uidvalidity,
                                                  uid__in=[r.uid for r in rows]).values_list("uid", flat=True))
    fresh = [r for r in rows if r.uid not in seen_uids]
    counts["duplicates"] += len(rows) - len(fresh)
    ids = {r.message_id for r in fresh if r.message_id}
    originals = dict(InboundMessage.objects.filter(mailbox=mailbox, message_id__in=ids, duplicate_of=None)
                     .values_list("message_id", "pk")) if ids else {}
    firsts, copies, first_ids = [], [], set(originals)
    for row in fresh:
        (copies if row.message_id and row.message_id in first_ids else firsts).append(row)
        first_ids.add(row.message_id)
    InboundMessage.objects.bulk_create(firsts)
    originals.update({r.message_id: r.pk for r in firsts if r.message_id})
    for row in copies:
        row.duplicate_of_id = originals[row.message_id]
        row.effect = f"copy of inbound #{row.duplicate_of_id}: no action"
    InboundMessage.objects.bulk_create(copies)
    counts["recorded"] += len(firsts) + len(copies)
    counts["duplicates"] += len(copies)


def _quarantine(mailbox: Mailbox, folder: str, uidvalidity: int, fetched: FetchedMessage, reason: str
                ) -> IngestResult:
    row = metadata_row(mailbox, folder, uidvalidity, fetched, "", kind=Kind.QUARANTINED,
                       effect=f"quarantined: {reason}", parse_error=reason)
    counts = metadata_batch_record(folder=folder, uidvalidity=uidvalidity, rows=[row], last_uid=fetched.uid)
    return IngestResult(row.pk, bool(counts["recorded"]), bool(counts["duplicates"]), row.effect)


def _record_locked(mailbox, folder, uidvalidity, fetched, parsed: Parsed, correlation: Correlation,
                   recorded: Recorded, kept: bytes | None = None) -> tuple[IngestResult, InboundMessage | None]:
    """The message's row, its event and effects, and the cursor: what one message's transaction writes.

    *kept*: the part of the source that is stored instead of all of it (``source_minimised``); the effects
    still read the message as received."""
    existing = recorded.uids.get(fetched.uid)
    if existing is not None:
        _advance_cursor(mailbox.pk, folder, uidvalidity, fetched.uid)
        return IngestResult(existing, False, True, "same UID seen again: no-op"), None

    c = parsed.classification
    kind = c.kind if c is not None else Kind.QUARANTINED
    limit = settings.OUTREACH_INBOUND_RAW_LIMIT
    if content_for(correlation) == Content.METADATA:
        row = metadata_row(mailbox, folder, uidvalidity, fetched, parsed.message_id, kind=kind,
                           rule=correlation.rule, parse_error=parsed.error)
        if c is not None:  # what the report said in codes, never whose or what mail it returned
            row.bounce_type, row.status_codes = c.bounce_type, list(c.status_codes)
    else:
        raw, recipients, reply_text = fetched.raw, list(c.recipients), c.reply_text
        if kept is not None:  # its header and the report's fields about our recipients only
            raw, reply_text = kept, ""
            recipients = [r for r in recipients if r in correlation.addresses]
        row = InboundMessage(
            mailbox=mailbox, folder=folder, uidvalidity=uidvalidity, uid=fetched.uid,
            message_id=parsed.message_id, internaldate=fetched.internaldate,
            from_address=parsed.from_address[:320], from_name=clean(parsed.from_name)[:400], subject=parsed.subject,
            headers=parsed.headers, size=fetched.size or len(fetched.raw), kind=kind,
            raw=raw[:limit], raw_truncated=kept is not None or len(raw) > limit or fetched.truncated,
            parse_error=parsed.error, correlation_rule=correlation.rule, job=correlation.job,
            enrollment=correlation.job.enrollment if correlation.job else None,
            bounce_type=c.bounce_type, recipients=recipients, status_codes=list(c.status_codes),
            classification_reason=c.reason[:2000], reply_text=reply_text[:20000],
        )

    original = recorded.originals.get(parsed.message_id) if parsed.message_id else None
    if original is not None:
        # The same mail in another folder, or again after a UIDVALIDITY rescan: record, never act twice.
        row.duplicate_of_id = original
        row.effect = f"copy of inbound #{original}: no action"
        row.save()
        _advance_cursor(mailbox.pk, folder, uidvalidity, fetched.uid)
        return IngestResult(row.pk, True, True, row.effect), row

    arrived = dict(
        kind=Event.INBOUND_RECEIVED, email=correlation.addresses[0] if correlation.addresses else "",
        enrollment=row.enrollment_id, job=row.job_id,
        internaldate=fetched.internaldate.isoformat() if fetched.internaldate else "", classified=row.kind,
        webhook=WEBHOOK_OF_KIND.get(row.kind, ""), bounce_type=row.bounce_type, rule=row.correlation_rule,
        message_id=parsed.message_id[:300], mailbox=mailbox.name, folder=folder,
    )
    row.save(force_insert=True)
    _advance_cursor(mailbox.pk, folder, uidvalidity, fetched.uid)
    if row.content == Content.FULL:
        event_record(**arrived, inbound=row.pk)
    row.effect = inbound_effects_apply(row, correlation, c, raw=fetched.raw[:limit])  # as received, not as kept
    InboundMessage.objects.filter(pk=row.pk).update(effect=row.effect)
    if row.content == Content.FULL:
        conversation_record_in_transaction(row=row)  # the replies inbox: a correlated reply joins its conversation
    return IngestResult(row.pk, True, False, row.effect), row


def _advance_cursor(mailbox_id: int, folder: str, uidvalidity: int, uid: int) -> None:
    """Move the folder's cursor forward to `uid` (never back), stamped by the database clock."""
    ImapCursor.objects.filter(mailbox_id=mailbox_id, folder=folder, uidvalidity=uidvalidity, last_uid__lt=uid).update(
        last_uid=uid, updated_at=DbClock())


def _advance_cursor_alone(mailbox_id: int, folder: str, uidvalidity: int, uid: int) -> None:
    with transaction.atomic():
        _advance_cursor(mailbox_id, folder, uidvalidity, uid)
