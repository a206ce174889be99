"""Booking sources (an admin's add, edit, delete) and the bookings they send: each event checked, recorded once,
and acted on in one transaction.

A booking (Calendly `invitee.created`, Cal.com `BOOKING_CREATED` or `BOOKING_RESCHEDULED`) names a person: the
contact its booking link's token names (sequences.booking_token), else the contact with the invitee's address.
That person is stopped in every sequence and mailbox through the stop path a reply takes
(`person_stop_in_transaction`: the enrollments locked, every job not past authorization canceled, what had left
counted), their conversation says Meeting booked (one is made, on the enrollment we last wrote to them from, when
they never replied), and the timeline's `meeting_booked` event becomes the outbound webhook `meeting.booked`.
A cancellation is recorded and changes nothing else; an invitee we know nothing of is recorded with no effect.

Refused, never stored: a request whose signature does not check out, a Calendly signature older than five minutes
(the source keeps the latest refusal in words, for its settings page). Recorded once: an event id seen before
(a replay, or a provider's retry) finds its row and does nothing again. Lock order: the person's enrollments
(sequences.locks), then their conversation rows, as ingestion does.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse

from db.clock import DbClock, db_clock_written, db_now
from inbound.kinds import Category
from inbound.models import Conversation
from mailboxes.sealed import NoEncryptionKey, SealedSecretUnreadable, seal, unseal
from sequences.booking_token import booking_token_read
from sequences.labels import stop_summary_text
from sequences.models import Contact, Enrollment, SendJob
from sequences.selectors import normalize_email
from sequences.sending_mailbox import enrollment_mailbox_id
from sequences.services.common import ServiceError, operator_log
from sequences.services.stops import person_stop_in_transaction
from sequences.stop_summary import StopSummary
from sequences.storable import unstorable
from sequences.timeline import Event, event_record
from workspaces.scoping import workspace_scope

from . import providers
from .models import BookingEvent, BookingSource
from .providers import Booking, Refused

log = logging.getLogger("outreach.meetings")
P = BookingSource.Provider
K = BookingEvent.Kind
R = BookingEvent.Result
BOOKS = (K.BOOKED, K.RESCHEDULED)
MAX_SECRET = 500


# --- sources (admins) ----------------------------------------------------------------------------


def booking_source_url(source: BookingSource) -> str:
    """The receiving URL to paste into Calendly or Cal.com."""
    return settings.OUTREACH_PUBLIC_URL.rstrip("/") + reverse("booking_webhook", kwargs={"slug": source.slug})


def _secret_sealed(secret: str) -> str:
    secret = secret.strip()
    if len(secret) < 16 or len(secret) > MAX_SECRET:
        raise ServiceError(f"the signing key must be 16 to {MAX_SECRET} characters (Calendly's and Cal.com's are "
                           "longer than 16; make one with `openssl rand -hex 32`)")
    if unstorable(secret):
        raise ServiceError("the signing key holds a NUL character or a lone surrogate: no provider sends one")
    try:
        return seal(secret)
    except NoEncryptionKey as exc:
        raise ServiceError(f"{exc} — {exc.hint}") from None


def _source_check(name: str, provider: str, exclude: int | None = None) -> str:
    name = name.strip()
    if not name or len(name) > 100 or unstorable(name):
        raise ServiceError("a booking source needs a name of 1 to 100 characters (no NUL, no lone surrogate)")
    if provider not in P.values:
        raise ServiceError(f"unknown provider {provider!r}: one of {', '.join(P.values)}")
    if BookingSource.objects.filter(name=name).exclude(pk=exclude).exists():
        raise ServiceError(f"there is a booking source named {name!r} already")
    return name


def booking_source_create(*, name: str, provider: str, secret: str, actor: str) -> BookingSource:
    """A new source with a random receiving URL; its signing key sealed at once (never shown again)."""
    name = _source_check(name, provider)
    sealed = _secret_sealed(secret)
    with transaction.atomic(durable=True):
        source = BookingSource.objects.create(name=name, provider=provider, secret_sealed=sealed,
                                              slug=secrets.token_urlsafe(24))
        operator_log(actor=actor, action="booking_source_add", target=f"booking source {name}",
                     result={"provider": provider})
    return source


def booking_source_update(*, source_id: int, name: str, provider: str, secret: str, actor: str) -> BookingSource:
    """Rename, change provider, or replace the signing key ("" keeps it); the receiving URL stays."""
    name = _source_check(name, provider, exclude=source_id)
    sealed = _secret_sealed(secret) if secret.strip() else ""
    with transaction.atomic(durable=True):
        source = BookingSource.objects.select_for_update().filter(pk=source_id).first()
        if source is None:
            raise ServiceError(f"booking source {source_id} does not exist")
        changed = {k: v for k, v in (("name", name), ("provider", provider)) if getattr(source, k) != v}
        fields = dict(changed, **({"secret_sealed": sealed} if sealed else {}))
        if fields:
            BookingSource.objects.filter(pk=source_id).update(**fields)
            operator_log(actor=actor, action="booking_source_edit", target=f"booking source {name}",
                         result={k: str(v) for k, v in changed.items()} | ({"signing key": "replaced"} if sealed
                                                                          else {}))
    source.refresh_from_db()
    return source


def booking_source_delete(*, source_id: int, actor: str) -> str:
    """Delete a source (its URL then answers 404); the bookings it received stay, with its name. Its name."""
    with transaction.atomic(durable=True):
        source = BookingSource.objects.select_for_update().filter(pk=source_id).first()
        if source is None:
            raise ServiceError(f"booking source {source_id} does not exist")
        name = source.name
        source.delete()
        operator_log(actor=actor, action="booking_source_delete", target=f"booking source {name}", result={})
    return name


# --- receiving ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What the receiver answers the provider: an HTTP status and what was done, in words."""

    status: int
    words: str


