"""Deliverability guardrails: a mailbox whose hard-bounce, complaint or refusal rate crosses its limit, or whose
domain authentication keeps failing, pauses itself.

Where it is evaluated: where a hard bounce or a complaint is recorded.
`suppression_add_in_transaction` calls `guardrail_record` in its own
transaction whenever it adds a hard-bounce or complaint entry for an address,
and every path that records one goes through it (a DSN or ARF read over IMAP,
an SMTP 5.1.1 at RCPT, a provider's tracking webhook). The signal is counted
against the mailbox that last sent to the address (the evidence that we sent),
once per message. Two cheap, indexed counts decide: the mailbox's signals in
the window (`guardrailsignal_window_idx`) and its sends in the window
(`sendjob_authorized_idx`).

A refusal that names the sender's authentication or a blocklist
(`mailboxes.refusals`: 5.7.26, 5.7.515, 5.7.1 "blocked") is counted by
`guardrail_refusal_record` where the send's failure or hold is recorded (or a
provider's bounce event relays it), against the mailbox that sent, once per
message, as a rate of its sends like hard bounces (`refusalsignal_window_idx`).
The domain-authentication check (`services.domain_auth`) pauses through
`guardrail_pause_locked` once its grace period is over.

Lock order: the caller holds the address's enrollments; the mailbox row is
locked next, as the final check does. The pause is the mailbox state
machine's own move, committed with the bounce, so the final check refuses the
mailbox's next job at once. Cancelling every pending job (what an operator's
pause also does) runs after commit as an RQ task (`stops.mailbox_pause_sweep`),
because locking all of the mailbox's enrollments here would break the
ascending order of the locks already held.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction

from db.clock import DbClock, db_now
from mailboxes.models import Mailbox, RefusalSignal
from mailboxes.refusals import refusal_reason, refusal_words

from ..loads import last_authorized_to
from ..locks import mailbox_lock
from ..models import GuardrailSignal, SendJob
from ..queues import enqueue_guardrail_sweep
from ..sending_mailbox import enrollment_mailbox, sends_from
from ..states import MAILBOX_PAUSED, PASSED_HANDOFF, mailbox_move
from ..timeline import Event, event_record, iso
from .common import T, operator_log

S = SendJob.State
GUARDRAIL = "deliverability guardrail"  # the actor of its pauses in the operator log


@dataclass(frozen=True)
class Figures:
    """A mailbox's deliverability over its rolling window."""

    window_days: int
    sends: int  # messages that passed the final check (and a transport tried)
    deliveries: int  # messages a transport accepted
    hard_bounces: int
    complaints: int
    refusals: int = 0  # refusals naming authentication or a blocklist

    @property
    def refusal_rate(self) -> float:
        return 100.0 * self.refusals / self.sends if self.sends else 0.0

    @property
    def bounce_rate(self) -> float:
        return 100.0 * self.hard_bounces / self.sends if self.sends else 0.0

    @property
    def complaint_rate(self) -> float:
        return 100.0 * self.complaints / self.deliveries if self.deliveries else 0.0

    def as_dict(self) -> dict:
        rates = {"bounce_rate": round(self.bounce_rate, 3), "complaint_rate": round(self.complaint_rate, 3),
                 "refusal_rate": round(self.refusal_rate, 3)}
        return asdict(self) | rates


def guardrail_figures(mailbox: Mailbox) -> Figures:
    """The mailbox's sends, deliveries, hard bounces and complaints over its window (four indexed counts)."""
    since = db_now() - timedelta(days=mailbox.guardrail_window_days)
    jobs = SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__"), authorized_at__gte=since)
    signals = GuardrailSignal.objects.filter(mailbox=mailbox, at__gte=since)
    return Figures(
        window_days=mailbox.guardrail_window_days,
        sends=jobs.filter(state__in=PASSED_HANDOFF + (S.FAILED,)).count(),
        deliveries=jobs.filter(state__in=(S.SUBMITTED, S.ACCEPTED)).count(),
        hard_bounces=signals.filter(kind=GuardrailSignal.Kind.HARD_BOUNCE).count(),
        complaints=signals.filter(kind=GuardrailSignal.Kind.COMPLAINT).count(),
        refusals=RefusalSignal.objects.filter(mailbox=mailbox, at__gte=since).count(),
    )


