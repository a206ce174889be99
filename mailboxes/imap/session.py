"""ImapSession: one logged-in IMAP connection with every command callers use; use it as a context manager.

The commands live by job in ``folders``, ``fetch`` and ``idle``; here are the two that combine them (iter_new)
or stand apart (append, for tests and drills)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

from .errors import ImapUidValidityError
from .fetch import FetchCommands, FetchedMessage
from .folders import FolderCommands
from .idle import IdleCommands

_APPENDUID_RE = re.compile(rb"\[APPENDUID \d+ (\d+)\]", re.IGNORECASE)


class ImapSession(FolderCommands, FetchCommands, IdleCommands):
    """One logged-in IMAP connection; use as a context manager.

    ``with ImapSession(config) as s: status = s.select("INBOX"); ...``
    """

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

    def append(self, folder: str, raw: bytes, flags=(), when: datetime | None = None) -> int | None:
        """APPEND a message; returns its UID when the server says (UIDPLUS), else None."""
        c = self._c
        with self._errors(f"APPEND to {folder!r}"):
            resp = c.append(folder, raw, flags=tuple(flags), msg_time=when)
        m = _APPENDUID_RE.search(resp if isinstance(resp, bytes) else str(resp).encode())
        return int(m.group(1)) if m else None
