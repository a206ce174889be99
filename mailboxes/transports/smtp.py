"""SMTP submission with smtplib, reporting where a failure happened; a connection is reused for the next message.

Connection reuse (`ConnectionPool`): after a message is accepted, its
connection waits, per process and per mailbox configuration, for the next
message of the same mailbox; that message begins with RSET (which also proves
the connection alive) and, if the server has gone, with a new connection —
nothing of the message was sent yet, so this is no retry. A connection that
saw any failure is closed, never reused; one idle for `keep_alive` seconds, or
that carried `max_messages` messages, is closed with QUIT. The pool holds only
sockets: whether a message may leave is decided by the final check before
every send, whatever connection carries it. A probe (`check`) always opens its
own connection and logs in.

Command pipelining (RFC 2920), where the server offers it (Postfix, Exim,
Gmail and Microsoft do): RSET, MAIL FROM, RCPT TO and DATA go in one write and
their replies are read together, so a message costs two round trips (the
commands, then its content) instead of five. Every reply is checked; the
content is sent only after DATA's 354 and only when MAIL and RCPT were
accepted, so a refusal is reported as without pipelining. A server that does
not offer it gets one command at a time.
"""

from __future__ import annotations

import atexit
import re
import smtplib
import ssl
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..oauth2 import OAuth2Config, TokenRefused, TokenUnavailable, access_token, oauthbearer, xoauth2
from ..status_codes import HARD_STATUS_CODES
from ..targets import TargetRefused, Unresolved, mail_address
from ..tls import cleartext_login_problem, tls_context
from .base import (
    CheckStep,
    MailboxRefused,
    OutcomeUnknown,
    PermanentError,
    RecipientRefused,
    Submission,
    TransientError,
    Transport,
    TransportError,
)


@dataclass(frozen=True)
class SmtpConfig:
    host: str
    port: int
    username: str = ""
    password: str = field(default="", repr=False)  # never in a repr, log line or traceback
    security: str = "none"  # none | starttls | tls; "none" logs in only to a loopback host (mailboxes.tls)
    timeout: float = 30.0
    local_hostname: str | None = None
    ca_file: str = ""  # a private CA to trust besides the system's
    password_env: str = ""  # the name of the variable the password came from (for hints; never its value)
    keep_alive: float = 30.0  # seconds an idle connection waits for the mailbox's next message (0: never reused)
    max_messages: int = 100  # messages per connection, then a new one (servers limit it)
    oauth2: OAuth2Config | None = None  # log in with an OAuth2 access token (XOAUTH2 / OAUTHBEARER) instead


# A 5.7.x refusal in these words is about who sends, not about the recipient.
SENDER_POLICY = re.compile(
    r"sender|relay|not owned|client host|authenticat|not (?:permitted|allowed|authori[sz]ed) to send|"
    r"submission", re.IGNORECASE,
)
POLICY_CODE = re.compile(r"\b5\.7\.\d{1,3}\b")


def tls_refused(exc: ssl.SSLError, *, ca_file: str, stage: str) -> MailboxRefused:
    """A TLS failure names the configuration to look at."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in text:
        if "mismatch" in text.lower():
            hint = "the certificate names another host: connect with the host name it was issued for"
        elif ca_file:
            hint = f"the certificate does not verify against ca_file {ca_file}"
        else:
            hint = "certificate signed by an unknown CA (or self-signed) — set ca_file to that CA's certificate"
    elif "WRONG_VERSION_NUMBER" in text or "wrong version number" in text.lower():
        hint = 'this port does not speak TLS on connect: use security = "starttls" (usually port 587)'
    else:
        hint = "the TLS handshake failed"
    return MailboxRefused(f"TLS failed at {stage}: {text}", hint=hint)


ENHANCED = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")


def is_hard_bounce(code: int, text: str) -> bool:
    match = ENHANCED.search(text)
    if match:
        # Only codes that mean the address itself is bad; others, like 5.7.1
        # policy or relay refusals, say nothing certain about the address.
        return match.group(0) in HARD_STATUS_CODES
    return code in (550, 551, 553)


def envelope_address(address: str) -> str:
    """An address for MAIL FROM / RCPT TO: its domain in IDNA (punycode); the local part as given."""
    local, sep, domain = address.rpartition("@")
    if not sep or domain.isascii():
        return address
    return f"{local}@{domain.encode('idna').decode('ascii')}"


def _text(reply: bytes | str) -> str:
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


class _GuardedSMTP(smtplib.SMTP):
    """Connects only to an address mailboxes.targets allows: the name is resolved and checked right before the
    connection, which goes to the checked address (TLS still verifies the certificate against the name)."""

    def _get_socket(self, host, port, timeout):
        try:
            address = mail_address(host, port)
        except Unresolved as exc:
            raise OSError(str(exc)) from None  # as before: cannot connect (for now)
        return super()._get_socket(address, port, timeout)


class _GuardedSMTP_SSL(smtplib.SMTP_SSL, _GuardedSMTP):  # noqa: N801 - after smtplib's own name
    """SMTP_SSL wraps the socket _GuardedSMTP opened, with the mailbox's host name for SNI and verification."""


