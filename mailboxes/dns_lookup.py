"""DNS lookups with dnspython: the resolver of OUTREACH_DNS_RESOLVER (or the system's), answers as values.

Network edge, no models written: the domain-authentication check of a mailbox (SPF, DKIM, DMARC) and the
address check of an import (does the recipient's domain exist, does it take mail) read through here. A
time-out, SERVFAIL or an unreachable resolver is `Answer.UNAVAILABLE` ("could not check"), never an error
raised into a caller, and never the same thing as NXDOMAIN.
"""

from __future__ import annotations

import dns.exception
import dns.name
import dns.resolver
from django.conf import settings

from .domain_auth import Answer, DomainAuth, Lookup, dkim_check, dmarc_check, spf_check

OFF = "off"  # OUTREACH_DNS_RESOLVER=off: no lookup at all (a machine without DNS); every check "could not check"


def resolver_from(spec: str, *, timeout: float) -> dns.resolver.Resolver | None:
    """`spec`: "" (the system's resolver), "off" (None: no lookups) or "host[:port]" entries, comma separated,
    all on the same port."""
    if spec.strip().lower() == OFF:
        return None
    entries = [e.strip() for e in spec.split(",") if e.strip()]
    resolver = dns.resolver.Resolver(configure=not entries)
    if entries:
        hosts, ports = [], set()
        for entry in entries:
            host, port = entry, 53
            if entry.count(":") == 1:  # host:port (an IPv6 address alone has several colons)
                host, _, text = entry.partition(":")
                port = int(text)
            elif entry.startswith("[") and "]:" in entry:
                host, _, text = entry[1:].partition("]:")
                port = int(text)
            hosts.append(host.strip("[]"))
            ports.add(port)
        if len(ports) > 1:
            raise ValueError(f"OUTREACH_DNS_RESOLVER: every resolver must use the same port, got {sorted(ports)}")
        resolver.nameservers = hosts
        resolver.port = ports.pop()
    resolver.timeout = timeout
    resolver.lifetime = timeout
    resolver.cache = None  # every check reads the current records
    return resolver


def resolver() -> dns.resolver.Resolver | None:
    return resolver_from(settings.OUTREACH_DNS_RESOLVER, timeout=settings.OUTREACH_DNS_TIMEOUT)


def lookup(name: str, rdtype: str, *, using: dns.resolver.Resolver | None = None) -> Lookup:
    """One query: what came back, in the four cases a caller tells apart."""
    using = using or resolver()
    if using is None:
        return Lookup(Answer.UNAVAILABLE, detail="DNS lookups are turned off (OUTREACH_DNS_RESOLVER=off)")
    try:
        answer = using.resolve(name, rdtype, search=False)
    except dns.resolver.NXDOMAIN:
        return Lookup(Answer.NO_DOMAIN)
    except dns.resolver.NoAnswer:
        return Lookup(Answer.NO_RECORD)
    except dns.resolver.LifetimeTimeout:
        return Lookup(Answer.UNAVAILABLE, detail="no answer in time")
    except dns.resolver.NoNameservers:
        return Lookup(Answer.UNAVAILABLE, detail="the resolver failed to answer (SERVFAIL or refused)")
    except (dns.exception.DNSException, OSError, ValueError) as exc:
        return Lookup(Answer.UNAVAILABLE, detail=f"{type(exc).__name__}")
    if rdtype == "TXT":
        texts = tuple(b"".join(r.strings).decode("utf-8", "replace") for r in answer)
    elif rdtype == "MX":
        texts = tuple(r.exchange.to_text(omit_final_dot=True) for r in answer)
    else:
        texts = tuple(r.to_text() for r in answer)
    return Lookup(Answer.FOUND, texts)


def domain_auth_lookup(*, domain: str, selector: str, smtp_host: str = "") -> DomainAuth:
    """Look up and read the domain's SPF, DKIM (for `selector`) and DMARC records; network I/O, no transaction."""
    using = resolver()
    if using is None:
        unavailable = Lookup(Answer.UNAVAILABLE, detail="DNS lookups are turned off (OUTREACH_DNS_RESOLVER=off)")
        return DomainAuth(domain, (spf_check(domain, unavailable), dkim_check(domain, selector, unavailable),
                                   dmarc_check(domain, unavailable)))
    spf = spf_check(domain, lookup(domain, "TXT", using=using), smtp_host=smtp_host)
    dkim_lookup = lookup(f"{selector}._domainkey.{domain}", "TXT", using=using) if selector else None
    dkim = dkim_check(domain, selector, dkim_lookup)
    dmarc = dmarc_check(domain, lookup(f"_dmarc.{domain}", "TXT", using=using))
    return DomainAuth(domain, (spf, dkim, dmarc))
