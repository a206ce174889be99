"""Reply ingestion: poll IMAP folders, record each message once, correlate, and stop what must stop.

The IMAP conversation happens with no transaction open. Each fetched message
is then committed in its own short durable transaction that writes the inbound
ledger row, its effects (through the send side's stop and suppression
services) and the folder cursor together: a crash between messages loses
nothing and a re-fetch changes nothing.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from email import message_from_bytes
from email.header import decode_header, make_header
from email.policy import compat32
from email.utils import parseaddr
from typing import Callable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from sequences import services
from sequences.dbclock import db_now
from sequences.models import Enrollment, SendJob, Suppression
from sequences.selectors import normalize_email
from sequences.timeline import event_record

from .classify import Classification, classify
from .imap import FetchedMessage, ImapConfig, ImapError, ImapSession, ImapUidValidityError
from .models import ImapCursor, InboundMessage, Mailbox
from .selectors import secret_from_env

log = logging.getLogger("outreach.ingest")
Kind = InboundMessage.Kind
Rule = InboundMessage.Rule
MSGID = re.compile(r"<[^<>\s]+>")
HEADER_LIMIT = 8000  # characters of one header value that are decoded and kept
KEY_HEADERS = ("From", "To", "Cc", "Subject", "Date", "Message-ID", "In-Reply-To", "References", "Return-Path",
               "Auto-Submitted", "Precedence", "Content-Type", "X-Autoreply", "X-Auto-Response-Suppress")


@dataclass
class Parsed:
    """What ingestion needs from a raw message, derived without the database."""

    message_id: str = ""
    from_address: str = ""
    from_name: str = ""
    subject: str = ""
    in_reply_to: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    classification: Classification | None = None
    error: str = ""


def parse(raw: bytes) -> Parsed:
    """Parse and classify; never raises (hostile input is recorded and quarantined)."""
    out = Parsed()
    try:
        # compat32 keeps header values as raw strings: the modern policy's
        # header parser takes seconds on one crafted header of a few KB
        # (found by the bigheader fault drill), which would hold the poller
        # and every reply behind it. Values are cut before they are decoded.
        msg = message_from_bytes(raw, policy=compat32)
        for name in KEY_HEADERS:
            value = msg.get(name)
            if value is not None:
                out.headers[name] = _clean(_header_text(value))[:2000]
        out.message_id = _first_id(out.headers.get("Message-ID", ""))
        out.from_name, address = parseaddr(out.headers.get("From", ""))
        out.from_address = normalize_email(address) if "@" in address else ""
        out.subject = out.headers.get("Subject", "")[:1000]
        out.in_reply_to = MSGID.findall(out.headers.get("In-Reply-To", ""))
        out.references = MSGID.findall(out.headers.get("References", ""))
    except Exception as exc:  # noqa: BLE001 - content must never crash the poller
        out.error = f"header parse failed: {type(exc).__name__}: {exc}"
    try:
        out.classification = classify(raw)
    except Exception as exc:  # noqa: BLE001
        out.error = (out.error + "; " if out.error else "") + f"classifier failed: {type(exc).__name__}: {exc}"
    return out


def _header_text(value: object) -> str:
    text = str(value)[:HEADER_LIMIT]
    try:
        return str(make_header(decode_header(text)))
    except Exception:  # noqa: BLE001 - undecodable words stay as they came
        return text


def _clean(value: str) -> str:
    return value.replace("\x00", "").strip()


def _first_id(value: str) -> str:
    found = MSGID.findall(value)
    return found[0] if found else _clean(value)[:998]


# --- correlation (reads only) -------------------------------------------------------


@dataclass
class Correlation:
    rule: str = Rule.NONE
    job: SendJob | None = None
    addresses: list[str] = field(default_factory=list)  # whose enrollments are affected


def correlate(parsed: Parsed, mailbox: Mailbox) -> Correlation:
    """Tie an inbound message to a message we sent, strongest evidence first."""
    c = parsed.classification
    jobs = SendJob.objects.select_related("enrollment__contact")
    for rule, ids in ((Rule.IN_REPLY_TO, parsed.in_reply_to), (Rule.REFERENCES, list(reversed(parsed.references)))):
        for message_id in ids:
            job = jobs.filter(message_id=message_id).first()
            if job is not None:
                return Correlation(rule, job, [job.enrollment.contact.email])
    if c is not None:
        for message_id in c.original_message_ids:
            job = jobs.filter(message_id=message_id).first()
            if job is not None:
                return Correlation(Rule.EMBEDDED, job, [job.enrollment.contact.email])
        if c.kind in (Kind.BOUNCE, Kind.COMPLAINT) and c.recipients:
            known = [r for r in c.recipients if Enrollment.objects.filter(contact__email=r).exists()]
            if known:
                job = jobs.filter(enrollment__contact__email=known[0]).exclude(submitted_at=None).order_by(
                    "-submitted_at").first()
                return Correlation(Rule.RECIPIENT, job, known)
            return Correlation(Rule.NONE, None, [])
    if parsed.from_address and Enrollment.objects.filter(
        contact__email=parsed.from_address, sequence__mailbox=mailbox
    ).exists():
        job = jobs.filter(enrollment__contact__email=parsed.from_address, enrollment__sequence__mailbox=mailbox
                          ).exclude(submitted_at=None).order_by("-submitted_at").first()
        return Correlation(Rule.SENDER, job, [parsed.from_address])
    return Correlation()


# --- recording one message (one transaction) ---------------------------------------------


@dataclass
class IngestResult:
    inbound_id: int | None
    created: bool
    duplicate: bool = False
    effect: str = ""


def inbound_record(*, mailbox_id: int, folder: str, uidvalidity: int, fetched: FetchedMessage) -> IngestResult:
    """Record one fetched message and its effects, and advance the cursor; one durable transaction."""
    parsed = parse(fetched.raw)  # CPU only, before the transaction
    mailbox = Mailbox.objects.get(pk=mailbox_id)
    correlation = correlate(parsed, mailbox) if parsed.classification else Correlation()
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
        from_address=parsed.from_address[:320], from_name=_clean(parsed.from_name)[:400], subject=parsed.subject,
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
        kind="inbound_received", email=email, enrollment=row.enrollment_id, job=row.job_id,
        inbound=row.pk, internaldate=fetched.internaldate.isoformat() if fetched.internaldate else "",
        classified=row.kind, bounce_type=row.bounce_type, rule=row.correlation_rule,
        message_id=parsed.message_id[:300], mailbox=mailbox.name, folder=folder,
    )
    row.effect = _apply_effects(row, correlation, c)
    InboundMessage.objects.filter(pk=row.pk).update(effect=row.effect)
    _advance_cursor(mailbox.pk, folder, uidvalidity, fetched.uid)
    return IngestResult(row.pk, True, False, row.effect)


STOP_FOR_KIND = {
    Kind.HUMAN_REPLY: Enrollment.StopReason.REPLIED,
}
SUPPRESS_FOR_KIND = {
    Kind.UNSUBSCRIBE_REQUEST: Suppression.Reason.UNSUBSCRIBE,
    Kind.COMPLAINT: Suppression.Reason.COMPLAINT,
}


def _apply_effects(row: InboundMessage, correlation: Correlation, c: Classification | None) -> str:
    """Call the send side's services inside this transaction; returns what was done, in words."""
    source = f"inbound:{row.pk}"
    addresses = correlation.addresses
    if row.kind == Kind.QUARANTINED:
        return f"quarantined: {row.parse_error}"
    if not addresses:
        return "not correlated to anything we sent: recorded only"
    if row.kind == Kind.HUMAN_REPLY:
        enrollments = _enrollments_to_stop(row, correlation)
        summary = services.StopSummary()
        for enrollment_id in enrollments:
            summary.add(services.enrollment_stop_in_transaction(
                enrollment_id=enrollment_id, reason=Enrollment.StopReason.REPLIED, source=source))
        return _describe("stopped (replied)", summary)
    if row.kind in SUPPRESS_FOR_KIND:
        summary = services.StopSummary()
        for address in addresses:
            _, part = services.suppression_add_in_transaction(
                value=address, reason=SUPPRESS_FOR_KIND[row.kind], source=source,
                note=f"{row.get_kind_display()} {row.message_id}"[:500])
            summary.add(part)
        return _describe(f"suppressed ({SUPPRESS_FOR_KIND[row.kind]})", summary)
    if row.kind == Kind.BOUNCE:
        types = dict(zip(c.recipients, c.recipient_types, strict=False)) if c else {}
        return _bounce_effects(row, addresses, types, source)
    if row.kind == Kind.AUTO_REPLY:
        if settings.OUTREACH_AUTO_REPLY_ACTION == "pause":
            summary = services.StopSummary()
            for enrollment_id in _enrollments_to_stop(row, correlation):
                summary.add(services.enrollment_pause_in_transaction(enrollment_id=enrollment_id, source=source))
            return _describe("paused (auto-reply)", summary)
        return "auto-reply recorded; the sequence continues"
    return "recorded only"