def guardrail_crossed(mailbox: Mailbox, figures: Figures) -> str:
    """Why the figures cross a limit, in words with the numbers, or '' when they do not."""
    days = f"{figures.window_days} day{'' if figures.window_days == 1 else 's'}"
    if figures.sends >= mailbox.guardrail_bounce_min_sends and figures.bounce_rate >= mailbox.guardrail_bounce_rate:
        return (
            f"hard-bounce rate {figures.bounce_rate:.1f} % ({figures.hard_bounces} of {figures.sends} sends in the "
            f"last {days}) is at or above the limit of {mailbox.guardrail_bounce_rate:g} %"
        )
    if (
        figures.deliveries >= mailbox.guardrail_complaint_min_deliveries
        and figures.complaint_rate >= mailbox.guardrail_complaint_rate
    ):
        return (
            f"complaint rate {figures.complaint_rate:.2f} % ({figures.complaints} of {figures.deliveries} "
            f"deliveries in the last {days}) is at or above the limit of {mailbox.guardrail_complaint_rate:g} %"
        )
    if (
        figures.refusals
        and figures.sends >= mailbox.guardrail_refusal_min_sends
        and figures.refusal_rate >= mailbox.guardrail_refusal_rate
    ):
        return (
            f"refusals naming authentication or a blocklist {figures.refusal_rate:.1f} % ({figures.refusals} of "
            f"{figures.sends} sends in the last {days}) is at or above the limit of "
            f"{mailbox.guardrail_refusal_rate:g} %"
        )
    return ""


def guardrail_record(*, email: str, kind: str) -> str:
    """Count a hard bounce or complaint of `email` against the mailbox that sent to it; pause it if a limit is crossed.

    Requires the caller's transaction (the one that records the bounce or complaint). Returns why the mailbox
    was paused, or ''.
    """
    job = last_authorized_to(email)
    if job is None:
        return ""  # nothing of ours went to it: no mailbox to count it against
    mailbox = enrollment_mailbox(job.enrollment)
    mailbox_id = mailbox.pk
    if not _signal_add(job_id=job.pk, kind=kind, mailbox_id=mailbox_id):
        return ""  # the same message reported again counts once
    if mailbox.paused or (mailbox.guardrail_silenced_until and mailbox.guardrail_silenced_until > db_now()):
        return ""
    if not guardrail_may_cross(mailbox):
        return ""
    figures = guardrail_figures(mailbox)  # the full counts, once, for the record of why
    why = guardrail_crossed(mailbox, figures)
    return _pause(mailbox_id, why, figures.as_dict()) if why else ""


def guardrail_refusal_record(*, job: SendJob, mailbox: Mailbox, reply: str) -> str:
    """Count a refusal of `job` that names authentication or a blocklist against `mailbox`; pause it when the
    refusal rate crosses its limit. Any other reply counts nothing.

    Requires the caller's transaction (the one that records the send's failure or hold). Returns why the
    mailbox was paused, or ''. The same message refused again (a held job tried once more) counts once.
    """
    reason = refusal_reason(reply)
    if not reason:
        return ""
    try:
        with transaction.atomic():
            RefusalSignal.objects.create(mailbox_id=mailbox.pk, job_id=job.pk, reason=reason, reply=reply[:2000])
    except IntegrityError:
        return ""
    event_record(kind=Event.MAILBOX_REFUSAL_COUNTED, job=job, mailbox=mailbox.name, reason=reason,
                 words=refusal_words(reason))
    if mailbox.paused or (mailbox.guardrail_silenced_until and mailbox.guardrail_silenced_until > db_now()):
        return ""
    figures = guardrail_figures(mailbox)
    why = guardrail_crossed(mailbox, figures)
    return _pause(mailbox.pk, why, figures.as_dict()) if why else ""