def booking_receive(*, slug: str, headers: Mapping[str, str], body: bytes) -> Answer:
    """Check, record and apply one event posted to a source's URL. Refusals are logged on the source only."""
    source = BookingSource._base_manager.filter(slug=slug).first()  # the URL's key finds it in any workspace
    if source is None:
        return Answer(404, "no booking source has this address")
    if len(body) > providers.MAX_BODY:
        return _refused(source, Refused(f"the body is over {providers.MAX_BODY} bytes", status=413))
    try:
        key = unseal(source.secret_sealed, what=f"signing key of booking source {source.name}")
    except SealedSecretUnreadable as exc:
        log.error("booking source %s: %s", source.name, exc)
        return Answer(503, "this source's signing key cannot be read here (encryption keys): nothing was done")
    try:
        if source.provider == P.CALENDLY:
            providers.calendly_verify(headers.get(providers.CALENDLY_HEADER, ""), body, key,
                                      now=db_now().timestamp())
            booking = providers.calendly_read(providers.body_json(body), body)
        else:
            providers.calcom_verify(headers.get(providers.CALCOM_HEADER, ""), body, key)
            data = providers.body_json(body)
            if data.get("triggerEvent") == providers.CALCOM_PING:
                return Answer(200, "ping received: the signature checks out")
            booking = providers.calcom_read(data, body)
    except Refused as refused:
        return _refused(source, refused)
    # The booking stops (and is matched to) the people of the source's workspace only.
    with workspace_scope(source.workspace_id, with_unowned=True):
        return booking_apply(source=source, booking=booking)


def _refused(source: BookingSource, refused: Refused) -> Answer:
    words = f"refused: {refused}"
    BookingSource.objects.filter(pk=source.pk).update(last_refused_at=DbClock(), last_refusal=words[:300])
    log.warning("booking source %s: %s", source.name, words)
    return Answer(refused.status, words)


def booking_apply(*, source: BookingSource, booking: Booking) -> Answer:
    """Record the event once and do what it says, in one durable transaction; a replay does nothing."""
    with transaction.atomic(durable=True):
        try:
            with transaction.atomic():
                row = BookingEvent.objects.create(
                    workspace_id=source.workspace_id,
                    source=source, source_name=source.name, provider=source.provider, event_id=booking.event_id,
                    event_type=booking.event_type, kind=booking.kind, invitee_email=booking.email[:254],
                    payload=booking.minimal())
        except IntegrityError:
            seen = BookingEvent.objects.filter(source=source, event_id=booking.event_id).first()
            when = f" at {seen.received_at:%Y-%m-%d %H:%M:%S} UTC" if seen else ""
            return Answer(200, f"replay: this event ({booking.event_type}) was received already{when}; "
                               "nothing was done again")
        contact, matched_by, how = _person(booking)
        if booking.kind == K.OTHER:
            result, effect = R.RECORDED, f"{booking.event_type}: recorded; this event changes nothing"
        elif contact is None:
            result, effect = R.UNKNOWN_INVITEE, (f"unknown invitee: {how}; nothing changed")
        elif booking.kind in BOOKS:
            result, effect = R.STOPPED, _booked(source, booking, row, contact, matched_by)
        else:
            result, effect = R.RECORDED, _canceled(source, booking, row, contact, matched_by)
        BookingEvent.objects.filter(pk=row.pk).update(contact=contact, matched_by=matched_by, result=result,
                                                      effect=effect)
    log.info("booking source %s: %s %s -> %s", source.name, booking.event_type, booking.event_id, effect)
    return Answer(200, effect)


