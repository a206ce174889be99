"""IDLE on the selected folder: block until new mail or a timeout (idle_wait, for one poller), or enter IDLE and
hand the session over to a non-blocking IdleLine (idle_start / hand_over, for inbound.watcher's multiplexer).

A True from any of them is a hint to poll, not a count; mail announced with another command's response (kept in
imaplib's untagged responses) counts too, so none is left waiting for the next IDLE."""

from __future__ import annotations

import time

from .connection import ImapConnection
from .errors import ImapError
from .idle_line import IdleLine


class IdleCommands(ImapConnection):
    """IMAP IDLE (RFC 2177) on the folder selected last."""

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

    # -- IDLE for a multiplexing watcher (inbound.watcher) -------------------

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

    def hand_over(self, folder: str) -> IdleLine:
        """This session, in IDLE on `folder` (after idle_start), as a non-blocking IdleLine for a multiplexing
        watcher: what imaplib's reader has read ahead goes with it, and this session runs no command afterwards
        (only `drop`, which closes the socket)."""
        c = self._c
        imap = c._imap
        imap.sock.setblocking(False)
        try:
            read_ahead = imap.file.peek()  # bytes the server sent after the IDLE continuation, already read
        except OSError:  # nothing there (a TLS socket says so with an error)
            read_ahead = b""
        if read_ahead:
            imap.file.read(len(read_ahead))
        line = IdleLine(imap.sock, read_ahead, c._idle_tag, folder=folder,
                        where=f"{self.config.host}:{self.config.port}", timeout=self.config.timeout)
        # imaplib never reads this socket again: no command, no LOGOUT. Its objects go (10 KiB a connection, 10 MiB
        # a watcher of 1,000 folders); the socket stays open for the line, and `drop` closes it.
        imap.file.close()
        self._handed, self._client, self._broken = imap.sock, None, True
        return line


def _is_exists(resp) -> bool:
    return isinstance(resp, tuple) and len(resp) >= 2 and resp[1] == b"EXISTS"
