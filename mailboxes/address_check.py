"""Address verification before enrolling: syntax, a domain that takes mail, role accounts.

No mail is sent and no mailbox is probed: the recipient's domain is looked up (MX, else A/AAAA, the fallback
of RFC 5321 §5.1) through the resolver of OUTREACH_DNS_RESOLVER, once per domain within one import. What is
refused is only what is certain: a domain that does not exist (NXDOMAIN), or one whose null MX (RFC 7505)
says it takes no mail. A role account (info@, sales@ …) is flagged, not refused; an unreachable resolver
says "could not verify" and refuses nothing.

The browser's dry run never looks up in a web request: a background job checks the upload's domains side by side
within a total time budget (`domains_check`), and the page reads its verdicts (`DomainVerdicts`). A domain the
budget did not reach is "not checked", enrolled and said so, like one the resolver could not answer.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import dns.resolver
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from .dns_lookup import lookup, resolver
from .domain_auth import Answer, Lookup, domain_of

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
    UNCHECKED = "unchecked"  # not looked up within the check's time budget: enrolled, said so

# Domains a background check looks up side by side: a silent resolver costs its time-out once per this many
# domains, not once per domain.
LOOKUPS_AT_ONCE = 8
PROGRESS_EVERY = 0.5  # seconds between two progress reports of a background check


@dataclass(frozen=True)
class AddressVerdict:
    status: Status
    words: str = ""


def role_account(email: str) -> bool:
    return email.rpartition("@")[0].split("+", 1)[0].lower() in ROLE_ACCOUNTS


class DomainCheck:
    """Whether a domain takes mail, each domain looked up once (one import's cache, never a process's).

    With a `budget` (seconds, in all): a lookup gets at most the time left, and a domain reached after it is
    spent is UNCHECKED. Safe to call from several threads for different domains."""

    def __init__(self, using: dns.resolver.Resolver | None = None, *, budget: float | None = None):
        # None: the configured resolver (OUTREACH_DNS_RESOLVER=off: none, and every domain "could not verify").
        self.using = using or resolver()
        self.budget = budget
        self.deadline = None if budget is None else time.monotonic() + budget
        self.seen: dict[str, AddressVerdict] = {}
        self._counted = threading.Lock()
        self.lookups = 0

    def __call__(self, domain: str) -> AddressVerdict:
        if domain not in self.seen:
            self.seen[domain] = self._look(domain)
        return self.seen[domain]

    def _lookup(self, domain: str, rdtype: str) -> Lookup | None:
        """One query, given at most what is left of the budget; None when the budget is spent before it."""
        using = self.using
        if self.deadline is not None and using is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return None
            using = copy.copy(using)  # one per lookup: the threads of a check share none of its settings
            using.timeout = using.lifetime = min(self.using.lifetime, left)
        return lookup(domain, rdtype, using=using)

    def _unchecked(self, domain: str) -> AddressVerdict:
        return AddressVerdict(Status.UNCHECKED, f"{domain} not checked (time budget of {self.budget:g} s used up)")

    def _look(self, domain: str) -> AddressVerdict:
        with self._counted:
            self.lookups += 1
        mx = self._lookup(domain, "MX")
        if mx is None:
            return self._unchecked(domain)
        if mx.answer == Answer.NO_DOMAIN:
            return AddressVerdict(Status.REFUSED, f"the domain {domain} does not exist (no such name in DNS)")
        if mx.answer == Answer.UNAVAILABLE:
            return AddressVerdict(Status.UNVERIFIED, f"could not verify {domain}: {mx.detail}")
        if mx.answer == Answer.FOUND:
            if all(host in ("", ".") for host in mx.texts):
                return AddressVerdict(Status.REFUSED, f"the domain {domain} says it accepts no mail (null MX)")
            return AddressVerdict(Status.OK)
        for rdtype in ("A", "AAAA"):  # no MX: mail goes to the domain's own address, if it has one
            found = self._lookup(domain, rdtype)
            if found is None:
                return self._unchecked(domain)
            if found.answer == Answer.FOUND:
                return AddressVerdict(Status.OK)
            if found.answer == Answer.UNAVAILABLE:
                return AddressVerdict(Status.UNVERIFIED, f"could not verify {domain}: {found.detail}")
        return AddressVerdict(Status.REFUSED, f"the domain {domain} has no mail server (no MX, A or AAAA record)")


class DomainVerdicts:
    """The verdicts of a finished `domains_check`, read as a DomainCheck that looks nothing up: a domain the
    check was not given is UNCHECKED."""

    lookups = 0

    def __init__(self, verdicts: dict[str, AddressVerdict]):
        self.verdicts = verdicts

    def __call__(self, domain: str) -> AddressVerdict:
        return self.verdicts.get(domain) or AddressVerdict(Status.UNCHECKED, f"{domain} not checked")


def _valid(email: str) -> bool:
    try:
        validate_email(email)
    except ValidationError:
        return False
    return True


def address_verify(email: str, domains: DomainCheck | DomainVerdicts) -> AddressVerdict:
    """Syntax, then the domain, then the role: the first refusal wins; a role account is a note."""
    if not _valid(email):
        return AddressVerdict(Status.REFUSED, f"{email!r} is not a valid address")
    verdict = domains(domain_of(email))
    if verdict.status in (Status.REFUSED, Status.UNVERIFIED, Status.UNCHECKED):
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


def rows_verify(rows: Iterable[Row], domains: DomainCheck | DomainVerdicts | None = None) -> Verified:
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


def rows_domains(rows: Iterable[Row]) -> list[str]:
    """The domains `rows_verify` looks up for these rows, each once, sorted: what a background check is given."""
    return sorted({domain_of(row.email) for row in rows if _valid(row.email)})


def domains_check(domains: Sequence[str], *, budget: float,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, AddressVerdict]:
    """Each domain's verdict, LOOKUPS_AT_ONCE looked up side by side, all within `budget` seconds (a domain not
    reached in time is UNCHECKED). Takes up to the whole budget: for a background job, never a web request.
    `progress(done, total)` is told every PROGRESS_EVERY seconds and at the end."""
    check = DomainCheck(budget=budget)
    verdicts: dict[str, AddressVerdict] = {}
    reported = time.monotonic()
    with ThreadPoolExecutor(LOOKUPS_AT_ONCE, thread_name_prefix="address-check") as pool:
        futures = {pool.submit(check, domain): domain for domain in dict.fromkeys(domains)}
        for future in as_completed(futures):
            verdicts[futures[future]] = future.result()
            if progress is not None and time.monotonic() - reported >= PROGRESS_EVERY:
                progress(len(verdicts), len(futures))
                reported = time.monotonic()
    if progress is not None:
        progress(len(verdicts), len(futures))
    return verdicts


def verdicts_plain(verdicts: dict[str, AddressVerdict]) -> dict[str, list[str]]:
    """Verdicts as plain values, for an RQ job's result (read back with `verdicts_read`)."""
    return {domain: [verdict.status.value, verdict.words] for domain, verdict in verdicts.items()}


def verdicts_read(plain: dict[str, list[str]]) -> DomainVerdicts:
    return DomainVerdicts({domain: AddressVerdict(Status(status), words) for domain, (status, words) in plain.items()})
