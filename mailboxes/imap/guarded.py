"""An IMAPClient that connects only to an address mailboxes.targets allows.

The mail host's name is resolved and every address checked right before the socket opens, and the socket goes
to the checked address: a name that resolved to an allowed address when the mailbox was saved (or a moment
earlier, in `mail_host_problem`) and to a link-local or metadata address now (DNS rebinding) is refused. TLS
still verifies the server's certificate against the name. As `_GuardedSMTP` does for SMTP.
"""

from __future__ import annotations

import socket

from imapclient import IMAPClient
from imapclient.imap4 import IMAP4WithTimeout
from imapclient.tls import IMAP4_TLS, wrap_socket

from ..targets import Unresolved, mail_address


def _connected(host: str, port: int, timeout: float | None) -> socket.socket:
    try:
        address = mail_address(host, port)
    except Unresolved as exc:
        raise OSError(str(exc)) from None  # cannot connect (for now), like any unreachable host
    return socket.create_connection((address, port), timeout)


class _IMAP4(IMAP4WithTimeout):
    def _create_socket(self, timeout: float | None = None) -> socket.socket:  # imaplib's hook that connects
        return _connected(self.host, self.port, timeout if timeout is not None else self._timeout)


class _IMAP4_TLS(IMAP4_TLS):  # noqa: N801 - after imapclient's own name
    def _create_socket(self, timeout: float | None = None) -> socket.socket:
        sock = _connected(self.host, self.port, timeout if timeout is not None else self._timeout)
        return wrap_socket(sock, self.ssl_context, self.host)


class GuardedIMAPClient(IMAPClient):
    def _create_IMAP4(self):  # noqa: N802 - imapclient's hook that opens the connection
        connect_timeout = getattr(self._timeout, "connect", None)
        if self.ssl:
            return _IMAP4_TLS(self.host, self.port, self.ssl_context, connect_timeout)
        return _IMAP4(self.host, self.port, connect_timeout)