def _enrollments_to_stop(row: InboundMessage, correlation: Correlation) -> list[int]:
    """A reply to a message stops its enrollment; a sender-only match stops that address here."""
    if correlation.job is not None and correlation.rule != Rule.SENDER:
        return [correlation.job.enrollment_id]
    return list(
        Enrollment.objects.filter(contact__email__in=correlation.addresses, sequence__mailbox=row.mailbox)
        .exclude(status=Enrollment.Status.STOPPED).values_list("pk", flat=True)
    )


def _bounce_effects(row: InboundMessage, addresses: list[str], types: dict[str, str], source: str) -> str:
    """Hard: suppress now. Soft: suppress once OUTREACH_SOFT_BOUNCE_LIMIT soft bounces are on record."""
    done = []
    summary = services.StopSummary()
    for address in addresses:
        kind = types.get(address, row.bounce_type)
        if kind == "hard":
            _, part = services.suppression_add_in_transaction(
                value=address, reason=Suppression.Reason.HARD_BOUNCE, source=source,
                note=f"{' '.join(row.status_codes)} {row.classification_reason}"[:500])
            summary.add(part)
            done.append(f"{address}: hard bounce, suppressed")
            continue
        limit = settings.OUTREACH_SOFT_BOUNCE_LIMIT
        soft = InboundMessage.objects.filter(kind=Kind.BOUNCE, bounce_type="soft", duplicate_of=None,
                                             enrollment__contact__email=address).count()
        if soft >= limit:
            _, part = services.suppression_add_in_transaction(
                value=address, reason=Suppression.Reason.SOFT_BOUNCES, source=source,
                note=f"{soft} soft bounces (limit {limit})")
            summary.add(part)
            done.append(f"{address}: soft bounce {soft} of {limit}, suppressed")
        else:
            done.append(f"{address}: soft bounce {soft} of {limit}, recorded")
    return "; ".join(done) + (f" ({summary.canceled} jobs canceled)" if summary.canceled else "")