def _person(booking: Booking) -> tuple[Contact | None, str, str]:
    """(contact, how it was found, why none was found): the booking link's token, else the invitee's address."""
    why = []
    if booking.token:
        contact_id = booking_token_read(booking.token)
        contact = Contact.objects.filter(pk=contact_id).first() if contact_id is not None else None
        if contact is not None:
            return contact, "booking link", ""
        why.append("the booking link's token is not one of ours" if contact_id is None
                   else "the booking link's person no longer exists")
    else:
        why.append("no booking token (the page was not reached through a step's {{ booking_link }})")
    if booking.email:
        contact = Contact.objects.filter(email=normalize_email(booking.email)).first()
        if contact is not None:
            return contact, "address", ""
        why.append(f"no contact has the address {booking.email}")
    else:
        why.append("the event names no invitee address")
    return None, "", "; ".join(why)


def _provider_words(source: BookingSource) -> str:
    return f"{source.get_provider_display()} '{source.name}'"


def _booked(source: BookingSource, booking: Booking, row: BookingEvent, contact: Contact, matched_by: str) -> str:
    """Stop the person everywhere, say Meeting booked on their conversation, write `meeting_booked`."""
    when = f" for {booking.start_time:%Y-%m-%d %H:%M} UTC" if booking.start_time else ""
    invitee = f" (booked as {booking.email})" if booking.email and booking.email != contact.email else ""
    what = "rescheduled a meeting" if booking.rescheduled else "booked a meeting"
    because = f"{contact.email} {what}{when} through {_provider_words(source)}{invitee}"
    summary = person_stop_in_transaction(email=contact.email, reason=Enrollment.StopReason.MEETING_BOOKED,
                                         because=because, source=f"booking:{row.pk}")
    conversation = _conversation_meeting_booked(contact, f"{source.get_provider_display()} booking ({source.name})")
    event_record(kind=Event.MEETING_BOOKED, email=contact.email, enrollment=conversation,
                 provider=source.provider, source=source.name, booking=row.pk, event=booking.kind,
                 start_time=booking.start_time.isoformat() if booking.start_time else "", matched_by=matched_by,
                 stopped=summary.enrollments, canceled=summary.canceled, conversation=conversation)
    done = _stopped_words(f"{because}, found by the {matched_by}", summary)
    if conversation is None:
        return done + "; no message of ours had left for them: no conversation"
    return done + f"; conversation #{conversation} set to Meeting booked"


def _stopped_words(what: str, summary: StopSummary) -> str:
    if not summary.enrollments:
        return f"{what}: no sequence was still running for them"
    return stop_summary_text(summary, what=what).rstrip(".")


def _canceled(source: BookingSource, booking: Booking, row: BookingEvent, contact: Contact, matched_by: str) -> str:
    """A canceled booking is recorded, on the person's timeline too; nothing resumes or changes."""
    what = "canceled a booking to reschedule it" if booking.rescheduled else "canceled a booking"
    event_record(kind=Event.MEETING_CANCELED, email=contact.email, provider=source.provider, source=source.name,
                 booking=row.pk, rescheduled=booking.rescheduled, matched_by=matched_by)
    return (f"{contact.email} {what} through {_provider_words(source)}, found by the {matched_by}: recorded; "
            "nothing else changes (stopped sequences stay stopped)")


def _conversation_meeting_booked(contact: Contact, by: str) -> int | None:
    """Every conversation of the person says Meeting booked (the booking decides its category, as an operator's
    choice would, and it is unhandled again); with none, one is made on the enrollment we last wrote to them
    from. None when no message of ours ever left for them (no evidence we wrote: no conversation). Returns the
    id of the conversation of the latest enrollment."""
    meeting = Category.MEETING.value
    chosen = dict(chosen=meeting, category=meeting, chosen_by=by[:200], chosen_at=DbClock(), handled=False,
                  handled_by="", handled_at=None, last_reply_at=db_clock_written())
    ids = list(Conversation.objects.filter(contact=contact).order_by("-enrollment").values_list("pk", flat=True))
    if ids:
        Conversation.objects.filter(pk__in=ids).update(**chosen)
        return ids[0]
    job = (SendJob.objects.filter(enrollment__contact=contact, submitted_at__isnull=False)
           .select_related("enrollment__sequence").order_by("-submitted_at").first())
    if job is None:
        return None
    enrollment = job.enrollment
    try:
        with transaction.atomic():
            Conversation.objects.create(
                enrollment_id=enrollment.pk, contact_id=contact.pk, sequence_id=enrollment.sequence_id,
                mailbox_id=enrollment_mailbox_id(enrollment), latest=None, replies=0, suggested=meeting,
                suggested_phrase=f"booked through {by}"[:300], suggested_confidence=1.0, **chosen)
    except IntegrityError:  # a reply's conversation committed meanwhile: it says Meeting booked too
        Conversation.objects.filter(pk=enrollment.pk).update(**chosen)
    return enrollment.pk
