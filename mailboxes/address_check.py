"""Address verification before enrolling: syntax, a domain that takes mail, role accounts.

No mail is sent and no mailbox is probed: the recipient's domain is looked up (MX, else A/AAAA, the fallback
of RFC 5321 §5.1) through the resolver of OUTREACH_DNS_RESOLVER, once per domain within one import. What is
refused is only what is certain: a domain that does not exist (NXDOMAIN), or one whose null MX (RFC 7505)
says it takes no mail. A role account (info@, sales@ …) is flagged, not refused; an unreachable resolver
says "could not verify" and refuses nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import dns.resolver
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from .dns_lookup import lookup, resolver
from .domain_auth import Answer, domain_of

# Local parts that name a function, not a person: mail to them reaches a team or nobody, and complaints from
# them weigh more. Compared without case, "+tag" and dots-as-separators left as they are.
ROLE_ACCOUNTS = frozenset({
    "abuse", "admin", "administrator", "billing", "contact", "enquiries", "help", "hello", "hostmaster", "hr",
    "info", "inquiries", "jobs", "mail", "marketing", "no-reply", "noreply", "do-not-reply", "donotreply",
    "office", "postmaster", "press", "privacy", "sales", "security", "support", "team", "webmaster",
})


class Status(StrEnum):
    OK = "ok"
    FLAGGED = "flagged"  # enrolled, with a note (a role account)
    REFUSED = "refused"  # not enrolled: the reason says why
    UNVERIFIED = "unverified"  # could not verify (resolver unreachable): enrolled, said so


@dataclass(frozen=True)
class AddressVerdict:
    status: Status
    words: str = ""


def role_account(email: str) -> bool:
    return email.rpartition("@")[0].split("+", 1)[0].lower() in ROLE_ACCOUNTS


class DomainCheck:
    """Whether a domain takes mail, each domain looked up once (one import's cache, never a process's)."""

    def __init__(self, using: dns.resolver.Resolver | None = None):
        # None: the configured resolver (OUTREACH_DNS_RESOLVER=off: none, and every domain "could not verify").
        self.using = using or resolver()
        self.seen: dict[str, AddressVerdict] = {}
        self.lookups = 0

    def __call__(self, domain: str) -> AddressVerdict:
        if domain not in self.seen:
            self.seen[domain] = self._look(domain)
        return self.seen[domain]

    def _look(self, domain: str) -> AddressVerdict:
        self.lookups += 1
        mx = lookup(domain, "MX", using=self.using)
        if mx.answer == Answer.NO_DOMAIN:
            return AddressVerdict(Status.REFUSED, f"the domain {domain} does not exist (no such name in DNS)")
        if mx.answer == Answer.UNAVAILABLE:
            return AddressVerdict(Status.UNVERIFIED, f"could not verify {domain}: {mx.detail}")
        if mx.answer == Answer.FOUND:
            if all(host in ("", ".") for host in mx.texts):
                return AddressVerdict(Status.REFUSED, f"the domain {domain} says it accepts no mail (null MX)")
            return AddressVerdict(Status.OK)
        for rdtype in ("A", "AAAA"):  # no MX: mail goes to the domain's own address, if it has one
            found = lookup(domain, rdtype, using=self.using)
            if found.answer == Answer.FOUND:
                return AddressVerdict(Status.OK)
            if found.answer == Answer.UNAVAILABLE:
                return AddressVerdict(Status.UNVERIFIED, f"could not verify {domain}: {found.detail}")
        return AddressVerdict(Status.REFUSED, f"the domain {domain} has no mail server (no MX, A or AAAA record)")


def address_verify(email: str, domains: DomainCheck) -> AddressVerdict:
    """Syntax, then the domain, then the role: the first refusal wins; a role account is a note."""
    try:
        validate_email(email)
    except ValidationError:
        return AddressVerdict(Status.REFUSED, f"{email!r} is not a valid address")
    verdict = domains(domain_of(email))
    if verdict.status in (Status.REFUSED, Status.UNVERIFIED):
        return verdict
    if role_account(email):
        return AddressVerdict(Status.FLAGGED, f"{email} is a role account (a team's address, not a person's)")
    return verdict


class Row(Protocol):
    line: int
    email: str


@dataclass
class Verified:
    kept: list = field(default_factory=list)  # the rows to enroll (flagged and unverified ones included)
    refused: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)
    flagged: list[tuple[int, str]] = field(default_factory=list)  # (line, note): role accounts, could not verify
    lookups: int = 0


def rows_verify(rows: Iterable[Row], domains: DomainCheck | None = None) -> Verified:
    """Split checked import rows: refused ones out with their line and reason, notes on the kept ones."""
    domains = domains or DomainCheck()
    out = Verified()
    for row in rows:
        verdict = address_verify(row.email, domains)
        if verdict.status == Status.REFUSED:
            out.refused.append((row.line, verdict.words))
            continue
        out.kept.append(row)
        if verdict.status != Status.OK:
            out.flagged.append((row.line, verdict.words))
    out.lookups = domains.lookups
    return out
