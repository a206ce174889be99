"""Mailboxes fail as a whole: block on a mailbox-scope error, hold its jobs, probe, unblock.

A mailbox-scope error (authentication, TLS or certificate, sender or relay
policy, a server that stays unreachable) says nothing about the message, so
it never fails the job: the job goes back to `scheduled` (held) and the
mailbox is blocked, in one transaction. While blocked, the final check
defers every job of the mailbox and no login is attempted, except one probe
(`mailbox_probe`: the transport's check, no message sent) after each interval
of OUTREACH_PROBE_INTERVALS, or when an operator asks. A probe that passes
unblocks the mailbox and releases its held jobs, each still through the
final check. The follow-ups a mailbox holds for its reply view are released
the same way, in the transaction that lifts the cause (`held_release`: an
operator's change of the view's settings, the view reading again), instead
of waiting out their next check. A mailbox-scope error met outside a send
(the IMAP poll finding the mailbox's OAuth2 refresh token refused) blocks it
the same way (`mailbox_block`). Lock order as everywhere: the enrollment, then the mailbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Q

from db.clock import db_now
from mailboxes.checks import servers
from mailboxes.models import Mailbox
from mailboxes.selectors import transport_for
from mailboxes.transports.base import CheckStep

from ..locks import mailbox_lock
from ..models import SendJob, TimelineEvent
from ..reasons import Reason
from ..sending_mailbox import sends_from
from ..states import HEALTH_BLOCKED, HEALTH_OK, job_move, mailbox_health, mailbox_health_move
from ..timeline import Event, event_record
from .common import T, operator_log
from .guardrails import guardrail_refusal_record
from .sending import HELD, held_error, job_locked, retry_locked

S = SendJob.State


def probe_interval(failed_probes: int) -> timedelta:
    ladder = settings.OUTREACH_PROBE_INTERVALS
    return timedelta(seconds=ladder[min(failed_probes, len(ladder) - 1)])


SYSTEM = "outreach"  # the operator log's actor for what the system itself did


def _block_locked(mailbox: Mailbox, *, reason: str, now: datetime) -> None:
    if mailbox_health(mailbox) == HEALTH_OK:
        mailbox_health_move(mailbox=mailbox, to=HEALTH_BLOCKED, reason=reason, next_probe_at=now + probe_interval(0))
        operator_log(actor=SYSTEM, action="mailbox_blocked", target=f"mailbox {mailbox.name}", kind=T.MAILBOX,
                     target_id=mailbox.pk,
                     result={"reason": reason[:500], "next_check": mailbox.next_probe_at.isoformat()})


def mailbox_block(*, mailbox_id: int, reason: str) -> bool:
    """Block a mailbox for a mailbox-scope error met outside a send (the IMAP poll's refused OAuth2 token).

    From then on the final check defers its jobs and no login is attempted until a probe passes, as after a
    refused send. True when this blocked it; a mailbox already blocked keeps its reason and probe schedule.
    """
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        if mailbox_health(mailbox) != HEALTH_OK:
            return False
        _block_locked(mailbox, reason=reason, now=db_now())
        return True


def _hold(job: SendJob, mailbox: Mailbox, *, worker_id: str, error: str, now: datetime) -> None:
    """authorized -> scheduled for the mailbox's next probe; this attempt does not count against the message."""
    job_move(job=job, to=S.SCHEDULED, worker_id=worker_id, event=Event.JOB_HELD,
             fields={"scheduled_at": max(mailbox.next_probe_at or now, now), "error": held_error(error),
                     "worker_id": "", "lease_until": None, "attempts": F("attempts") - 1},
             error=error, mailbox=mailbox.name)


def send_job_record_mailbox_refused(*, job_id: int, worker_id: str, error: str) -> str:
    """The mailbox refused as a whole: block it and hold the job (never failed); one durable transaction."""
    with transaction.atomic(durable=True):
        locked = job_locked(job_id, lock_mailbox=True)
        mailbox, job = locked.mailbox, locked.job
        if job.state != S.AUTHORIZED:
            return job.state
        now = db_now()
        # A refusal naming authentication or a blocklist (5.7.26 at RCPT) also counts toward the guardrail, once
        # per message however often the held message meets it again.
        guardrail_refusal_record(job=job, mailbox=mailbox, reply=error)
        _block_locked(mailbox, reason=error, now=now)
        _hold(job, mailbox, worker_id=worker_id, error=error, now=now)
        return S.SCHEDULED


def send_job_record_unreachable(*, job_id: int, worker_id: str, error: str) -> str:
    """The server could not be reached at all: a retry, until it happens OUTREACH_CONNECT_FAILURES_TO_BLOCK
    times in a row; then the mailbox is blocked and the job held."""
    with transaction.atomic(durable=True):
        locked = job_locked(job_id, lock_mailbox=True)
        mailbox, job = locked.mailbox, locked.job
        if job.state != S.AUTHORIZED:
            return job.state
        now = db_now()
        if mailbox_health(mailbox) == HEALTH_OK:
            Mailbox.objects.filter(pk=mailbox.pk).update(connect_failures=F("connect_failures") + 1)
            mailbox.refresh_from_db(fields=["connect_failures"])
            event_record(kind=Event.MAILBOX_CONNECT_FAILED, mailbox=mailbox.name, error=error,
                         in_a_row=mailbox.connect_failures)
            if mailbox.connect_failures < settings.OUTREACH_CONNECT_FAILURES_TO_BLOCK:
                return retry_locked(locked, worker_id=worker_id, error=error)
            _block_locked(mailbox, reason=f"unreachable {mailbox.connect_failures} times in a row: {error}", now=now)
        _hold(job, mailbox, worker_id=worker_id, error=error, now=now)
        return S.SCHEDULED


# --- probes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeResult:
    outcome: str  # "unblocked" | "still blocked" | "ok" (was not blocked) | "failed" (not blocked) | "not due"
    steps: tuple[CheckStep, ...] = ()
    released: int = 0  # held jobs due again

    @property
    def text(self) -> str:
        failed = next((s for s in self.steps if not s.ok), None)
        head = {"unblocked": "Sending works again", "still blocked": "Still blocked",
                "ok": "Connection works", "failed": "Connection check failed", "not due": "No probe due"}[self.outcome]
        if failed is not None:
            return f"{head}: {failed.step}: {failed.detail}"
        return head + (f"; {self.released} held message(s) due again" if self.released else "")


def mailbox_probes_due() -> list[int]:
    """Blocked mailboxes whose next probe is due (for the dispatcher's pass)."""
    return list(Mailbox.objects.filter(blocked_at__isnull=False, next_probe_at__lte=db_now(), paused=False)
                .values_list("pk", flat=True))


def mailbox_probe(*, mailbox_id: int, actor: str = "", forced: bool = False) -> ProbeResult:
    """Check the mailbox's transport (no message sent) and record the answer; no transaction across the check.

    Due probes are claimed first (the next probe time moves on), so two dispatcher passes never probe
    twice. `forced`: an operator's "check now", whatever the schedule.
    """
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        now = db_now()
        blocked = mailbox_health(mailbox) == HEALTH_BLOCKED
        if not forced and (not blocked or mailbox.next_probe_at is None or mailbox.next_probe_at > now):
            return ProbeResult("not due")  # unblocked meanwhile, or a duplicate of a probe already run
        if blocked:
            Mailbox.objects.filter(pk=mailbox.pk).update(
                next_probe_at=now + probe_interval(mailbox.blocked_probes + 1))
    assert not connection.in_atomic_block, "never hold a transaction across the probe's network I/O"
    try:
        timeout = settings.OUTREACH_CHECK_TIMEOUT if forced else None  # an operator waits on it
        steps = tuple(transport_for(mailbox, timeout=timeout).check(sender=mailbox.address))
    except Exception as exc:  # noqa: BLE001 - a probe reports; it never raises into the dispatcher
        steps = (CheckStep("check", False, f"{type(exc).__name__}: {exc}"),)
    passed = all(step.ok for step in steps)
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        now = db_now()
        if mailbox_health(mailbox) == HEALTH_OK:
            result = ProbeResult("ok" if passed else "failed", steps)
        elif passed:
            mailbox_health_move(mailbox=mailbox, to=HEALTH_OK, actor=actor, how="probe passed")
            released = _release_held(mailbox, now=now)
            result = ProbeResult("unblocked", steps, released)
        else:
            failed = next(step for step in steps if not step.ok)
            mailbox_health_move(mailbox=mailbox, to=HEALTH_BLOCKED, reason=f"{failed.step}: {failed.detail}",
                                next_probe_at=now + probe_interval(mailbox.blocked_probes + 1), actor=actor)
            result = ProbeResult("still blocked", steps)
        if passed:
            # A check that passed (an operator's, or the probe after a new OAuth2 grant) lets the reading side
            # try its login once at its next poll, instead of waiting out the interval of a refused one.
            Mailbox.objects.filter(pk=mailbox.pk, imap_next_login_at__isnull=False).update(imap_next_login_at=None)
        operator_log(actor=actor, action="mailbox_check", target=f"mailbox {mailbox.name}", kind=T.MAILBOX,
                     target_id=mailbox.pk, result={"outcome": result.outcome, "detail": result.text,
                                                   "connected": list(servers(mailbox, reading=False))})
        return result


def _release_held(mailbox: Mailbox, *, now: datetime) -> int:
    """The jobs that waited for this mailbox are due now (each goes through the final check again)."""
    return SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__"), state=S.SCHEDULED,
                                  error__startswith=HELD).update(scheduled_at=now, error="")