class SmtpTransport(Transport):
    """Submits one message over SMTP with smtplib, reporting where a failure happened and its scope."""

    supports_scheduled_send = False  # SMTP has no "deliver later"
    supports_cancel = False  # nothing to cancel once DATA is accepted

    def __init__(self, config: SmtpConfig):
        self.config = config

    def send(self, *, sender: str, recipient: str, message: bytes) -> Submission:
        client = POOL.take(self.config)
        reused = client is not None
        if client is None:
            client = self._open()
        elif not client.has_extn("pipelining") and not _answers_rset(client):
            client.close()  # the server closed it meanwhile (its own idle timeout): nothing was sent on it
            client, reused = self._open(), False
        try:
            try:
                submission = self._converse(client, sender, recipient, message, rset=reused)
            except _Gone:
                # A reused connection the server had closed: nothing of the message was sent (no 354 was read).
                client.close()
                client = self._open()
                submission = self._converse(client, sender, recipient, message, rset=False)
        except BaseException:
            _close(client)  # whatever the server made of it, this connection is not reused
            raise
        POOL.keep(self.config, client)
        return submission

    def check(self, *, sender: str) -> list[CheckStep]:
        """connect, EHLO, STARTTLS/TLS, AUTH, MAIL FROM the mailbox address, RSET: no message is sent."""
        steps: list[CheckStep] = []
        try:
            client = self._open(steps)
        except TransportError as exc:
            return steps + [CheckStep(steps_failed_at(steps, self.config), False, str(exc))]
        try:
            code, reply = client.mail(sender)
            if code != 250:
                refusal = self._mail_refusal(code, reply, sender)
                return steps + [CheckStep("MAIL FROM", False, str(refusal))]
            steps.append(CheckStep("MAIL FROM", True, f"{code} {_text(reply)}"))
            code, reply = client.rset()
            steps.append(CheckStep("RSET", code == 250, f"{code} {_text(reply)}"))
        except (OSError, smtplib.SMTPException) as exc:
            steps.append(CheckStep("MAIL FROM", False, f"{type(exc).__name__}: {exc}"))
        finally:
            _close(client)
        return steps

    # --- the session up to MAIL FROM ---------------------------------------------------

    def _open(self, steps: list[CheckStep] | None = None) -> smtplib.SMTP:
        """Connect, greet, secure and authenticate; every failure is raised with its scope."""
        cfg = self.config
        record = steps.append if steps is not None else (lambda step: None)
        if cfg.username and not cfg.password and cfg.oauth2 is None:
            # Found before any login attempt: a missing secret must not cost a failed AUTH at the server.
            if cfg.password_env:
                raise MailboxRefused(f"no password for {cfg.username}: the environment variable {cfg.password_env} "
                                     "is not set (the mailbox's SMTP password variable)",
                                     hint="set it where the workers run, or type the SMTP password on the "
                                          "mailbox's Edit page")
            raise MailboxRefused(f"no password for {cfg.username}: no SMTP password is stored",
                                 hint="type the SMTP password on the mailbox's Edit page, or leave the SMTP "
                                      "username empty for a server that needs no login")
        if problem := cleartext_login_problem(protocol="SMTP", host=cfg.host, security=cfg.security,
                                              logs_in=bool(cfg.username)):
            # Before connecting: no configuration may put a password on the wire in clear text.
            raise MailboxRefused(f"refused to log in: {problem}", hint='set security = "starttls" or "tls"')
        if cfg.oauth2 is not None and cfg.username:
            # Before connecting: a revoked refresh token must not cost a failed AUTH at the server.
            self._token(cfg.oauth2, "")
            record(CheckStep("OAuth2 token", True, f"access token from {urlsplit(cfg.oauth2.token_url).netloc}"))
        try:
            if cfg.security == "tls":
                client: smtplib.SMTP = _GuardedSMTP_SSL(
                    cfg.host, cfg.port, timeout=cfg.timeout, local_hostname=cfg.local_hostname,
                    context=tls_context(cfg.ca_file),
                )
            else:
                client = _GuardedSMTP(cfg.host, cfg.port, timeout=cfg.timeout, local_hostname=cfg.local_hostname)
        except TargetRefused as exc:
            raise MailboxRefused(f"refused to connect: {exc}", hint="use the mail server's public or private "
                                 "address (OUTREACH_ALLOW_PRIVATE_TARGETS lists exceptions)") from None
        except ssl.SSLError as exc:
            raise tls_refused(exc, ca_file=cfg.ca_file, stage="connect") from exc
        except smtplib.SMTPConnectError as exc:
            if not 200 <= exc.smtp_code < 600:
                # Not an SMTP greeting: what the other end said is not shown (the check is no port scanner).
                raise MailboxRefused(f"{cfg.host}:{cfg.port} did not greet as an SMTP server",
                                     hint="check the SMTP host and port") from None
            text = f"{exc.smtp_code} {_text(exc.smtp_error)}"
            if 500 <= exc.smtp_code < 600:
                raise MailboxRefused(f"the server refused the connection: {text}",
                                     hint="the server does not accept mail from this host") from exc
            raise TransientError(f"the server refused the connection for now: {text}", connection=True) from exc
        except (OSError, smtplib.SMTPException) as exc:
            raise TransientError(f"cannot connect to {cfg.host}:{cfg.port}: {exc}{self._port_hint()}",
                                 connection=True) from exc
        record(CheckStep("connect", True, f"{cfg.host}:{cfg.port}" + (" (TLS)" if cfg.security == "tls" else "")))
        try:
            client.ehlo_or_helo_if_needed()
            record(CheckStep("EHLO", True, _text(client.ehlo_resp or b"").splitlines()[0] if client.ehlo_resp else ""))
            if cfg.security == "starttls":
                if not client.has_extn("starttls"):
                    raise MailboxRefused("the server does not offer STARTTLS",
                                         hint='use security = "tls" (port 465) or "none"')
                try:
                    client.starttls(context=tls_context(cfg.ca_file))
                except ssl.SSLError as exc:
                    raise tls_refused(exc, ca_file=cfg.ca_file, stage="STARTTLS") from exc
                client.ehlo()
                record(CheckStep("STARTTLS", True, "encrypted"))
            if cfg.username:
                self._authenticate(client)
                how = " with an OAuth2 access token" if cfg.oauth2 is not None else ""
                record(CheckStep("AUTH", True, f"logged in as {cfg.username}{how}"))
        except TransportError:
            _close(client)
            raise
        except (OSError, smtplib.SMTPException) as exc:
            _close(client)
            raise TransientError(f"SMTP failed before DATA: {exc}") from exc
        return client

    def _authenticate(self, client: smtplib.SMTP) -> None:
        """One AUTH attempt with one mechanism: smtplib's login() tries every mechanism in turn,
        which doubles the failed logins a provider counts against the account."""
        cfg = self.config
        if not client.has_extn("auth"):
            if cfg.security == "none" and client.has_extn("starttls"):
                hint = 'the server offers AUTH only after STARTTLS: set security = "starttls"'
            else:
                hint = "the server offers no AUTH on this port"
            raise MailboxRefused("SMTP AUTH is not offered by the server", hint=hint)
        offered = client.esmtp_features["auth"].upper().split()
        if cfg.oauth2 is not None:
            self._authenticate_oauth2(client, offered, cfg.oauth2)
            return
        mechanism = next((m for m in ("PLAIN", "LOGIN") if m in offered), None)
        if mechanism is None:
            raise MailboxRefused(f"no AUTH mechanism in common (the server offers {' '.join(offered)})",
                                 hint="PLAIN or LOGIN over TLS is needed")
        client.user, client.password = cfg.username, cfg.password
        try:
            client.auth(mechanism, getattr(client, f"auth_{mechanism.lower()}"), initial_response_ok=True)
        except smtplib.SMTPAuthenticationError as exc:
            text = f"{exc.smtp_code} {_text(exc.smtp_error)}"
            if 400 <= exc.smtp_code < 500:
                raise TransientError(f"authentication deferred: {text}", code=exc.smtp_code) from exc
            where = f"the password in {cfg.password_env}" if cfg.password_env else "the username and password"
            raise MailboxRefused(f"authentication failed: {text}", code=exc.smtp_code,
                                 hint=f"check {where}") from exc

    def _authenticate_oauth2(self, client: smtplib.SMTP, offered: list[str], oauth: OAuth2Config) -> None:
        """AUTH with an access token; a refused token is refreshed and tried once more, then the mailbox's failure.

        OAUTHBEARER (RFC 7628) where offered, else XOAUTH2 (Google, Microsoft). After a refused token the
        server sends a 334 with its error (JSON); the answer is an empty line, then it says 535.
        """
        cfg = self.config
        mechanism = next((m for m in ("OAUTHBEARER", "XOAUTH2") if m in offered), None)
        if mechanism is None:
            raise MailboxRefused(f"the server offers no OAuth2 mechanism (it offers {' '.join(offered)})",
                                 hint='XOAUTH2 or OAUTHBEARER is needed for auth = "oauth2"')
        rejected = ""
        for attempt in (1, 2):
            token = self._token(oauth, rejected)
            initial = (oauthbearer(cfg.username, token, cfg.host, cfg.port) if mechanism == "OAUTHBEARER"
                       else xoauth2(cfg.username, token))
            try:
                client.auth(mechanism, lambda challenge=None, first=initial: first if challenge is None else "",
                            initial_response_ok=True)
                return
            except smtplib.SMTPAuthenticationError as exc:
                text = f"{exc.smtp_code} {_text(exc.smtp_error)}"
                if 400 <= exc.smtp_code < 500:
                    raise TransientError(f"authentication deferred: {text}", code=exc.smtp_code) from None
                if attempt == 2:
                    raise MailboxRefused(f"{mechanism} authentication failed with a fresh access token: {text}",
                                         code=exc.smtp_code,
                                         hint=f"check that {cfg.username} granted the app mail access (scope "
                                              f"{oauth.scope or 'of the token'})") from None
                rejected = token  # refreshed once: it may have been revoked or expired early

    @staticmethod
    def _token(oauth: OAuth2Config, rejected: str) -> str:
        try:
            return access_token(oauth, rejected=rejected)
        except TokenRefused as exc:
            raise MailboxRefused(f"OAuth2: {exc}", hint=exc.hint) from None
        except TokenUnavailable as exc:
            raise TransientError(f"OAuth2: {exc}", connection=True) from None

    def _port_hint(self) -> str:
        cfg = self.config
        if cfg.port == 465 and cfg.security != "tls":
            return ' (port 465 expects security = "tls")'
        if cfg.port == 587 and cfg.security == "tls":
            return ' (port 587 expects security = "starttls")'
        return ""

    # --- the message ---------------------------------------------------------------------

    def _converse(self, client: smtplib.SMTP, sender: str, recipient: str, message: bytes, *,
                  rset: bool) -> Submission:
        """One message on an open connection. `rset`: the connection carried a message before; where the server
        pipelines, the command group begins with RSET (elsewhere `send` has sent it already)."""
        try:
            try:
                sender, recipient = envelope_address(sender), envelope_address(recipient)
            except UnicodeError as exc:
                raise PermanentError(f"address cannot be sent: {exc}") from exc
            options: list[str] = []
            if not (sender.isascii() and recipient.isascii()):
                # A non-ASCII local part travels only as SMTPUTF8 (RFC 6531), and only where the server offers it.
                if not client.has_extn("smtputf8"):
                    raise PermanentError(f"the server does not offer SMTPUTF8, needed for {recipient!r}")
                options.append("SMTPUTF8")
            rcpt: Reply | None = None
            data_reply: Reply | None = None
            if client.has_extn("pipelining"):
                mail, rcpt, data_reply = _pipelined(client, sender, recipient, options, rset=rset)
            else:
                mail = client.mail(sender, options)
            if mail[0] != 250:
                raise self._mail_refusal(*mail, sender)
            code, reply = rcpt or client.rcpt(recipient)
            if code not in (250, 251):
                if 500 <= code < 600:
                    text = _text(reply)
                    if POLICY_CODE.search(text) and SENDER_POLICY.search(text):
                        # Postfix's reject_sender_login_mismatch answers at RCPT: the sender's scope.
                        raise MailboxRefused(f"{code} {text} (at RCPT TO)", code=code,
                                             hint=f"the server does not let this account send as {sender}")
                    raise RecipientRefused(f"{code} {text}", code=code, hard=is_hard_bounce(code, text))
                raise self._refusal(code, reply, "RCPT TO")
        except (TransportError, _Gone):
            raise
        except (OSError, smtplib.SMTPException) as exc:
            # Nothing of the message has been sent yet.
            raise TransientError(f"SMTP failed before DATA: {exc}") from exc
        except (UnicodeError, ValueError) as exc:
            # smtplib refused to put the command on the wire (e.g. a non-ASCII address): nothing was sent.
            raise PermanentError(f"SMTP refused before DATA: {type(exc).__name__}: {exc}") from exc

        # The DATA command itself, before any byte of the message: a failure here is one like any other.
        if data_reply is None:
            try:
                data_reply = client.docmd("DATA")
            except (OSError, smtplib.SMTPException) as exc:
                raise TransientError(f"SMTP failed at DATA, before the message: {exc}") from exc
        code, reply = data_reply
        if code != 354:
            raise self._refusal(code, reply, "DATA")
        # From here on the server may have the message: a broken connection is an unknown outcome.
        try:
            code, reply = self._send_data(client, message)
        except (OSError, smtplib.SMTPException) as exc:
            raise OutcomeUnknown(f"connection failed during DATA: {type(exc).__name__}: {exc}") from exc
        if code != 250:
            raise self._refusal(code, reply, "DATA")
        return Submission(reply=f"{code} {_text(reply)}")

    @staticmethod
    def _send_data(client: smtplib.SMTP, message: bytes) -> tuple[int, bytes]:
        """The message after a 354, as smtplib.SMTP.data sends it (dot-stuffed, CRLF.CRLF)."""
        data = smtplib._quote_periods(message)
        if data[-2:] != smtplib.bCRLF:
            data += smtplib.bCRLF
        client.send(data + b"." + smtplib.bCRLF)
        return client.getreply()

    def _mail_refusal(self, code: int, reply: bytes | str, sender: str) -> TransportError:
        if 500 <= code < 600:
            # A refused sender refuses every message of this mailbox.
            return MailboxRefused(f"{code} {_text(reply)} (at MAIL FROM)", code=code,
                                  hint=f"the server does not let this account send as {sender}")
        return self._refusal(code, reply, "MAIL FROM")

    @staticmethod
    def _refusal(code: int, reply: bytes | str, stage: str) -> TransportError:
        text = f"{code} {_text(reply)} (at {stage})"
        if 400 <= code < 500:
            return TransientError(text, code=code)
        return PermanentError(text, code=code)


