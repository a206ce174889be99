"""A session in IDLE driven without blocking, for a watcher that serves many folders in one thread.

Once a session has entered IDLE (`IdleCommands.idle_start`), `IdleLine` takes its socket over: imaplib's reader
never reads it again. It reads what the server pushes (`read`, when the socket is readable) and runs short
exchanges without waiting for their answers (`begin`): DONE and a NOOP (a heartbeat) or an EXAMINE of the folder
(a re-check), then a UID SEARCH after a given UID when asked, then IDLE again. Each command is sent when the one
before it is answered (servers run pipelined commands in any order: Dovecot answers a SEARCH sent behind a NOOP
before the NOOP's sync); the thread meanwhile serves every other folder, and a server that stops answering holds
up only its own exchange (`overdue`).

What an exchange shows (`Answer`): whether the server announced new mail (`* n EXISTS`) at any point of it, what
the EXAMINE said (UIDVALIDITY, UIDNEXT, EXISTS), and the UIDs the search found beyond the UID it was asked
about. A NOOP makes the server sync the folder first, so every message delivered before the NOOP was sent is
either announced in its answer or was announced before; the search runs after that sync.
"""

from __future__ import annotations

import re
import ssl
import time
from dataclasses import dataclass, field

from imapclient import imap_utf7

from .errors import ImapConnectionError, ImapError
from .folders import FolderStatus

MAX_BUFFER = 4 * 1024 * 1024  # a server that sends this much without a line end is not speaking IMAP
_LITERAL = re.compile(rb"\{(\d+)\+?\}$")
_TAGGED = re.compile(rb"^([A-Za-z0-9.]+) (OK|NO|BAD)(?: (.*))?$", re.IGNORECASE)
_EXISTS = re.compile(rb"^\* (\d+) EXISTS", re.IGNORECASE)
_CODE = re.compile(rb"^\* OK \[(UIDVALIDITY|UIDNEXT|HIGHESTMODSEQ) (\d+)\]", re.IGNORECASE)
_SEARCH = re.compile(rb"^\* SEARCH\b(.*)$", re.IGNORECASE)
_BYE = re.compile(rb"^\* BYE\b ?(.*)$", re.IGNORECASE)
_NO_DATA = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


@dataclass(frozen=True)
class Answer:
    """What one exchange showed."""

    pushed: bool  # the server announced new mail (an EXISTS) while the exchange ran
    status: FolderStatus | None  # what the EXAMINE said (a re-check); None for a heartbeat
    after: int | None  # the UID the search looked beyond; None when no search was asked for
    beyond: tuple[int, ...]  # UIDs greater than `after` the folder holds


@dataclass(frozen=True)
class Read:
    """What one `read` found: new mail announced (a push) and the answer of an exchange that completed."""

    pushed: bool = False
    answer: Answer | None = None


@dataclass
class _Exchange:
    examine: bool
    after: int | None
    deadline: float
    pushed: bool = False
    codes: dict[bytes, int] = field(default_factory=dict)
    exists: int | None = None
    found: tuple[int, ...] = ()