def _describe(what: str, summary: services.StopSummary) -> str:
    return (f"{what}: {summary.enrollments} enrollments, {summary.canceled} jobs canceled (never sent), "
            f"{summary.in_flight} in flight and {summary.submitted} already submitted (cannot recall)")


def _advance_cursor(mailbox_id: int, folder: str, uidvalidity: int, uid: int) -> None:
    ImapCursor.objects.filter(mailbox_id=mailbox_id, folder=folder, uidvalidity=uidvalidity, last_uid__lt=uid
                              ).update(last_uid=uid, updated_at=db_now())


def _advance_cursor_alone(mailbox_id: int, folder: str, uidvalidity: int, uid: int) -> None:
    with transaction.atomic():
        _advance_cursor(mailbox_id, folder, uidvalidity, uid)


# --- polling ------------------------------------------------------------------------


@dataclass
class PollResult:
    mailbox: str
    folders: dict[str, dict[str, int]] = field(default_factory=dict)
    error: str = ""

    @property
    def fetched(self) -> int:
        return sum(f["fetched"] for f in self.folders.values())


def imap_config_for(mailbox: Mailbox) -> ImapConfig:
    return ImapConfig(host=mailbox.imap_host, port=mailbox.imap_port, username=mailbox.imap_username,
                      password=secret_from_env(mailbox.imap_password_env), security=mailbox.imap_security,
                      timeout=settings.OUTREACH_IMAP_TIMEOUT)


