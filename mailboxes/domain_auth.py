"""Domain authentication in words: what a sending domain's SPF, DKIM and DMARC records say. Pure parsing, no DNS.

Gmail (since November 2025) and Outlook.com (since May 2025) reject bulk mail from a domain without SPF, DKIM
and DMARC. `mailboxes.dns` looks the records up; the functions here read what came back and say, per record,
whether it is there and sane, in words an operator can act on. What they cannot know they do not claim: SPF is
read one level deep (an `include:` is a name, not a promise that it covers the SMTP server), DKIM is "a key is
published for this selector", not "the server signs with it".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"  # missing or broken: counts toward the grace period
    UNKNOWN = "unknown"  # could not check (time-out, SERVFAIL, no resolver): never a failure
    RESERVED = "reserved"  # a reserved test domain (`reserved_domain`): can never pass, never a failure


class Answer(StrEnum):
    """What a DNS lookup of one name came back with."""

    FOUND = "found"
    NO_RECORD = "no_record"  # the name exists but has no record of the type asked
    NO_DOMAIN = "no_domain"  # NXDOMAIN
    UNAVAILABLE = "unavailable"  # time-out, SERVFAIL, refused, no resolver reachable


@dataclass(frozen=True)
class Lookup:
    answer: Answer
    texts: tuple[str, ...] = ()  # TXT strings (each record's parts joined), or host names for MX
    detail: str = ""  # why it was unavailable, for "could not check"


@dataclass(frozen=True)
class RecordCheck:
    record: str  # "SPF" | "DKIM" | "DMARC"
    verdict: Verdict
    words: str  # the whole sentence an operator reads

    @property
    def line(self) -> str:
        return f"{self.record}: {self.words}"


@dataclass(frozen=True)
class DomainAuth:
    domain: str
    checks: tuple[RecordCheck, ...]

    @property
    def verdict(self) -> Verdict:
        verdicts = {c.verdict for c in self.checks}
        if Verdict.RESERVED in verdicts:
            return Verdict.RESERVED
        if Verdict.FAIL in verdicts:
            return Verdict.FAIL
        return Verdict.UNKNOWN if Verdict.UNKNOWN in verdicts else Verdict.PASS

    @property
    def summary(self) -> str:
        return "\n".join(c.line for c in self.checks)

    @property
    def failing(self) -> str:
        """The failing records' sentences, one line (for a pause reason)."""
        return " ".join(c.line for c in self.checks if c.verdict == Verdict.FAIL)


def could_not_check(record: str, name: str, lookup: Lookup) -> RecordCheck:
    return RecordCheck(record, Verdict.UNKNOWN,
                       f"could not check — the DNS lookup of {name} failed ({lookup.detail or 'no answer'}); "
                       "this is not counted as a failure and is tried again at the next check")


# --- reserved names ---------------------------------------------------------------------------------

# Names reserved for tests and documentation (RFC 2606, RFC 6761): the public DNS answers NXDOMAIN for each, so
# their SPF, DKIM and DMARC can never pass there. The demo mailbox (sales@demo.outreach.test) is one.
RESERVED_SUFFIXES = ("test", "example", "invalid", "localhost", "example.com", "example.net", "example.org")


def reserved_domain(domain: str) -> bool:
    """Whether `domain` is, or is under, a name reserved for tests and documentation."""
    name = domain.strip().rstrip(".").lower()
    return any(name == suffix or name.endswith("." + suffix) for suffix in RESERVED_SUFFIXES)


def reserved_report(domain: str) -> DomainAuth:
    """The one line said for a reserved domain, instead of three records "missing" that nobody can add."""
    return DomainAuth(domain, (RecordCheck("SPF, DKIM and DMARC", Verdict.RESERVED,
                                           f"cannot be checked — {domain} is a reserved test domain, which no "
                                           "public DNS server answers for"),))


# --- SPF -------------------------------------------------------------------------------------------

