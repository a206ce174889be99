"""A copy of a message we sent, appended to the account's Sent folder with \\Seen: what the salesperson's own mail
client shows as sent.

The Sent folder is the one the server marks \\Sent (RFC 6154 SPECIAL-USE), else one with a usual name in the
personal namespace ("Sent", "Sent Items", "Sent Messages": imapclient's find_special_folder); only when there is
none is "Sent" created (under the personal namespace's prefix, e.g. "INBOX.Sent" on a Cyrus-style server) and
subscribed, so mail clients that list subscribed folders only show it.

A copy is appended once: the folder is searched for the message's Message-ID first, so a repeated job (a retry
after an APPEND whose answer was lost, a duplicated RQ delivery) adds nothing. Like every command here: config
in, network I/O, values out; no models.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from imapclient.imapclient import SENT

from .connection import as_text
from .errors import ImapError
from .session import ImapSession

SEEN = rb"\Seen"
DEFAULT_NAME = "Sent"


@dataclass(frozen=True)
class SentCopy:
    folder: str
    uid: int | None  # from APPENDUID (or the search that found it already there); None when the server says neither
    created_folder: bool = False  # the account had no Sent folder: this copy made one
    already_there: bool = False  # a copy with this Message-ID was in the folder: nothing appended


class SentCopySession(ImapSession):
    """An IMAP session that can find (or make) the Sent folder and append a copy to it."""

    def sent_folder(self) -> tuple[str, bool]:
        """(the Sent folder's name, whether it was created now)."""
        c = self._c
        with self._errors("LIST (find the Sent folder)"):
            found = c.find_special_folder(SENT)
        if found:
            return as_text(found), False
        name = self._personal_prefix() + DEFAULT_NAME
        try:
            with self._errors(f"CREATE {name!r}"):
                c.create_folder(name)
        except ImapError:
            # Another copy job may have created it a moment ago (NO [ALREADYEXISTS]): then it is there to use.
            with self._errors(f"LIST {name!r}"):
                if not c.folder_exists(name):
                    raise
            return name, False
        with self._errors(f"SUBSCRIBE {name!r}"):
            c.subscribe_folder(name)
        return name, True

    def _personal_prefix(self) -> str:
        """Where the account's own folders live ("" on most servers, "INBOX." on Cyrus-style ones)."""
        c = self._c
        if not c.has_capability("NAMESPACE"):
            return ""
        with self._errors("NAMESPACE"):
            personal = c.namespace().personal
        return as_text(personal[0][0]) if personal else ""

    def copy_to_sent(self, raw: bytes, *, message_id: str, when: datetime | None = None) -> SentCopy:
        """Append *raw* (the exact bytes handed to the transport) to the Sent folder with \\Seen, unless a message
        with *message_id* is there already. *when*: its INTERNALDATE (the hand-off's time; default: now)."""
        folder, created = self.sent_folder()
        if not created and message_id:
            if uid := self._uid_of(folder, message_id):
                return SentCopy(folder, uid, already_there=True)
        uid = self.append(folder, raw, flags=(SEEN,), when=when)
        return SentCopy(folder, uid, created_folder=created)

    def _uid_of(self, folder: str, message_id: str) -> int | None:
        """The UID of a message with this Message-ID in *folder* (EXAMINE, read-only), or None."""
        self.select(folder)
        with self._errors(f"SEARCH {folder!r}"):
            found = self._c.search(["HEADER", "Message-ID", message_id])
        return int(max(found)) if found else None
