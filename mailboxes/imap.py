"""IMAP client at the network edge: config in, network I/O, values out.

Knows nothing about Django or our models. The poller owns the cursor
(UIDVALIDITY, last UID) and the transactions; this module only talks IMAP.

Invariants this module keeps for the poller:
- Folders are opened with EXAMINE (read-only) and bodies fetched with
  BODY.PEEK[]: reading a mailbox never marks a human's mail as \\Seen.
- UIDs handed out are strictly greater than the cursor: a "N:*" search
  returns the highest message even when its UID is below N (RFC 3501 6.4.8),
  so the result is filtered here, not trusted.
- Every imapclient/socket failure surfaces as ImapError (or a subclass), so
  callers can tell "wrong password" from "server gone" without knowing
  imaplib's exception tree.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

from imapclient import IMAPClient
from imapclient import exceptions as imap_exc

from .oauth2 import OAuth2Config, TokenRefused, TokenUnavailable, access_token
from .tls import tls_context
from .transports.base import CheckStep

logger = logging.getLogger(__name__)

SECURITY_CHOICES = ("none", "starttls", "tls")
FETCH_ITEMS = [b"BODY.PEEK[]", b"INTERNALDATE", b"RFC822.SIZE", b"FLAGS"]
FETCH_CHUNK = 500  # UIDs per FETCH command
META_ITEMS = [b"INTERNALDATE", b"RFC822.SIZE", b"FLAGS"]
_APPENDUID_RE = re.compile(rb"\[APPENDUID \d+ (\d+)\]", re.IGNORECASE)


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


@dataclass(frozen=True)
class FolderStatus:
    uidvalidity: int
    uidnext: int
    highestmodseq: int | None
    exists: int


@dataclass(frozen=True)
class FetchedMessage:
    uid: int
    internaldate: datetime  # timezone-aware, UTC
    raw: bytes
    size: int
    flags: tuple  # of str, e.g. ("\\Seen",)
    truncated: bool = False  # raw is the first bytes only (a partial fetch of a larger message)


class ImapError(Exception):
    """Any IMAP failure: protocol error, command refused, missing capability."""


class ImapAuthError(ImapError):
    """The server refused the credentials (or could not check them)."""


class ImapTokenRefused(ImapAuthError):
    """No OAuth2 login was tried: the token endpoint refused the mailbox's client or refresh token (`refusal`)."""

    def __init__(self, message: str, refusal: TokenRefused):
        super().__init__(message)
        self.refusal = refusal


class ImapConnectionError(ImapError):
    """Could not connect, or the connection broke or timed out mid-session."""


class ImapUidValidityError(ImapError):
    """The folder's UIDVALIDITY is not the one the caller's cursor belongs to."""

    def __init__(self, folder: str, expected: int, actual: int):
        super().__init__(
            f"UIDVALIDITY of {folder!r} is {actual}, expected {expected}: "
            "UIDs from the old cursor mean nothing now, rescan the folder"
        )
        self.folder = folder
        self.expected = expected
        self.actual = actual


