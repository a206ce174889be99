"""What an IMAP session raises: ImapError and its kinds, so callers need not know imaplib's exception tree."""

from __future__ import annotations

from ..oauth2 import TokenRefused


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