# The final check's deferral of a follow-up for the mailbox's reply view (`services.sending`).
REPLY_VIEW_HOLD = Q(kind=Event.JOB_DEFERRED, data__reason=Reason.REPLY_VIEW)


def held_release(*, mailbox: Mailbox, reason: str) -> int:
    """The follow-ups this mailbox holds for its reply view are due now; requires the transaction that lifted the
    cause, with the mailbox locked (the final check's order: the mailbox, then its jobs).

    Each goes back through the final check, which decides: it sends, or holds again with the reason of the
    moment. A job is released only while the hold is the last thing that happened to it (a later event, an
    out-of-office hold or a variant change, set its time for another reason). One `job_scheduled` event per job,
    with `reason`; returns how many were released."""
    now = db_now()
    later = TimelineEvent.objects.filter(job=OuterRef("job"), pk__gt=OuterRef("pk"))
    held = TimelineEvent.objects.filter(REPLY_VIEW_HOLD, job=OuterRef("pk")).filter(~Exists(later))
    jobs = (SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__"), state=S.SCHEDULED, scheduled_at__gt=now)
            .filter(Exists(held)).select_related("enrollment__contact", "step").order_by("pk"))
    # A guarded move each: a dispatcher or a stop that moved the job first wins, and the job is left to it.
    return sum(job_move(job=job, to=S.SCHEDULED, fields={"scheduled_at": now}, reason=reason, held=Reason.REPLY_VIEW)
               for job in jobs)
