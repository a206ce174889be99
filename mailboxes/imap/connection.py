"""One IMAP connection: connect (TLS or STARTTLS), log in with a password or an OAuth2 token (SASL OAUTHBEARER
or XOAUTH2), enable CONDSTORE, close; and the translation of every imapclient/imaplib/socket failure into
ImapError's kinds. The commands (folders, fetch, idle) build on it."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Self

from imapclient import IMAPClient
from imapclient import exceptions as imap_exc

from ..oauth2 import OAuth2Config, TokenRefused, TokenUnavailable, access_token
from ..targets import TargetRefused, mail_host_problem
from ..tls import cleartext_login_problem, tls_context
from .errors import ImapAuthError, ImapConnectionError, ImapError, ImapTokenRefused
from .guarded import GuardedIMAPClient

logger = logging.getLogger(__name__)

SECURITY_CHOICES = ("none", "starttls", "tls")


@dataclass(frozen=True)
class ImapConfig:
    host: str
    port: int
    username: str
    password: str
    security: str = "none"  # "none" | "starttls" | "tls"
    timeout: float = 30.0
    ca_file: str = ""  # a private CA trusted besides the system's
    oauth2: OAuth2Config | None = None  # log in with an OAuth2 access token (OAUTHBEARER / XOAUTH2) instead

    def __post_init__(self) -> None:
        if self.security not in SECURITY_CHOICES:
            raise ValueError(f"security must be one of {SECURITY_CHOICES}, not {self.security!r}")

    def __repr__(self) -> str:  # never print the password in logs or tracebacks
        return (
            f"ImapConfig(host={self.host!r}, port={self.port!r}, username={self.username!r}, "
            f"password='***', security={self.security!r}, timeout={self.timeout!r})"
        )


class ImapConnection:
    """The logged-in connection and its state; use a session (``session.ImapSession``) as a context manager."""

    def __init__(self, config: ImapConfig):
        self.config = config
        self._client: IMAPClient | None = None
        self._broken = False  # set after a connection error: no polite logout then
        self._folder: str | None = None
        self._handed: socket.socket | None = None  # the socket an IdleLine took over (idle.hand_over)

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def open(self) -> None:
        cfg = self.config
        where = f"{cfg.host}:{cfg.port}"
        if problem := cleartext_login_problem(protocol="IMAP", host=cfg.host, security=cfg.security):
            # Before connecting: IMAP always logs in, and never with a password in clear text.
            raise ImapAuthError(f"refused to log in as {cfg.username!r} on {where}: {problem}")
        if problem := mail_host_problem(cfg.host, cfg.port):
            raise ImapAuthError(f"refused to connect to {where}: {problem}")
        try:
            client = GuardedIMAPClient(
                cfg.host,
                port=cfg.port,
                ssl=cfg.security == "tls",
                ssl_context=tls_context(cfg.ca_file) if cfg.security == "tls" else None,
                timeout=cfg.timeout,
            )
        except TargetRefused as e:
            raise ImapAuthError(f"refused to connect to {where}: {e}") from None
        except OSError as e:
            raise ImapConnectionError(f"cannot connect to IMAP server {where}: {e}") from e
        except imap_exc.IMAPClientError:
            # No "* OK" greeting: what the other end said is not shown (the check is no port scanner).
            raise ImapConnectionError(f"{where} did not greet as an IMAP server") from None
        # Aware datetimes with the server's offset; we convert to UTC ourselves.
        # (The default turns INTERNALDATE into naive *local* time.)
        client.normalise_times = False
        self._client = client
        self._broken = False
        try:
            with self._errors(f"connect to {where}"):
                if cfg.security == "starttls":
                    client.starttls(tls_context(cfg.ca_file))
                if cfg.oauth2 is not None:
                    self._oauth2_login(client, cfg.oauth2, where)
                else:
                    try:
                        client.login(cfg.username, cfg.password)
                    except imap_exc.LoginError as e:
                        said = as_text(e.args[0] if e.args else e)[:200]
                        if over_connection_limit(e):  # the password was not the problem: try again later
                            raise ImapConnectionError(f"IMAP login as {cfg.username!r} on {where} refused: the "
                                                      f"account has as many connections as the server allows: "
                                                      f"{said}") from e
                        if isinstance(e.__context__, imap_exc.IMAPClientAbortError):
                            # The connection broke before the answer (imaplib's abort: EOF, reset), as Dovecot
                            # drops a login when its imap processes are all in use: no word on the password.
                            raise ImapConnectionError(f"IMAP login as {cfg.username!r} on {where}: the server "
                                                      f"closed the connection before answering ({said})") from e
                        raise ImapAuthError(f"IMAP login as {cfg.username!r} on {where} refused: {e}") from e
                # HIGHESTMODSEQ only appears in SELECT once CONDSTORE is enabled,
                # and ENABLE is only legal before a folder is selected.
                if client.has_capability("CONDSTORE") and client.has_capability("ENABLE"):
                    client.enable("CONDSTORE")
        except BaseException:
            self._drop()
            raise

    def _oauth2_login(self, client: IMAPClient, oauth: OAuth2Config, where: str) -> None:
        """AUTHENTICATE with an access token (OAUTHBEARER where offered, else XOAUTH2); a refused token is
        refreshed and tried once more. The token is never part of an error or a log line."""
        cfg = self.config
        bearer = client.has_capability("AUTH=OAUTHBEARER")
        if not bearer and not client.has_capability("AUTH=XOAUTH2"):
            raise ImapAuthError(f"IMAP server {where} offers no OAuth2 mechanism (AUTH=OAUTHBEARER or AUTH=XOAUTH2)")
        rejected = ""
        for attempt in (1, 2):
            try:
                token = access_token(oauth, rejected=rejected)
            except TokenRefused as e:
                raise ImapTokenRefused(f"OAuth2 for IMAP login as {cfg.username!r}: {e} — {e.hint}", e) from None
            except TokenUnavailable as e:
                raise ImapConnectionError(f"OAuth2 for IMAP login as {cfg.username!r}: {e}") from None
            try:
                if bearer:
                    client.oauthbearer_login(cfg.username, token)
                else:
                    client.oauth2_login(cfg.username, token)
                return
            except imap_exc.LoginError as e:
                if attempt == 2:
                    raise ImapAuthError(f"IMAP OAuth2 login as {cfg.username!r} on {where} refused with a fresh "
                                        f"access token: {as_text(e)[:200]}") from None
                rejected = token

    def close(self) -> None:
        """LOGOUT, or just drop the socket if the connection is already broken. Never raises."""
        client = self._client
        if client is None:
            self._drop()
            return
        if not self._broken:
            try:
                client.logout()
                self._client = None
                self._folder = None
                return
            except Exception as e:  # the server may be gone; nothing to report to the caller
                logger.debug("IMAP logout from %s failed: %s", self.config.host, e)
        self._drop()

    def drop(self) -> None:
        """Close the socket without LOGOUT (a connection in IDLE would wait for DONE first). Never raises."""
        self._drop()

    def _drop(self) -> None:
        client, self._client = self._client, None
        handed, self._handed = self._handed, None
        self._folder = None
        if client is not None:
            try:
                client.shutdown()
            except Exception:
                pass
        if handed is not None:
            try:
                handed.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            handed.close()

    @property
    def _c(self) -> IMAPClient:
        if self._client is None:
            raise ImapError("IMAP session is not open (use it as a context manager)")
        if self._broken:
            raise ImapConnectionError(
                f"IMAP connection to {self.config.host}:{self.config.port} is broken; open a new session"
            )
        return self._client

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Translate imapclient/imaplib/socket errors into our three kinds."""
        where = f"{self.config.host}:{self.config.port}"
        try:
            yield
        except ImapError:
            raise
        except imap_exc.LoginError as e:
            raise ImapAuthError(f"IMAP {action} on {where}: authentication failed: {e}") from e
        except imap_exc.IMAPClientAbortError as e:
            # imaplib.abort: EOF, unterminated line, BYE -- the connection is unusable.
            self._broken = True
            raise ImapConnectionError(f"IMAP {action} on {where}: connection lost: {e}") from e
        except (OSError, EOFError) as e:  # refused, reset, broken pipe, socket timeout, TLS
            self._broken = True
            raise ImapConnectionError(f"IMAP {action} on {where}: {type(e).__name__}: {e}") from e
        except imap_exc.IMAPClientError as e:  # NO/BAD from the server, missing capability
            raise ImapError(f"IMAP {action} on {where} failed: {e}") from e

    def _require_folder(self) -> str:
        if self._folder is None:
            raise ImapError("no folder selected: call select(folder) first")
        return self._folder

    def _pending_untagged(self) -> dict:
        # imaplib keeps untagged responses that arrived with other commands
        # (e.g. "* 7 EXISTS" piggybacked on a FETCH) in this dict; imapclient
        # reads it the same way. Stdlib, stable.
        return self._c._imap.untagged_responses


# A login refused because the account holds as many connections as the server allows, not for its credentials:
# the RFC 5530 [LIMIT] code (Dovecot: "Maximum number of connections from user+IP exceeded"), Gmail's "Too many
# simultaneous connections".
_LIMIT_WORDS = (b"[LIMIT]", b"too many simultaneous connections", b"maximum number of connections")


def over_connection_limit(error: Exception) -> bool:
    said = error.args[0] if error.args else str(error)
    text = (said if isinstance(said, bytes) else str(said).encode("utf-8", "replace")).lower()
    return any(words.lower() in text for words in _LIMIT_WORDS)


def as_text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
