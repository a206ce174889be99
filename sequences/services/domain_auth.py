"""A mailbox's domain authentication (SPF, DKIM, DMARC): checked, recorded, and paused on after a grace period.

The lookup (`mailboxes.dns_lookup`, network I/O) runs with no transaction open; what it found is recorded in
one short transaction under the mailbox's lock. A failing record starts `auth_failing_since` (kept while it
keeps failing); a passing check clears it; "could not check" (time-out, SERVFAIL) changes neither, so a
resolver outage never counts toward a pause. Once a check finds the records failing for longer than
OUTREACH_DOMAIN_AUTH_GRACE_HOURS, the deliverability guardrail pauses the mailbox with the failing records in
words, as it pauses for a bounce rate: an operator resumes it (which silences the guardrail for the mailbox's
stated period); a later passing check does not resume it by itself.

It runs in the mailbox's connection check (the form, "Check connection", `manage.py mailbox_check`) and in a
periodic job (`domain_auth_due`: each mailbox once a day, a failing one every hour).

A domain reserved for tests (`mailboxes.domain_auth.reserved_domain`: .test, .example, example.com, …) is not
looked up in the public DNS, where it can never pass: it is recorded as "reserved", one line, never failing. With
a resolver of its own (OUTREACH_DNS_RESOLVER names one, which may serve a private test zone) it is checked like
any other domain.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from db.clock import db_now
from mailboxes.checks import domain_auth_for
from mailboxes.dns_lookup import OFF
from mailboxes.domain_auth import DomainAuth, Verdict, domain_of, reserved_domain, reserved_report
from mailboxes.models import Mailbox

from ..locks import mailbox_lock
from ..timeline import Event, event_record
from .common import T, operator_log
from .guardrails import guardrail_pause_locked

DAILY = timedelta(hours=24)
FAILING_RECHECK = timedelta(hours=1)


def grace() -> timedelta:
    return timedelta(hours=settings.OUTREACH_DOMAIN_AUTH_GRACE_HOURS)


def public_dns_reserved(domain: str) -> bool:
    """A reserved test domain checked through the public DNS (the system's resolver, or none at all), where its
    records can never be found; a resolver named in OUTREACH_DNS_RESOLVER may serve it, so it is checked there."""
    spec = settings.OUTREACH_DNS_RESOLVER.strip().lower()
    return spec in ("", OFF) and reserved_domain(domain)


def mailbox_domain_auth_lookup(mailbox: Mailbox) -> DomainAuth:
    """The sending domain's records for this mailbox's settings (saved or not); network I/O, nothing written."""
    assert not connection.in_atomic_block, "never hold a transaction across DNS lookups"
    domain = domain_of(mailbox.address)
    if public_dns_reserved(domain):
        return reserved_report(domain)
    return domain_auth_for(mailbox)


def mailbox_domain_auth_check(*, mailbox_id: int, actor: str = "") -> DomainAuth:
    """Look the records up (no transaction), then record what they say (one short transaction)."""
    report = mailbox_domain_auth_lookup(Mailbox.objects.get(pk=mailbox_id))
    mailbox_domain_auth_record(mailbox_id=mailbox_id, report=report, actor=actor)
    return report


def mailbox_domain_auth_record(*, mailbox_id: int, report: DomainAuth, actor: str = "") -> str:
    """Record a check's result on the mailbox; pause it when its records have failed for the grace period.
    One durable transaction; returns why the mailbox was paused, or ''."""
    if public_dns_reserved(report.domain):
        report = reserved_report(report.domain)  # a form's check looked it up: recorded as what it is
    with transaction.atomic(durable=True):
        mailbox = mailbox_lock(mailbox_id=mailbox_id)
        now = db_now()
        verdict = report.verdict
        since = mailbox.auth_failing_since
        if verdict == Verdict.RESERVED:
            since = None  # can never pass, so it never counts toward a pause (nor does an earlier "failing")
        elif verdict == Verdict.FAIL and since is None:
            since = now
            event_record(kind=Event.MAILBOX_DOMAIN_AUTH_FAILING, mailbox=mailbox.name, domain=report.domain,
                         failing=report.failing)
        elif verdict == Verdict.PASS and since is not None:
            since = None
            event_record(kind=Event.MAILBOX_DOMAIN_AUTH_PASSING, mailbox=mailbox.name, domain=report.domain)
        Mailbox.objects.filter(pk=mailbox.pk).update(auth_checked_at=now, auth_verdict=verdict.value,
                                                     auth_summary=report.summary, auth_failing_since=since)
        if actor:
            operator_log(actor=actor, action="mailbox_domain_auth_check", target=f"mailbox {mailbox.name}",
                         kind=T.MAILBOX, target_id=mailbox.pk, result={"outcome": verdict.value,
                                                                       "detail": report.summary[:1000]})
        if verdict != Verdict.FAIL or since is None or now - since < grace():
            return ""
        if mailbox.guardrail_silenced_until and mailbox.guardrail_silenced_until > now:
            return ""  # an operator resumed it after a guardrail pause: silenced for the stated period
        hours = (now - since).total_seconds() / 3600
        why = (f"domain authentication of {report.domain} has failed for {hours:.0f} hours (more than the "
               f"{settings.OUTREACH_DOMAIN_AUTH_GRACE_HOURS:g} allowed): {report.failing}")
        return guardrail_pause_locked(mailbox, why=why, figures={"domain": report.domain,
                                                                 "failing_since": since.isoformat()})


def domain_auth_due() -> list[int]:
    """Mailboxes whose records are due a look: never checked or not for a day; failing ones every hour."""
    now = db_now()
    return list(Mailbox.objects.filter(
        Q(auth_checked_at__isnull=True) | Q(auth_checked_at__lte=now - DAILY)
        | Q(auth_failing_since__isnull=False, auth_checked_at__lte=now - FAILING_RECHECK)
    ).order_by("pk").values_list("pk", flat=True))


def domain_auth_sweep() -> dict[str, int]:
    """The periodic job: check every mailbox that is due; one mailbox's failure never stops the others."""
    counts = {"checked": 0, "failing": 0, "could_not_check": 0, "paused": 0}
    for mailbox_id in domain_auth_due():
        try:
            report = mailbox_domain_auth_lookup(Mailbox.objects.get(pk=mailbox_id))
        except Mailbox.DoesNotExist:
            continue
        paused = mailbox_domain_auth_record(mailbox_id=mailbox_id, report=report)
        counts["checked"] += 1
        counts["failing"] += report.verdict == Verdict.FAIL
        counts["could_not_check"] += report.verdict == Verdict.UNKNOWN
        counts["paused"] += bool(paused)
    return counts
