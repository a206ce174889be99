"""A listener on loopback that records every byte it receives: where a secret must never arrive.

It speaks just enough SMTP, IMAP or HTTP for a client to hand over what it would hand over (AUTH PLAIN/LOGIN
and its continuation, IMAP LOGIN/AUTHENTICATE, an HTTP POST of a token request), or only a banner that is no
mail server's greeting, or nothing at all.
"""

from __future__ import annotations

import socket
import threading


class Trap:
    def __init__(self, speaks: str = "smtp", *, banner: bytes | None = None):
        self.speaks = speaks  # smtp | imap | http | banner | silent
        self.banner = banner
        self.received = bytearray()
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> Trap:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def got(self, secret: str) -> bool:
        """Whether *secret* arrived, as it is or base64-encoded inside a SASL exchange."""
        import base64

        data = bytes(self.received)
        if secret.encode() in data:
            return True
        for line in data.split(b"\r\n"):
            for word in line.split():
                try:
                    if secret.encode() in base64.b64decode(word + b"===", validate=False):
                        return True
                except ValueError:
                    continue
        return False

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        send = conn.sendall
        try:
            if self.speaks == "silent":
                self._stop.wait(5)
                return
            if self.speaks == "banner":
                send(self.banner or b"SSH-2.0-OpenSSH_9.2p1 internal-build-host-7\r\n")
                self._stop.wait(1)
                return
            if self.speaks == "smtp":
                send(b"220 trap ESMTP\r\n")
            elif self.speaks == "imap":
                send(b"* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] trap ready\r\n")
            buffer = b""
            while not self._stop.is_set():
                chunk = conn.recv(65536)
                if not chunk:
                    return
                self.received += chunk
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    send(self._answer(line.strip()))
        except OSError:
            return
        finally:
            conn.close()

    def _answer(self, line: bytes) -> bytes:
        words = line.split()
        if self.speaks == "http":
            return b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" if not line else b""
        if self.speaks == "smtp":
            verb = words[0].upper() if words else b""
            if verb in (b"EHLO", b"HELO"):
                return b"250-trap\r\n250 AUTH PLAIN LOGIN\r\n"
            if verb == b"AUTH":
                return b"334 \r\n" if len(words) < 3 else b"235 ok\r\n"
            return b"250 ok\r\n" if verb else b"235 ok\r\n"
        tag = words[0] if words else b"*"
        command = words[1].upper() if len(words) > 1 else b""
        if command == b"CAPABILITY":
            return b"* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n" + tag + b" OK done\r\n"
        if command == b"AUTHENTICATE":
            return b"+ \r\n"
        return tag + b" OK done\r\n"
