"""Out-of-office holds: an auto-reply that states a return date holds the person's live jobs until the day after.

Not sending on into an empty office, and not pausing forever either: every
live job of the person (every active enrollment, in every sequence and
mailbox) that is not yet past the final check gets a later `scheduled_at`, so
the dispatcher and the final check keep their authority when it comes due.
Without a stated date the hold lasts `OUTREACH_OOO_HOLD_DAYS`; a date further
out than `OUTREACH_OOO_MAX_HOLD_DAYS` is held for that maximum (the answer
comes from a stranger). The hold, the parsed date and the sentence it came
from are recorded in the timeline. Called by ingestion only for an auto-reply
correlated to a message we sent, with the return date it read from the answer
(`ReturnStated`: the send side parses no inbound mail); lock order as every stop: the person's
enrollments (ascending id), then their jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings

from ..locks import enrollments_lock
from ..models import Enrollment, SendJob
from ..states import job_move
from ..timeline import Event, event_record, iso

S = SendJob.State
HOLDABLE = (S.SCHEDULED, S.QUEUED, S.CLAIMED)  # not past the final check; each edge leads back to scheduled


@dataclass(frozen=True)
class ReturnStated:
    """The return date an auto-reply states, the sentence that states it, and the words from the return to the
    date within it ("bis zum 14. Dezember"), which the hold quotes."""

    date: date
    sentence: str
    quote: str = ""


def person_hold_for_auto_reply(*, addresses: list[str], received: datetime, found: ReturnStated | None,
                               source: str, what: str = "auto-reply") -> str:
    """Hold the live jobs of the people an auto-reply answers for; requires the recording transaction.

    `received`: when the auto-reply arrived; `found`: the return date it states, or None; `what`: the words for
    it ("auto-reply", "the person's away note").
    Returns what was done, in words, for the inbound ledger.
    """
    done = []
    for enrollment in enrollments_lock(
        Enrollment.objects.filter(contact__email__in=addresses, status=Enrollment.Status.ACTIVE)
    ):
        until = hold_until(found, received=received, tz=enrollment.contact.timezone)
        held = _hold_jobs(enrollment, until=until, found=found, source=source)
        event_record(
            kind=Event.OUT_OF_OFFICE_HOLD,
            email=enrollment.contact.email,
            enrollment=enrollment,
            version_seen=enrollment.version,
            return_date=found.date.isoformat() if found else "",
            sentence=found.sentence if found else "",
            quote=found.quote if found else "",
            until=iso(until),
            held=held,
            source=source,
        )
        done.append(held)
    stated = f"back on {found.date:%Y-%m-%d} (\u201c{found.sentence}\u201d)" if found else "no return date stated"
    if not done:
        return f"{what} recorded ({stated}); no active enrollment to hold"
    until_words = f"{hold_until(found, received=received, tz='UTC'):%Y-%m-%d}"
    return (
        f"{what}: {stated}; {sum(done)} job{'' if sum(done) == 1 else 's'} held until {until_words} "
        f"in {len(done)} enrollment{'' if len(done) == 1 else 's'}"
    )


def hold_until(found: ReturnStated | None, *, received: datetime, tz: str) -> datetime:
    """The start of the day after the return date, in the person's time zone (or the default hold, capped)."""
    try:
        zone = ZoneInfo(tz or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    today = received.astimezone(zone).date()
    latest = today + timedelta(days=settings.OUTREACH_OOO_MAX_HOLD_DAYS)
    day: date = found.date + timedelta(days=1) if found else today + timedelta(days=settings.OUTREACH_OOO_HOLD_DAYS)
    return datetime.combine(min(max(day, today), latest), time(0), tzinfo=zone)


def _hold_jobs(enrollment: Enrollment, *, until: datetime, found: ReturnStated | None, source: str) -> int:
    held = 0
    jobs = SendJob.objects.filter(enrollment=enrollment, state__in=HOLDABLE, scheduled_at__lt=until)
    for job in jobs.select_related("step"):
        job.enrollment = enrollment  # locked, with its contact: the events name the address
        # A worker may claim the job meanwhile (claiming takes no enrollment lock): reload and move it back; it
        # cannot authorize while we hold the enrollment, and its authorize then finds the version moved.
        while job.state in HOLDABLE:
            if job_move(
                job=job,
                to=S.SCHEDULED,
                event=Event.JOB_HELD_OUT_OF_OFFICE,
                fields={"scheduled_at": until, "worker_id": "", "lease_until": None},
                until=iso(until),
                return_date=found.date.isoformat() if found else "",
                source=source,
            ):
                held += 1
                break
            job.refresh_from_db(fields=["state", "version"])
    return held
