"""A mailbox's whole connection check: every step of sending and of reading, no message sent, nothing written.

The mailbox form runs it on settings not yet saved; `manage.py mailbox_check` on a stored mailbox. Each step
carries the server's words and, where one helps, a hint. No transaction may be open around it (network I/O).
It also reads the sending domain's SPF, DKIM and DMARC records (`domain`): shown with the check, never part of
whether the connection passed (a record that keeps failing pauses the mailbox after a grace period instead).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.conf import settings

from .dns_lookup import domain_auth_lookup
from .domain_auth import DomainAuth, RecordCheck, Verdict, domain_of
from .imap.errors import ImapAuthError, ImapConnectionError, ImapError
from .imap.session import ImapSession
from .models import Mailbox
from .secrets import SecretRefused
from .selectors import imap_config_for, imap_password_missing, transport_for
from .transports.base import CheckStep


@dataclass(frozen=True)
class ImapLogin:
    """What a check learned of the IMAP credentials: accepted, refused (with the server's words), or neither (no
    password, the server unreachable)."""

    accepted: bool = False
    refused: str = ""


@dataclass(frozen=True)
class ConnectionCheck:
    sending: tuple[CheckStep, ...]
    reading: tuple[CheckStep, ...]
    folders: tuple[str, ...] = ()  # what the IMAP server's LIST named, for the folder picker
    domain: DomainAuth | None = None  # the sending domain's SPF, DKIM and DMARC, in words
    where: tuple[str, ...] = ()  # the servers it connected to (or would have), for the operator log
    imap_login: ImapLogin = ImapLogin()  # not kept in as_dict: recorded by the job that ran the check

    @property
    def passed(self) -> bool:
        return all(step.ok for step in self.sending + self.reading)

    def as_dict(self) -> dict:
        """As JSON holds it (an RQ job's result, read back by the page that waits on it)."""
        return {"sending": [asdict(s) for s in self.sending], "reading": [asdict(s) for s in self.reading],
                "folders": list(self.folders), "where": list(self.where),
                "domain": None if self.domain is None else {
                    "domain": self.domain.domain,
                    "checks": [{"record": c.record, "verdict": c.verdict.value, "words": c.words}
                               for c in self.domain.checks]}}

    @classmethod
    def from_dict(cls, data: dict) -> ConnectionCheck:
        domain = data.get("domain")
        return cls(tuple(CheckStep(**s) for s in data["sending"]), tuple(CheckStep(**s) for s in data["reading"]),
                   tuple(data["folders"]), where=tuple(data["where"]),
                   domain=None if domain is None else DomainAuth(domain["domain"], tuple(
                       RecordCheck(c["record"], Verdict(c["verdict"]), c["words"]) for c in domain["checks"])))

    @property
    def text(self) -> str:
        """One line: what passed, or the first step that failed with the server's words."""
        for part, steps in (("SMTP", self.sending), ("IMAP", self.reading)):
            if failed := next((s for s in steps if not s.ok), None):
                return f"{part} {failed.step} failed: {failed.detail}"
        return "SMTP and IMAP pass" if self.reading else "SMTP passes (no IMAP: replies are not read)"


def connection_check(mailbox: Mailbox) -> ConnectionCheck:
    """Check sending (connect, EHLO, STARTTLS/TLS, AUTH, MAIL FROM, RSET) and reading (login, LIST, EXAMINE)."""
    sending = tuple(transport_for(mailbox, timeout=settings.OUTREACH_CHECK_TIMEOUT).check(sender=mailbox.address))
    domain = domain_auth_for(mailbox)
    if not mailbox.has_imap:
        return ConnectionCheck(sending, (), domain=domain, where=servers(mailbox))
    reading, folders, login = imap_login_check(mailbox)
    return ConnectionCheck(sending, tuple(reading), tuple(folders), domain=domain, where=servers(mailbox),
                           imap_login=login)


def servers(mailbox: Mailbox, *, reading: bool = True) -> tuple[str, ...]:
    """Where a check of the mailbox connects, for the operator log: "SMTP host:port" (or the ESP), "IMAP host:port"."""
    sending = f"ESP {mailbox.esp_name}" if mailbox.transport_kind == "anymail" else (
        f"SMTP {mailbox.smtp_host}:{mailbox.smtp_port}")
    return (sending, f"IMAP {mailbox.imap_host}:{mailbox.imap_port}") if reading and mailbox.has_imap else (sending,)


def domain_auth_for(mailbox: Mailbox) -> DomainAuth:
    """The sending domain's SPF, DKIM (the mailbox's selector) and DMARC records, read for this mailbox."""
    smtp_host = mailbox.smtp_host if mailbox.transport_kind == "smtp" else ""
    return domain_auth_lookup(domain=domain_of(mailbox.address), selector=mailbox.dkim_selector, smtp_host=smtp_host)


def imap_check(mailbox: Mailbox) -> tuple[list[CheckStep], list[str]]:
    """(login, LIST, capabilities, EXAMINE of each reply folder) and the folders LIST named."""
    steps, folders, _ = imap_login_check(mailbox)
    return steps, folders


def imap_login_check(mailbox: Mailbox) -> tuple[list[CheckStep], list[str], ImapLogin]:
    """`imap_check`, and what it learned of the credentials (a caller checking the stored settings records it)."""
    if missing := imap_password_missing(mailbox):
        return [CheckStep("login", False, missing)], [], ImapLogin()
    try:
        config = imap_config_for(mailbox, timeout=settings.OUTREACH_CHECK_TIMEOUT)
    except SecretRefused as exc:
        return [CheckStep("login", False, str(exc))], [], ImapLogin()
    how = " with an OAuth2 access token" if config.oauth2 is not None else ""
    logged_in = False
    try:
        with ImapSession(config) as session:
            logged_in = True
            login = CheckStep("login", True, f"{config.username} on {config.host}:{config.port}{how}")
            folders = [name for name, _ in session.folders()]
            return [login, *session.check(list(mailbox.reply_folders))], folders, ImapLogin(accepted=True)
    except ImapError as exc:
        hint = _imap_hint(mailbox, exc, oauth2=config.oauth2 is not None)
        refused = str(exc) if isinstance(exc, ImapAuthError) and not logged_in else ""
        return [CheckStep("login", False, f"{exc} — {hint}")], [], ImapLogin(accepted=logged_in, refused=refused)


def _imap_hint(mailbox: Mailbox, exc: ImapError, *, oauth2: bool) -> str:
    if isinstance(exc, ImapAuthError):
        if oauth2:
            return (f"the server refused the token: check that {mailbox.imap_username} is the account that signed in "
                    "and that the grant includes IMAP")
        return ("check the IMAP username and password (Google and Microsoft want an app password, or sign in with "
                "OAuth)")
    if isinstance(exc, ImapConnectionError):
        if mailbox.imap_port == 993 and mailbox.imap_security != "tls":
            return "port 993 expects security TLS"
        if mailbox.imap_port == 143 and mailbox.imap_security == "tls":
            return "port 143 expects security none or STARTTLS"
        return "check the IMAP host, port and security, and that this machine may reach it"
    return "the server refused the command"