class IdleLine:
    """The non-blocking side of one session in IDLE on `folder` (see the module's docstring)."""

    def __init__(self, sock, read_ahead: bytes, idle_tag: bytes, *, folder: str, where: str, timeout: float):
        self.sock = sock
        self.sock.setblocking(False)
        self.folder = folder
        self.where = where
        self.timeout = timeout
        self._buffer = bytearray(read_ahead)
        self._waiting: list[tuple[bytes, str]] = [(idle_tag, "idle")]  # (tag, what it answers), in order
        self._idling = True
        self._exchange: _Exchange | None = None
        self._entering = b""  # the tag of the IDLE being entered again
        self._tags = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    @property
    def busy(self) -> bool:
        """An exchange is running (or IDLE is being entered again): no other may begin."""
        return self._exchange is not None

    @property
    def buffered(self) -> bool:
        """Bytes already read and not yet parsed (the selector will not report them): call `read`."""
        return bool(self._buffer)

    def overdue(self, now: float) -> bool:
        return self._exchange is not None and now > self._exchange.deadline

    def begin(self, *, examine: bool, after: int | None) -> None:
        """DONE, then NOOP (a heartbeat) or EXAMINE of the folder (a re-check); a UID SEARCH for UIDs beyond
        `after` follows when `after` is given; then IDLE again. Sends and returns: `read` gives the answer."""
        if self._exchange is not None or not self._idling:
            raise ImapError(f"IMAP on {self.where}: an exchange is already running on this connection")
        self._exchange = _Exchange(examine=examine, after=after, deadline=time.monotonic() + self.timeout)
        self._idling = False
        if examine:
            self._send(b"DONE\r\n", "EXAMINE", b"EXAMINE " + _quoted(self.folder), "examine")
        else:
            self._send(b"DONE\r\n", "NOOP", b"NOOP", "noop")

    def read(self) -> Read:
        """Everything the server has sent so far (call when the socket is readable, or when `buffered`)."""
        self._receive()
        pushed = False
        answer = None
        for line in self._lines():
            got_push, got_answer = self._line(line)
            pushed = pushed or got_push
            answer = got_answer or answer
        return Read(pushed, answer)

    # --- the wire ------------------------------------------------------------------------------------

    def _send(self, prefix: bytes, name: str, command: bytes, kind: str) -> None:
        self._tags += 1
        tag = b"W%d" % self._tags
        data = prefix + tag + b" " + command + b"\r\n"
        try:
            sent = self.sock.send(data)
        except _NO_DATA:
            sent = 0
        except OSError as exc:
            raise ImapConnectionError(f"IMAP {name} on {self.where}: {type(exc).__name__}: {exc}") from exc
        if sent != len(data):  # a few bytes do not fit: the server has stopped reading this connection
            raise ImapConnectionError(f"IMAP {name} on {self.where}: the server does not read what is sent")
        self._waiting.append((tag, kind))

    def _receive(self) -> None:
        while True:
            try:
                chunk = self.sock.recv(65536)
            except _NO_DATA:
                return
            except OSError as exc:
                raise ImapConnectionError(f"IMAP IDLE on {self.where}: {type(exc).__name__}: {exc}") from exc
            if not chunk:
                raise ImapConnectionError(f"IMAP IDLE on {self.where}: connection closed")
            self._buffer += chunk
            if len(self._buffer) > MAX_BUFFER:
                raise ImapConnectionError(f"IMAP IDLE on {self.where}: more than {MAX_BUFFER} bytes without an "
                                          "end of line")

    def _lines(self) -> list[bytes]:
        """The complete lines in the buffer (a literal, `{n}` and n bytes, stays inside its line)."""
        lines = []
        buffer = self._buffer
        start = 0
        while True:
            scan = start
            while True:
                end = buffer.find(b"\r\n", scan)
                if end < 0:
                    del buffer[:start]
                    return lines
                literal = _LITERAL.search(bytes(buffer[max(scan, end - 16):end]))
                if literal is None:
                    break
                scan = end + 2 + int(literal.group(1))
                if scan > len(buffer):
                    del buffer[:start]
                    return lines
            lines.append(bytes(buffer[start:end]))
            start = end + 2

    # --- the conversation ------------------------------------------------------------------------------

    def _line(self, line: bytes) -> tuple[bool, Answer | None]:
        """(new mail announced, the exchange's answer when this line completed it)."""
        exchange = self._exchange
        kind = self._waiting[0][1] if self._waiting else ""
        if line.startswith(b"+"):
            if kind != "enter":
                raise ImapConnectionError(f"IMAP IDLE on {self.where}: unexpected continuation {line[:80]!r}")
            self._waiting[0] = (self._entering, "idle")  # in IDLE again: DONE ends this one
            self._idling = True
            self._exchange = None
            return False, None
        if line.startswith(b"* "):
            if bye := _BYE.match(line):
                raise ImapConnectionError(f"IMAP on {self.where}: the server closed the connection: "
                                          f"{bye.group(1)[:200].decode('utf-8', 'replace')}")
            if exists := _EXISTS.match(line):
                if kind == "examine" and exchange is not None:
                    exchange.exists = int(exists.group(1))  # the EXAMINE's own count: no news by itself
                    return False, None
                if exchange is not None:
                    exchange.pushed = True
                return True, None
            if exchange is not None and kind == "examine" and (code := _CODE.match(line)):
                exchange.codes[code.group(1).upper()] = int(code.group(2))
            elif exchange is not None and kind == "search" and (found := _SEARCH.match(line)):
                exchange.found += tuple(int(uid) for uid in found.group(1).split() if uid.isdigit())
            return False, None
        tagged = _TAGGED.match(line)
        if tagged is None or not self._waiting or tagged.group(1) != self._waiting[0][0]:
            raise ImapConnectionError(f"IMAP on {self.where}: unexpected answer {line[:120]!r}")
        self._waiting.pop(0)
        if tagged.group(2).upper() != b"OK":
            text = (tagged.group(3) or b"").decode("utf-8", "replace")[:200]
            raise ImapError(f"IMAP {kind.upper()} on {self.where} failed: {tagged.group(2).decode()} {text}")
        if exchange is None:  # the server ended IDLE on its own: reconnect rather than guess its state
            raise ImapConnectionError(f"IMAP IDLE on {self.where}: the server ended IDLE ({line[:80]!r})")
        if kind == "idle":
            return False, None
        if kind in ("noop", "examine") and exchange.after is not None:
            self._send(b"", "UID SEARCH", b"UID SEARCH UID %d:*" % (exchange.after + 1), "search")
            return False, None
        if kind in ("noop", "examine", "search"):
            return False, self._answered(exchange)
        return False, None

    def _answered(self, exchange: _Exchange) -> Answer:
        """The exchange's last command is answered: IDLE again, and its answer."""
        self._send(b"", "IDLE", b"IDLE", "enter")
        self._entering = self._waiting[-1][0]
        status = None
        if exchange.examine:
            codes = exchange.codes
            if b"UIDVALIDITY" not in codes or exchange.exists is None:
                raise ImapError(f"IMAP EXAMINE {self.folder!r} on {self.where}: no UIDVALIDITY or EXISTS in the "
                                "answer")
            status = FolderStatus(uidvalidity=codes[b"UIDVALIDITY"],
                                  uidnext=codes.get(b"UIDNEXT", 0),  # optional in old servers: the search decides
                                  highestmodseq=codes.get(b"HIGHESTMODSEQ"), exists=exchange.exists)
        after = exchange.after
        # "UID n:*" also matches the highest UID when it is below n (RFC 3501 6.4.8): only those beyond count.
        beyond = tuple(uid for uid in exchange.found if after is not None and uid > after)
        return Answer(exchange.pushed, status, after, beyond)


def _quoted(folder: str) -> bytes:
    """A folder name as an IMAP quoted string (modified UTF-7, RFC 3501 5.1.3)."""
    name = imap_utf7.encode(folder)
    return b'"' + name.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