class _Gone(Exception):
    """A reused connection failed before the server answered anything of this message: open a new one."""


Reply = tuple[int, bytes]


def _answers_rset(client: smtplib.SMTP) -> bool:
    try:
        code, _ = client.rset()
    except (OSError, smtplib.SMTPException):
        return False
    return code == 250


def _pipelined(client: smtplib.SMTP, sender: str, recipient: str, options: list[str], *,
               rset: bool) -> tuple[Reply, Reply, Reply]:
    """RSET (on a reused connection), MAIL FROM, RCPT TO and DATA in one write (RFC 2920); their replies.

    Raises _Gone when a reused connection fails before its RSET is answered: the server had closed it.
    When MAIL or RCPT was refused and DATA was answered 354 all the same, the connection is closed
    there and then: no content is ever sent after a refusal.
    """
    encoding = "utf-8" if "SMTPUTF8" in options else "ascii"
    optionlist = "".join(f" {option}" for option in options)
    lines = [*(["RSET"] if rset else []), f"MAIL FROM:{smtplib.quoteaddr(sender)}{optionlist}",
             f"RCPT TO:{smtplib.quoteaddr(recipient)}", "DATA"]
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError("command and arguments contain prohibited newline characters")
    group = "".join(f"{line}\r\n" for line in lines).encode(encoding)  # UnicodeError: nothing was sent
    client.command_encoding = encoding  # as smtplib's mail() leaves it, for the commands that follow
    try:
        client.send(group)
        if rset:
            code, _ = client.getreply()
            if code != 250:
                raise _Gone
    except (OSError, smtplib.SMTPException) as exc:
        if rset:
            raise _Gone from exc
        raise
    mail, rcpt, data = client.getreply(), client.getreply(), client.getreply()
    if data[0] == 354 and (mail[0] != 250 or rcpt[0] not in (250, 251)):
        client.close()
    return mail, rcpt, data