def cursor_for(mailbox: Mailbox, folder: str) -> ImapCursor:
    cursor, _ = ImapCursor.objects.get_or_create(mailbox=mailbox, folder=folder)
    return cursor


def cursor_reset(cursor: ImapCursor, uidvalidity: int, highestmodseq: int | None) -> None:
    """A new UIDVALIDITY: every UID we knew is void, so rescan the folder from the start.

    Message-ID deduplication makes the rescan harmless: nothing acts twice.
    """
    first_sight = cursor.uidvalidity is None
    with transaction.atomic(durable=True):
        ImapCursor.objects.filter(pk=cursor.pk).update(
            uidvalidity=uidvalidity, last_uid=0, highestmodseq=highestmodseq,
            rescans=F("rescans") + (0 if first_sight else 1), updated_at=db_now())
        if not first_sight:
            event_record(kind="imap_uidvalidity_changed", mailbox=cursor.mailbox.name, folder=cursor.folder,
                         old=cursor.uidvalidity, new=uidvalidity)


def mailbox_poll(*, mailbox_id: int, batch_size: int = 200,
                 progress: Callable[[str, int, int], None] | None = None) -> PollResult:
    """One pass over a mailbox's folders. No transaction is open during IMAP I/O."""
    mailbox = Mailbox.objects.get(pk=mailbox_id)
    result = PollResult(mailbox=mailbox.name)
    if not mailbox.has_imap:
        result.error = "no IMAP settings"
        return result
    try:
        with ImapSession(imap_config_for(mailbox)) as session:
            for folder in mailbox.imap_folders or ["INBOX"]:
                result.folders[folder] = _poll_folder(session, mailbox, folder, batch_size, progress)
    except ImapError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        log.warning("poll of mailbox %s failed: %s", mailbox.name, result.error)
        Mailbox.objects.filter(pk=mailbox.pk).update(last_poll_at=db_now(), last_poll_error=result.error[:2000],
                                                     poll_failures=F("poll_failures") + 1)
        raise
    Mailbox.objects.filter(pk=mailbox.pk).update(last_poll_at=db_now(), last_poll_ok_at=db_now(),
                                                 last_poll_error="", poll_failures=0)
    return result


def _poll_folder(session: ImapSession, mailbox: Mailbox, folder: str, batch_size: int, progress) -> dict[str, int]:
    cursor = cursor_for(mailbox, folder)
    counts = {"fetched": 0, "recorded": 0, "duplicates": 0}
    status = session.select(folder)
    if cursor.uidvalidity != status.uidvalidity:
        if cursor.uidvalidity is not None:
            log.warning("mailbox %s folder %s: UIDVALIDITY %s -> %s, rescanning", mailbox.name, folder,
                        cursor.uidvalidity, status.uidvalidity)
        cursor_reset(cursor, status.uidvalidity, status.highestmodseq)
        cursor.refresh_from_db()
    pending = len(session.uids_after(cursor.last_uid))
    try:
        for batch in session.iter_new(folder, cursor.last_uid, batch_size, uidvalidity=cursor.uidvalidity):
            for fetched in batch:
                outcome = inbound_record(mailbox_id=mailbox.pk, folder=folder, uidvalidity=cursor.uidvalidity,
                                         fetched=fetched)
                counts["fetched"] += 1
                counts["recorded"] += outcome.created
                counts["duplicates"] += outcome.duplicate
            if progress:
                progress(folder, counts["fetched"], pending)
    except ImapUidValidityError:
        # Changed between our SELECT and the listing: the next pass rescans.
        log.warning("mailbox %s folder %s: UIDVALIDITY changed during the pass", mailbox.name, folder)
    if status.highestmodseq is not None:
        ImapCursor.objects.filter(pk=cursor.pk).update(highestmodseq=status.highestmodseq)
    return counts
