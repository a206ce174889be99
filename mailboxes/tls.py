"""TLS for SMTP and IMAP: verification always on; a mailbox's own CA trusted besides the system bundle."""

from __future__ import annotations

import ssl


def tls_context(ca_file: str = "") -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context