def steps_failed_at(steps: list[CheckStep], cfg: SmtpConfig) -> str:
    """The name of the step after the last one that succeeded."""
    order = (["OAuth2 token"] if cfg.oauth2 is not None and cfg.username else []) + ["connect", "EHLO"] + (
        ["STARTTLS"] if cfg.security == "starttls" else []) + (
        ["AUTH"] if cfg.username else [])
    done = {s.step for s in steps}
    return next((name for name in order if name not in done), "MAIL FROM")


def _close(client: smtplib.SMTP) -> None:
    try:
        client.quit()
    except Exception:  # noqa: BLE001 - the outcome is already decided
        client.close()


class ConnectionPool:
    """Open SMTP connections waiting for their mailbox's next message: one per configuration, per process.

    A connection is taken out while it carries a message (so two threads never share one) and put back after
    the server accepted it. A daemon thread closes connections left idle longer than their keep_alive.
    """

    def __init__(self):
        self._idle: dict[SmtpConfig, tuple[smtplib.SMTP, float, int]] = {}
        self._lock = threading.Lock()
        self._reaper: threading.Thread | None = None

    def take(self, config: SmtpConfig) -> smtplib.SMTP | None:
        """An idle connection for `config`, or None (open a new one). The next message begins with RSET, which
        proves it alive (`SmtpTransport.send`)."""
        with self._lock:
            entry = self._idle.pop(config, None)
        if entry is None:
            return None
        client, since, carried = entry
        if time.monotonic() - since > config.keep_alive:
            _close(client)
            return None
        client.outreach_carried = carried  # type: ignore[attr-defined]
        return client

    def keep(self, config: SmtpConfig, client: smtplib.SMTP) -> None:
        """After an accepted message: keep the connection for the next one, or close it."""
        with self._lock:
            carried = getattr(client, "outreach_carried", 0) + 1
            if config.keep_alive <= 0 or carried >= config.max_messages or config in self._idle:
                keep = False
            else:
                keep = True
                self._idle[config] = (client, time.monotonic(), carried)
                self._start_reaper()
        if not keep:
            _close(client)

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = list(self._idle.values()), {}
        for client, _, _ in idle:
            _close(client)

    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap, name="smtp-pool-reaper", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            with self._lock:
                stale = [key for key, (_, since, _) in self._idle.items() if now - since > key.keep_alive]
                closing = [self._idle.pop(key)[0] for key in stale]
                done = not self._idle
                if done:
                    self._reaper = None
            for client in closing:
                _close(client)
            if done:
                return


POOL = ConnectionPool()
atexit.register(POOL.close_all)