SPF_MECHANISM = re.compile(r"^[+\-~?]?(all|include|a|mx|ptr|ip4|ip6|exists)([:/].*)?$", re.IGNORECASE)
SPF_MODIFIER = re.compile(r"^[a-z][a-z0-9_.-]*=.*$", re.IGNORECASE)
ALL_WORDS = {
    "-": "ends in -all (mail from other servers fails SPF)",
    "~": "ends in ~all (mail from other servers soft-fails SPF)",
    "?": "ends in ?all (neutral: receivers treat other servers as unknown)",
    "+": "ends in +all, which lets every server on the internet send as this domain — use ~all or -all",
}
# SMTP hosts of the common providers and the SPF include each publishes: a hint to look for, never a proof.
PROVIDER_INCLUDES = (
    ("google.com", "_spf.google.com"),
    ("gmail.com", "_spf.google.com"),
    ("office365.com", "spf.protection.outlook.com"),
    ("outlook.com", "spf.protection.outlook.com"),
    ("sendgrid.net", "sendgrid.net"),
    ("brevo.com", "spf.brevo.com"),
    ("sendinblue.com", "spf.sendinblue.com"),
    ("mailgun.org", "mailgun.org"),
    ("amazonaws.com", "amazonses.com"),
    ("zoho.com", "zoho.com"),
    ("zoho.eu", "zoho.eu"),
    ("fastmail.com", "messagingengine.com"),
)


def spf_check(domain: str, lookup: Lookup, *, smtp_host: str = "") -> RecordCheck:
    """SPF: exactly one `v=spf1` TXT record on the domain, every term well formed, and how it ends."""
    if lookup.answer == Answer.UNAVAILABLE:
        return could_not_check("SPF", domain, lookup)
    records = [t for t in lookup.texts if t.strip().lower().startswith("v=spf1") and
               (len(t.strip()) == 6 or t.strip()[6] == " ")]
    add = f"Add one TXT record on {domain} such as v=spf1 include:<your provider's SPF name> ~all."
    if not records:
        return RecordCheck("SPF", Verdict.FAIL,
                           f"missing — Gmail and Outlook reject bulk mail without it. {add}")
    if len(records) > 1:
        return RecordCheck("SPF", Verdict.FAIL,
                           f"{len(records)} SPF records on {domain}; receivers treat more than one as an error "
                           "(permerror). Merge them into one TXT record.")
    terms = records[0].split()[1:]
    bad = [t for t in terms if not (SPF_MECHANISM.match(t) or SPF_MODIFIER.match(t))]
    if bad:
        return RecordCheck("SPF", Verdict.FAIL,
                           f"the record on {domain} has terms receivers cannot read: {', '.join(bad[:3])}. "
                           "Fix the TXT record (each term is a mechanism such as include:, ip4:, mx or ~all).")
    words = f"present on {domain}"
    alls = [t for t in terms if t.lower().lstrip("+-~?") == "all"]
    if alls:
        qualifier = alls[-1][0] if alls[-1][0] in "+-~?" else "+"
        if qualifier == "+":
            return RecordCheck("SPF", Verdict.FAIL, f"{words}, but it {ALL_WORDS['+']}.")
        words += f", {ALL_WORDS[qualifier]}"
    else:
        words += ", with no all term at its end (receivers treat other servers as neutral)"
    words += _spf_covers(terms, smtp_host)
    return RecordCheck("SPF", Verdict.PASS, words + ".")


def _spf_covers(terms: list[str], smtp_host: str) -> str:
    """Whether the record could include the SMTP provider: a name match only (an include is not followed)."""
    host = smtp_host.lower().rstrip(".")
    includes = [t.split(":", 1)[1].lower() for t in terms if t.lower().lstrip("+-~?").startswith("include:")]
    for suffix, include in PROVIDER_INCLUDES:
        if host == suffix or host.endswith("." + suffix):
            if any(i == include or i.endswith("." + include) for i in includes):
                return f"; it includes {include}, the SPF name of {smtp_host}'s provider"
            return (f"; it does not include {include}, the SPF name {smtp_host}'s provider usually asks for — "
                    "check the provider's instructions")
    if host and not includes and not any(t.lower().lstrip("+-~?").split(":")[0] in ("a", "mx", "ip4", "ip6")
                                         for t in terms):
        return f"; it names no server at all, so it cannot cover {smtp_host}"
    return ""