def _signal_add(*, job_id: int, kind: str, mailbox_id: int) -> bool:
    """Count one signal of a message; False when that message's signal of this kind was counted already.

    The unique constraint on job and kind decides, also between two concurrent reports (the second waits
    for the first's commit, then meets the constraint); a savepoint keeps the caller's transaction usable."""
    try:
        with transaction.atomic():
            GuardrailSignal.objects.create(mailbox_id=mailbox_id, job_id=job_id, kind=kind)
    except IntegrityError:
        return False
    return True


def guardrail_may_cross(mailbox: Mailbox) -> bool:
    """Whether a limit is crossed, counting no more sends than could still make it so.

    A rate of k signals reaches the limit r % only with at most k·100/r sends; with fewer than the minimum
    sample possible it cannot cross at all, and otherwise counting stops one row past that bound. So each
    bounce costs two counts on the signal index and, at most, a count of k·100/r rows of the window's sends,
    however many the mailbox sent.
    """
    since = db_now() - timedelta(days=mailbox.guardrail_window_days)
    signals = GuardrailSignal.objects.filter(mailbox=mailbox, at__gte=since)
    jobs = SendJob.objects.filter(sends_from(mailbox.pk, via="enrollment__"), authorized_at__gte=since)
    checks = (
        (
            GuardrailSignal.Kind.HARD_BOUNCE,
            mailbox.guardrail_bounce_rate,
            mailbox.guardrail_bounce_min_sends,
            jobs.filter(state__in=PASSED_HANDOFF + (S.FAILED,)),
        ),
        (
            GuardrailSignal.Kind.COMPLAINT,
            mailbox.guardrail_complaint_rate,
            mailbox.guardrail_complaint_min_deliveries,
            jobs.filter(state__in=(S.SUBMITTED, S.ACCEPTED)),
        ),
    )
    for kind, rate, minimum, sample in checks:
        count = signals.filter(kind=kind).count()
        bound = int(count * 100 / rate + 1e-9) if rate > 0 else 0
        if count and bound >= minimum and minimum <= sample.order_by()[: bound + 1].count() <= bound:
            return True
    return False


def _pause(mailbox_id: int, why: str, figures: dict) -> str:
    return guardrail_pause_locked(mailbox_lock(mailbox_id=mailbox_id), why=why, figures=figures)


def guardrail_pause_locked(mailbox: Mailbox, *, why: str, figures: dict) -> str:
    """Pause a (locked) mailbox for the guardrail, with why in words and the figures it read; '' when it was
    paused already. Requires the caller's transaction; the sweep of its pending jobs runs after commit."""
    if mailbox.paused or not mailbox_move(mailbox=mailbox, to=MAILBOX_PAUSED, actor=GUARDRAIL, guardrail=why):
        return ""
    Mailbox.objects.filter(pk=mailbox.pk).update(guardrail_paused_at=DbClock(), guardrail_reason=why)
    event_record(kind=Event.MAILBOX_PAUSED_BY_GUARDRAIL, mailbox=mailbox.name, reason=why, **figures)
    operator_log(
        actor=GUARDRAIL,
        action="mailbox_paused_by_guardrail",
        target=f"mailbox {mailbox.name}",
        kind=T.MAILBOX,
        target_id=mailbox.pk,
        result=figures | {"reason": why},
    )
    transaction.on_commit(lambda: enqueue_guardrail_sweep(mailbox.pk))
    return why


def guardrail_silence_locked(mailbox: Mailbox, *, actor: str) -> None:
    """An operator resumed a mailbox the guardrail paused: silence the guardrail for the mailbox's stated period."""
    if mailbox.guardrail_paused_at is None:
        return
    until = db_now() + timedelta(seconds=mailbox.guardrail_silence_seconds)
    Mailbox.objects.filter(pk=mailbox.pk).update(guardrail_paused_at=None, guardrail_silenced_until=until)
    event_record(
        kind=Event.GUARDRAIL_SILENCED,
        mailbox=mailbox.name,
        actor=actor,
        until=iso(until),
        paused_because=mailbox.guardrail_reason,
    )