class ImapSession:
    """One logged-in IMAP connection; use as a context manager.

    ``with ImapSession(config) as s: status = s.select("INBOX"); ...``
    """

    def __init__(self, config: ImapConfig):
        self.config = config
        self._client: IMAPClient | None = None
        self._broken = False  # set after a connection error: no polite logout then
        self._folder: str | None = None
        self.status: FolderStatus | None = None  # from the last select()

    # -- connection --------------------------------------------------------

    def __enter__(self) -> ImapSession:
        self.open()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def open(self) -> None:
        cfg = self.config
        where = f"{cfg.host}:{cfg.port}"
        try:
            client = IMAPClient(
                cfg.host,
                port=cfg.port,
                ssl=cfg.security == "tls",
                ssl_context=tls_context(cfg.ca_file) if cfg.security == "tls" else None,
                timeout=cfg.timeout,
            )
        except (OSError, imap_exc.IMAPClientError) as e:
            raise ImapConnectionError(f"cannot connect to IMAP server {where}: {e}") from e
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
                                        f"access token: {_text(e)[:200]}") from None
                rejected = token

    def close(self) -> None:
        """LOGOUT, or just drop the socket if the connection is already broken. Never raises."""
        client = self._client
        if client is None:
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
        self._folder = None
        if client is not None:
            try:
                client.shutdown()
            except Exception:
                pass

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
    def _errors(self, action: str):
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

    # -- reading -----------------------------------------------------------

    def select(self, folder: str) -> FolderStatus:
        """EXAMINE *folder* (read-only: nothing we do can set \\Seen)."""
        c = self._c
        self._folder = None  # a failed SELECT leaves no folder selected (RFC 3501 6.3.1)
        with self._errors(f"EXAMINE {folder!r}"):
            resp = c.select_folder(folder, readonly=True)
            uidnext = resp.get(b"UIDNEXT")
            if uidnext is None:  # optional in some old servers' SELECT; STATUS always has it
                uidnext = c.folder_status(folder, [b"UIDNEXT"])[b"UIDNEXT"]
        # The EXISTS of the SELECT itself is not news; only later ones are
        # (see idle_wait).
        self._pending_untagged().pop("EXISTS", None)
        self._folder = folder
        self.status = FolderStatus(
            uidvalidity=int(resp[b"UIDVALIDITY"]),
            uidnext=int(uidnext),
            highestmodseq=int(resp[b"HIGHESTMODSEQ"]) if b"HIGHESTMODSEQ" in resp else None,
            exists=int(resp[b"EXISTS"]),
        )
        return self.status

    def folders(self) -> list[tuple[str, str]]:
        """(name, hierarchy delimiter) of every folder the account has (LIST "" *)."""
        with self._errors("LIST"):
            listed = self._c.list_folders()
        return [(_text(name), _text(delimiter or b"")) for _flags, delimiter, name in listed]

    def sent_folders(self) -> set[str]:
        """The folders the server marks as holding sent mail (RFC 6154 special-use \\Sent)."""
        with self._errors("LIST"):
            listed = self._c.list_folders()
        return {_text(name) for flags, _delimiter, name in listed if b"\\Sent" in flags}

    def check(self, folders: list[str]) -> list[CheckStep]:
        """LIST, then EXAMINE each configured folder; a missing one is named with what it may be called."""
        steps: list[CheckStep] = []
        try:
            listed = self.folders()
        except ImapError as e:
            return [CheckStep("LIST", False, str(e))]
        names = [name for name, _ in listed]
        delimiter = next((d for _, d in listed if d), "/")
        steps.append(CheckStep("LIST", True, f"{len(names)} folders, hierarchy delimiter {delimiter!r}"))
        caps = [c for c in ("IDLE", "CONDSTORE") if self._c.has_capability(c)]
        steps.append(CheckStep("capabilities", True, ", ".join(caps) or "neither IDLE nor CONDSTORE: polling only"))
        for folder in folders:
            if folder not in names:
                guess = folder_guess(folder, names, delimiter)
                hint = f" — did you mean {guess}?" if guess else ""
                steps.append(CheckStep(f"SELECT {folder}", False, f"folder {folder} not found{hint}"))
                continue
            try:
                status = self.select(folder)
            except ImapError as e:
                steps.append(CheckStep(f"SELECT {folder}", False, str(e)))
            else:
                steps.append(CheckStep(f"SELECT {folder}", True, f"{status.exists} messages"))
        return steps

    def _require_folder(self) -> str:
        if self._folder is None:
            raise ImapError("no folder selected: call select(folder) first")
        return self._folder

    def uids_after(self, last_uid: int) -> list[int]:
        """UIDs strictly greater than *last_uid* in the selected folder, ascending."""
        self._require_folder()
        c = self._c
        with self._errors(f"UID SEARCH {last_uid + 1}:*"):
            found = c.search(f"UID {last_uid + 1}:*")
        # "N:*" always matches the highest UID, even if it is < N: filter.
        return sorted(uid for uid in found if uid > last_uid)

    def fetch(self, uids: list[int]) -> list[FetchedMessage]:
        """BODY.PEEK[] + INTERNALDATE + RFC822.SIZE + FLAGS, in UID order.

        A UID expunged since it was listed is simply absent from the result.
        """
        self._require_folder()
        if not uids:
            return []
        c = self._c
        wanted = sorted({int(u) for u in uids})
        data: dict = {}
        # Bounded command lines: servers cap them (Dovecot: 64 KiB).
        for i in range(0, len(wanted), FETCH_CHUNK):
            chunk = wanted[i : i + FETCH_CHUNK]
            with self._errors(f"UID FETCH ({len(chunk)} messages from UID {chunk[0]})"):
                data.update(c.fetch(chunk, FETCH_ITEMS))
        out = []
        for uid in wanted:
            item = data.get(uid)
            if item is None:
                continue  # expunged and already announced: not in the answer
            if b"BODY[]" in item and item[b"BODY[]"] is None:
                # Expunged by another session but not yet announced to ours:
                # Dovecot answers OK [EXPUNGEISSUED] with BODY[] NIL,
                # RFC822.SIZE 0 and INTERNALDATE 1970 (RFC 2180 4.1.3).
                continue
            raw = item.get(b"BODY[]")
            if raw is None:
                # Never silently skip a message that exists: the caller would
                # move its cursor past it and lose it for good.
                raise ImapError(f"server returned no body for UID {uid} (items: {sorted(item)})")
            out.append(
                FetchedMessage(
                    uid=uid,
                    internaldate=_as_utc(item.get(b"INTERNALDATE")),
                    raw=bytes(raw),
                    size=int(item.get(b"RFC822.SIZE", len(raw))),
                    flags=tuple(_text(f) for f in item.get(b"FLAGS", ())),
                )
            )
        return out

    def uid_since(self, day: date) -> int | None:
        """The lowest UID whose INTERNALDATE falls on *day* or later (UID SEARCH SINCE), or None."""
        self._require_folder()
        with self._errors(f"UID SEARCH SINCE {day:%d-%b-%Y}"):
            found = self._c.search(["SINCE", day])
        return min(found) if found else None

    def fetch_meta(self, uids: list[int]) -> list[FetchedMessage]:
        """INTERNALDATE, RFC822.SIZE and FLAGS only (no content), in UID order; ``raw`` is empty."""
        self._require_folder()
        wanted = sorted({int(u) for u in uids})
        data: dict = {}
        for i in range(0, len(wanted), FETCH_CHUNK):
            chunk = wanted[i : i + FETCH_CHUNK]
            with self._errors(f"UID FETCH sizes ({len(chunk)} messages from UID {chunk[0]})"):
                data.update(self._c.fetch(chunk, META_ITEMS))
        out = []
        for uid in wanted:
            item = data.get(uid)
            if item is None or b"INTERNALDATE" not in item or not item.get(b"RFC822.SIZE"):
                continue  # expunged (announced, or not yet: Dovecot's EXPUNGEISSUED answers size 0)
            out.append(FetchedMessage(uid=uid, internaldate=_as_utc(item[b"INTERNALDATE"]), raw=b"",
                                      size=int(item[b"RFC822.SIZE"]),
                                      flags=tuple(_text(f) for f in item.get(b"FLAGS", ()))))
        return out

    def fetch_content(self, messages: list[FetchedMessage], *, header_only: bool, limit: int,
                      budget: int) -> Iterator[FetchedMessage]:
        """The header (BODY.PEEK[HEADER]) or the whole message (BODY.PEEK[]), at most *limit* bytes each.

        Partial fetches (``<0.limit>``) keep a huge message from filling memory; one FETCH asks for at
        most *budget* bytes (by RFC822.SIZE), so a batch of large messages is read a few at a time.
        Yields copies of *messages* with ``raw`` filled, in their order; an expunged one is left out.
        """
        self._require_folder()
        section = "HEADER" if header_only else ""
        item = f"BODY.PEEK[{section}]<0.{limit}>".encode()
        group: list[FetchedMessage] = []
        spent = 0
        for message in [*messages, None]:
            if message is not None and (not group or spent + min(message.size, limit) <= budget):
                group.append(message)
                spent += min(message.size, limit)
                continue
            if group:
                yield from self._fetch_group(group, item, header_only, limit)
            group = [message] if message is not None else []
            spent = min(message.size, limit) if message is not None else 0

    def _fetch_group(self, group: list[FetchedMessage], item: bytes, header_only: bool,
                     limit: int) -> Iterator[FetchedMessage]:
        with self._errors(f"UID FETCH ({len(group)} messages from UID {group[0].uid})"):
            data = self._c.fetch([m.uid for m in group], [item])
        for message in group:
            answer = data.get(message.uid, {})
            raw = next((v for k, v in answer.items() if k.startswith(b"BODY[")), None)
            if raw is None:
                continue  # expunged since it was listed
            raw = bytes(raw)
            truncated = len(raw) >= limit and (header_only or message.size > len(raw))
            yield replace(message, raw=raw, truncated=truncated)

    def iter_new(
        self,
        folder: str,
        last_uid: int,
        batch_size: int = 200,
        *,
        uidvalidity: int | None = None,
    ) -> Iterator[list[FetchedMessage]]:
        """Select *folder* and yield messages with UID > *last_uid* in UID-ordered batches.

        Pass the cursor's *uidvalidity* to have the check and the listing on
        the same SELECT: a mismatch raises ImapUidValidityError before any
        message is yielded. ``self.status`` holds the SELECT result.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        status = self.select(folder)
        if uidvalidity is not None and status.uidvalidity != uidvalidity:
            raise ImapUidValidityError(folder, uidvalidity, status.uidvalidity)
        uids = self.uids_after(last_uid)
        for i in range(0, len(uids), batch_size):
            batch = self.fetch(uids[i : i + batch_size])
            if batch:
                yield batch

    # -- waiting -----------------------------------------------------------

    def _pending_untagged(self) -> dict:
        # imaplib keeps untagged responses that arrived with other commands
        # (e.g. "* 7 EXISTS" piggybacked on a FETCH) in this dict; imapclient
        # reads it the same way. Stdlib, stable.
        return self._c._imap.untagged_responses

    def idle_wait(self, timeout: float) -> bool:
        """IDLE on the selected folder until the server reports new mail or *timeout* passes.

        True if new mail was signalled (an EXISTS since the last select() or
        idle_wait()), False on timeout. A True is a hint to poll, not a count.
        """
        self._require_folder()
        c = self._c
        with self._errors("IDLE"):
            if not c.has_capability("IDLE"):
                raise ImapError(f"IMAP server {self.config.host} does not support IDLE")
        # Mail that arrived while we were busy with other commands was already
        # announced with their responses; IDLE would not announce it again.
        if self._pending_untagged().pop("EXISTS", None):
            return True
        deadline = time.monotonic() + max(0.0, timeout)
        signalled = False
        with self._errors("IDLE"):
            # Mail that arrived since our last command is not announced when
            # IDLE starts (Dovecot 2.3 reports it only at DONE, i.e. after the
            # whole timeout). A NOOP makes the server sync first; what is left
            # is the sub-millisecond gap between NOOP and IDLE, which DONE
            # still reports -- late, never lost.
            _noop_text, resps = c.noop()
            if any(_is_exists(r) for r in resps):
                self._pending_untagged().pop("EXISTS", None)
                return True
            while not signalled and time.monotonic() < deadline:
                c.idle()
                try:
                    while True:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        resps = c.idle_check(timeout=remaining)
                        if any(_is_exists(r) for r in resps):
                            signalled = True
                            break
                        if not resps and deadline - time.monotonic() > 0.01:
                            # Woken with nothing parsed: imapclient swallows EOF
                            # here. Leave IDLE; DONE on a dead socket raises.
                            break
                except BaseException:
                    # Still inside IDLE on the server: no other command can
                    # follow on this connection.
                    self._broken = True
                    raise
                _done_text, resps = c.idle_done()
                signalled = signalled or any(_is_exists(r) for r in resps)
            self._pending_untagged().pop("EXISTS", None)
        return signalled

    # -- IDLE for a multiplexing watcher (mailboxes.watcher) -------------------

    def idle_start(self) -> bool:
        """Enter IDLE on the selected folder; True when new mail was already announced (poll now)."""
        self._require_folder()
        c = self._c
        with self._errors("IDLE"):
            if not c.has_capability("IDLE"):
                raise ImapError(f"IMAP server {self.config.host} does not support IDLE")
            pending = bool(self._pending_untagged().pop("EXISTS", None))
            # As in idle_wait: a NOOP first, so that mail since our last command is not left unannounced.
            _noop_text, resps = c.noop()
            pending = pending or any(_is_exists(r) for r in resps)
            c.idle()
        return pending

    def idle_poll(self) -> bool:
        """What the server pushed while in IDLE (call when the socket is readable); True on EXISTS."""
        try:
            resps = self._c.idle_check(timeout=0)
        except (OSError, EOFError, imap_exc.IMAPClientError) as e:
            self._broken = True
            raise ImapConnectionError(f"IMAP IDLE on {self.config.host}:{self.config.port}: {e}") from e
        if not resps:
            # Readable with nothing to parse: imapclient swallows EOF there.
            self._broken = True
            raise ImapConnectionError(f"IMAP IDLE on {self.config.host}:{self.config.port}: connection closed")
        return any(_is_exists(r) for r in resps)

    def idle_done(self) -> bool:
        """Leave IDLE; True when the server reported new mail on the way out."""
        with self._errors("IDLE"):
            _done_text, resps = self._c.idle_done()
        self._pending_untagged().pop("EXISTS", None)
        return any(_is_exists(r) for r in resps)

    def fileno(self) -> int:
        return self._c.socket().fileno()

    # -- writing (tests and drills) ------------------------------------------

    def append(self, folder: str, raw: bytes, flags=(), when: datetime | None = None) -> int | None:
        """APPEND a message; returns its UID when the server says (UIDPLUS), else None."""
        c = self._c
        with self._errors(f"APPEND to {folder!r}"):
            resp = c.append(folder, raw, flags=tuple(flags), msg_time=when)
        m = _APPENDUID_RE.search(resp if isinstance(resp, bytes) else str(resp).encode())
        return int(m.group(1)) if m else None


def folder_guess(folder: str, names: list[str], delimiter: str) -> str:
    """A configured folder's likely real name: under INBOX with the server's delimiter, or a case variant."""
    for candidate in (f"INBOX{delimiter}{folder}", folder.replace("/", delimiter).replace(".", delimiter)):
        if candidate in names:
            return candidate
    lowered = {name.lower(): name for name in names}
    return lowered.get(folder.lower(), "") or lowered.get(f"inbox{delimiter}{folder}".lower(), "")


def _is_exists(resp) -> bool:
    return isinstance(resp, tuple) and len(resp) >= 2 and resp[1] == b"EXISTS"


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _as_utc(value) -> datetime:
    if not isinstance(value, datetime):
        raise ImapError(f"server returned no usable INTERNALDATE: {value!r}")
    if value.tzinfo is None:  # no zone in the server's date: RFC 3501 requires one; assume UTC
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