# --- DKIM ------------------------------------------------------------------------------------------


def dkim_tags(text: str) -> dict[str, str]:
    tags = {}
    for part in text.split(";"):
        name, sep, value = part.partition("=")
        if sep:
            tags[name.strip().lower()] = re.sub(r"\s+", "", value)
    return tags


def dkim_check(domain: str, selector: str, lookup: Lookup | None) -> RecordCheck:
    """DKIM: a TXT record at <selector>._domainkey.<domain> with a non-empty p= (the public key)."""
    if not selector:
        return RecordCheck("DKIM", Verdict.UNKNOWN,
                           "not checked — the mailbox names no DKIM selector. Set the selector your provider signs "
                           "with (for example google for Google Workspace, selector1 for Microsoft 365) in the "
                           "mailbox's settings.")
    name = f"{selector}._domainkey.{domain}"
    assert lookup is not None
    if lookup.answer == Answer.UNAVAILABLE:
        return could_not_check("DKIM", name, lookup)
    records = [dkim_tags(t) for t in lookup.texts]
    records = [r for r in records if "p" in r or r.get("v", "").upper() == "DKIM1"]
    if not records:
        return RecordCheck("DKIM", Verdict.FAIL,
                           f"missing — no key at {name}. Gmail and Outlook reject bulk mail that is not signed. "
                           "Turn on DKIM signing at your provider and publish the TXT record it gives you there.")
    if not any(r.get("p") for r in records):
        why = "no p= tag" if not any("p" in r for r in records) else "an empty p= (the key was revoked)"
        return RecordCheck("DKIM", Verdict.FAIL,
                           f"the record at {name} has {why}. Publish the current public key your provider gives "
                           "you.")
    return RecordCheck("DKIM", Verdict.PASS, f"a key is published at {name}.")


# --- DMARC -----------------------------------------------------------------------------------------

DMARC_POLICIES = {"none": "p=none (monitoring only)", "quarantine": "p=quarantine", "reject": "p=reject"}


def dmarc_check(domain: str, lookup: Lookup) -> RecordCheck:
    """DMARC: one TXT record at _dmarc.<domain> beginning v=DMARC1 with a p= policy."""
    name = f"_dmarc.{domain}"
    if lookup.answer == Answer.UNAVAILABLE:
        return could_not_check("DMARC", name, lookup)
    add = f"Add a TXT record at {name} such as v=DMARC1; p=none; rua=mailto:dmarc@{domain}"
    records = [t for t in lookup.texts if t.strip().upper().startswith("V=DMARC1")]
    if not records:
        return RecordCheck("DMARC", Verdict.FAIL, f"missing — Gmail and Outlook reject bulk mail without it. {add}")
    if len(records) > 1:
        return RecordCheck("DMARC", Verdict.FAIL,
                           f"{len(records)} records at {name}; receivers ignore DMARC when there is more than one. "
                           "Keep one.")
    tags = dkim_tags(records[0])
    policy = tags.get("p", "").lower()
    if policy not in DMARC_POLICIES:
        found = f"p={policy}" if "p" in tags else "no p= tag"
        return RecordCheck("DMARC", Verdict.FAIL,
                           f"the record at {name} has {found}; it needs p=none, p=quarantine or p=reject. {add}")
    return RecordCheck("DMARC", Verdict.PASS, f"present at {name}, {DMARC_POLICIES[policy]}.")


def domain_of(address: str) -> str:
    return address.rpartition("@")[2].strip().rstrip(".").lower()
