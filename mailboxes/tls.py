"""TLS for SMTP and IMAP: verification always on; a mailbox's own CA trusted besides the system bundle.

A password or an access token never crosses the network in clear text: logging in (SMTP AUTH, IMAP LOGIN or
AUTHENTICATE) over a connection without TLS is refused unless the server is on this machine (a loopback
address: a local relay, a capture server, the test servers). The transports refuse it when they connect, and
every way a mailbox is configured (the mailbox form, the admin, TOML) refuses it with the reason.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
from pathlib import Path

from django.conf import settings

from .targets import mail_host_problem

NO_TLS = "none"


CA_FILE_MAX_BYTES = 1024 * 1024


def tls_context(ca_file: str = "") -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_file:
        if problem := ca_file_problem(ca_file):
            raise ssl.SSLError(f"ca_file refused: {problem}")
        context.load_verify_locations(cafile=ca_file)
    return context


def ca_file_problem(ca_file: str) -> str:
    """Why *ca_file* may not be read as a private CA, or '': a readable PEM certificate file under one of
    OUTREACH_CA_DIRS (an operator's path must not make the server read, or reveal, any other file)."""
    if not ca_file:
        return ""
    allowed = [Path(d).resolve() for d in settings.OUTREACH_CA_DIRS]
    outside = (f"{ca_file!r} is not under an allowed directory ({', '.join(str(d) for d in allowed)}; "
               "OUTREACH_CA_DIRS), or names no file there")
    # The same words whether or not the path exists outside those directories: the field tells nothing of them.
    try:
        named = Path(os.path.abspath(ca_file))
        if not any(named.is_relative_to(d) for d in [*allowed, *map(os.path.abspath, settings.OUTREACH_CA_DIRS)]):
            return outside
        path = Path(ca_file).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return outside
    if not any(path.is_relative_to(d) for d in allowed):  # a link out of the directory
        return outside
    if not path.is_file() or not os.access(path, os.R_OK):
        return f"{ca_file!r} is not a readable file"
    if path.stat().st_size > CA_FILE_MAX_BYTES:
        return f"{ca_file!r} is larger than a CA certificate file"
    with path.open("rb") as handle:
        if b"-----BEGIN CERTIFICATE-----" not in handle.read(CA_FILE_MAX_BYTES):
            return f"{ca_file!r} holds no PEM certificate"
    return ""


def is_loopback(host: str) -> bool:
    """Whether *host* names this machine by itself: "localhost" or a loopback address (127.0.0.0/8, ::1).

    Never resolved: a name that resolves to a loopback address today may not tomorrow."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def cleartext_login_problem(*, protocol: str, host: str, security: str, logs_in: bool = True) -> str:
    """Why this connection may not log in ('' when it may): a login without TLS to a host not on this machine."""
    if not logs_in or security != NO_TLS or not host or is_loopback(host):
        return ""
    port = "587 with STARTTLS or 465 with TLS" if protocol == "SMTP" else "993 with TLS or 143 with STARTTLS"
    return (f"{protocol} would send the password without encryption to {host}: choose STARTTLS or TLS "
            f"(usually port {port}); only a server on this machine (localhost) may be used without")


def _port(value) -> int:
    return value if isinstance(value, int) and 0 < value < 65536 else 0


def mailbox_connection_problems(fields) -> dict[str, str]:
    """For a mailbox's columns (a dict or a Mailbox), field -> why it is refused: a login that would go in clear
    text (the security fields), a host the server may not connect to (mailboxes.targets), a ca_file it may not
    read.

    SMTP logs in when it has a username (a password or an OAuth2 token), unless an ESP carries the mail; IMAP
    always logs in when it has a host."""
    value = fields.get if isinstance(fields, dict) else (lambda name, default=None: getattr(fields, name, default))
    smtp_logs_in = value("transport_kind", "smtp") in ("smtp", "", None) and bool(value("smtp_username", ""))
    problems = {
        "smtp_security": cleartext_login_problem(protocol="SMTP", host=value("smtp_host", "") or "",
                                                 security=value("smtp_security", NO_TLS), logs_in=smtp_logs_in),
        "imap_security": cleartext_login_problem(protocol="IMAP", host=value("imap_host", "") or "",
                                                 security=value("imap_security", NO_TLS)),
    }
    problems["smtp_host"] = mail_host_problem(value("smtp_host", "") or "", _port(value("smtp_port", 0))) if (
        smtp_logs_in or value("transport_kind", "smtp") in ("smtp", "", None)) else ""
    problems["imap_host"] = mail_host_problem(value("imap_host", "") or "", _port(value("imap_port", 0)))
    problems["ca_file"] = ca_file_problem(value("ca_file", "") or "")
    return {name: problem for name, problem in problems.items() if problem}
