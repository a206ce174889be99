"""Folders: LIST (every folder, the special-use \\Sent ones), EXAMINE (read-only: nothing we do can set \\Seen,
and with CONDSTORE enabled the answer carries HIGHESTMODSEQ), and the check of a mailbox's configured folders."""

from __future__ import annotations

from dataclasses import dataclass

from ..transports.base import CheckStep
from .connection import ImapConnection, as_text
from .errors import ImapError


@dataclass(frozen=True)
class FolderStatus:
    uidvalidity: int
    uidnext: int
    highestmodseq: int | None
    exists: int


class FolderCommands(ImapConnection):
    """LIST and EXAMINE; a fetch or IDLE needs a folder selected here first."""

    status: FolderStatus | None = None  # from the last select()

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
        return [(as_text(name), as_text(delimiter or b"")) for _flags, delimiter, name in listed]

    def sent_folders(self) -> set[str]:
        """The folders the server marks as holding sent mail (RFC 6154 special-use \\Sent)."""
        with self._errors("LIST"):
            listed = self._c.list_folders()
        return {as_text(name) for flags, _delimiter, name in listed if b"\\Sent" in flags}

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


def folder_guess(folder: str, names: list[str], delimiter: str) -> str:
    """A configured folder's likely real name: under INBOX with the server's delimiter, or a case variant."""
    for candidate in (f"INBOX{delimiter}{folder}", folder.replace("/", delimiter).replace(".", delimiter)):
        if candidate in names:
            return candidate
    lowered = {name.lower(): name for name in names}
    return lowered.get(folder.lower(), "") or lowered.get(f"inbox{delimiter}{folder}".lower(), "")
