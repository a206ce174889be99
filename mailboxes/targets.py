"""Where the server may connect on an operator's word: no request forgery into the private network, no scanner.

An operator types URLs (outbound webhooks, OAuth endpoints) and mail hosts; the server then connects to them.
Without a check, that makes the server a probe of its own network: a cloud metadata service
(169.254.169.254), an admin port on loopback, a database in a private range.

- **URLs** (webhooks, OAuth token, authorization and userinfo endpoints) must be https to public addresses.
- **Mail hosts** (SMTP, IMAP) must be public addresses on a mail port (OUTREACH_MAIL_PORTS: 25, 465, 587, 2525,
  143, 993 by default).
- A private, loopback or link-local target is allowed only when OUTREACH_ALLOW_PRIVATE_TARGETS lists its host
  name or a network holding its address; a listed target may use any port, and http for a URL (a receiver on
  this machine or in the private network, a company's own mail server). `scripts/run` lists loopback for the
  local run, where a local relay or the capture server is the usual mail host.
- "localhost" and every name under .localhost are loopback (RFC 6761): never resolved, always 127.0.0.1.
- An IPv6 address that embeds an IPv4 address (mapped, NAT64, 6to4, Teredo, IPv4-compatible) is judged by the
  IPv4 address it carries as well.

Every name is resolved and every address it resolves to is checked, at save and again at connect time: the
connection goes to an address that was just checked (`GuardedAdapter`, `checked_address`; for SMTP
`transports.smtp._GuardedSMTP`, for IMAP `imap.guarded.GuardedIMAPClient`), so a name that resolves to a
public address at save and to a private one later (DNS rebinding) is refused.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import NameResolutionError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata services that are not link-local (AWS over IPv6, Alibaba, Oracle's and Azure's wire servers).
METADATA = tuple(ipaddress.ip_network(n) for n in ("fd00:ec2::254/128", "100.100.100.200/32",
                                                    "168.63.129.16/32", "192.0.0.192/32"))
METADATA_NAMES = {"metadata", "metadata.google.internal", "metadata.goog", "instance-data",
                  "instance-data.ec2.internal"}


class TargetRefused(Exception):
    """The server will not connect there; the message says why, never with a timing or an answer."""


class Unresolved(TargetRefused):
    """The name resolves to no address."""


def _allow_list() -> tuple[frozenset[str], tuple]:
    return _parsed_allow_list(tuple(getattr(settings, "OUTREACH_ALLOW_PRIVATE_TARGETS", ())))


@functools.lru_cache(maxsize=8)
def _parsed_allow_list(entries: tuple[str, ...]) -> tuple[frozenset[str], tuple]:
    """The setting's host names and networks, parsed once per value of the setting (a file of thousands of
    mailboxes checks each host)."""
    names, networks = set(), []
    for entry in entries:
        entry = entry.strip().lower()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
        except ValueError:
            names.add(entry.rstrip("."))
    return frozenset(names), tuple(networks)


def _listed(host: str, address: Address | None) -> bool:
    names, networks = _allow_list()
    if host.lower().rstrip(".") in names:
        return True
    return address is not None and any(address.version == n.version and address in n for n in networks)


NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
LOOPBACK = ipaddress.ip_address("127.0.0.1")


def _unmapped(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _embedded(address: Address) -> list[Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, NAT64, 6to4, Teredo's client, IPv4-compatible)."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found = [address.ipv4_mapped, address.sixtofour, address.teredo[1] if address.teredo else None]
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in n for n in NAT64) or int(address) >> 32 == 0:  # NAT64; IPv4-compatible ::a.b.c.d
        found.append(low32)
    return [a for a in found if a is not None]


def address_problem(host: str, address: Address, *, private_ok: bool) -> str:
    """Why *address* (of *host*) may not be connected to, or ''."""
    address = _unmapped(address)
    if _listed(host, address):
        return ""
    for carried in _embedded(address):
        if problem := address_problem(host, carried, private_ok=private_ok):
            return f"{problem} (carried in {address})"
    if address.is_link_local or any(address in n for n in METADATA if n.version == address.version):
        return f"{host} is a link-local or cloud metadata address ({address})"
    if private_ok or address.is_global:
        return ""
    return (f"{host} is a private, loopback or reserved address ({address}); list it in "
            "OUTREACH_ALLOW_PRIVATE_TARGETS to allow it")


def is_localhost_name(host: str) -> bool:
    """'localhost' or a name under .localhost: loopback by definition (RFC 6761 6.3), never asked of DNS."""
    name = host.strip().rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def resolve(host: str, port: int) -> list[Address]:
    """Every address *host* resolves to; TargetRefused when it resolves to none."""
    try:
        return [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        pass
    if is_localhost_name(host):
        return [LOOPBACK]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolved(f"{host} does not resolve ({type(exc).__name__})") from None
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))


def checked_address(host: str, port: int, *, private_ok: bool) -> str:
    """Resolve *host* and check every address; the first one, to connect to. TargetRefused otherwise."""
    host = host.strip()
    if host.lower().rstrip(".") in METADATA_NAMES and not _listed(host, None):
        raise TargetRefused(f"{host} is a cloud metadata service")
    addresses = resolve(host, port)
    for address in addresses:
        if problem := address_problem(host, address, private_ok=private_ok):
            raise TargetRefused(problem)
    return str(_unmapped(addresses[0]))


def url_problem(url: str) -> str:
    """Why the server may not send requests to *url*, or '': https to a public address; a private one, or
    plain http, only to a host OUTREACH_ALLOW_PRIVATE_TARGETS lists. A name that resolves to nothing now is
    not refused here: the check at connect time stands between it and any address it resolves to later."""
    https_only = "use https (plain http only to a host listed in OUTREACH_ALLOW_PRIVATE_TARGETS)"
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return f"{url} is not a URL"
    if parts.scheme not in ("http", "https"):
        return https_only
    if not host:
        return f"{url} names no host"
    if host.lower().rstrip(".") in METADATA_NAMES and not _listed(host, None):
        return f"{host} is a cloud metadata service"
    try:
        addresses = resolve(host, port or (443 if parts.scheme == "https" else 80))
    except Unresolved:
        addresses = []
    for address in addresses:
        if problem := address_problem(host, address, private_ok=False):
            return problem
    if parts.scheme == "http" and not (_listed(host, None) or addresses and all(
            _listed(host, _unmapped(a)) for a in addresses)):
        return https_only
    return ""


def mail_ports() -> frozenset[int] | None:
    """The ports a mail host that is not listed may be reached on; None: any (OUTREACH_MAIL_PORTS = "any")."""
    ports = getattr(settings, "OUTREACH_MAIL_PORTS", None)
    return None if ports is None else frozenset(ports)


def mail_address(host: str, port: int) -> str:
    """Resolve mail host *host* and check it (a public address on a mail port, unless listed); the address to
    connect to. TargetRefused otherwise."""
    address = checked_address(host, port, private_ok=False)
    allowed = mail_ports()
    if allowed is not None and port not in allowed and not _listed(host, ipaddress.ip_address(address)):
        raise TargetRefused(f"port {port} is not a mail port ({', '.join(str(p) for p in sorted(allowed))}); "
                            "list the host in OUTREACH_ALLOW_PRIVATE_TARGETS, or the port in OUTREACH_MAIL_PORTS")
    return address


def mail_host_problem(host: str, port: int = 0) -> str:
    """Why the server may not connect to mail host *host* on *port* (0: any mail port), or ''. Checked again
    when the transport connects (`mail_address`)."""
    if not host:
        return ""
    try:
        if port:
            mail_address(host, port)
        else:
            checked_address(host, 25, private_ok=False)
    except Unresolved:
        return ""  # a name that does not resolve (yet) is the connection check's to report: no address, no probe
    except TargetRefused as exc:
        return str(exc)
    return ""


# --- connect time: requests that go only where the check allowed ------------------------------------------


class _GuardedMixin:
    """Resolve and check right before connecting, and connect to the checked address (TLS still verifies the
    certificate against the host name)."""

    def _new_conn(self):  # urllib3's hook that opens the socket
        try:
            self._dns_host = checked_address(self.host, self.port, private_ok=False)
        except Unresolved as exc:
            raise NameResolutionError(self.host, self, socket.gaierror(str(exc))) from None
        return super()._new_conn()


class _GuardedHTTPConnection(_GuardedMixin, HTTPConnection):
    pass


class _GuardedHTTPSConnection(_GuardedMixin, HTTPSConnection):
    pass


class _GuardedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _GuardedHTTPConnection


class _GuardedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """A requests adapter whose connections go only to addresses `checked_address` allows (no proxy)."""

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _GuardedHTTPPool, "https": _GuardedHTTPSPool}


def guard(session):
    """Mount GuardedAdapter on a requests session for http and https; no environment proxy."""
    session.trust_env = False
    session.mount("https://", GuardedAdapter())
    session.mount("http://", GuardedAdapter())
    return session
