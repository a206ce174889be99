"""Reading the selected folder: the UIDs after a cursor (filtered: "N:*" also matches the highest UID below N),
whole messages (BODY.PEEK[], never setting \\Seen), their dates, sizes and flags only, and partial fetches of
headers or bodies within a byte budget."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

from .connection import ImapConnection, as_text
from .errors import ImapError

FETCH_ITEMS = [b"BODY.PEEK[]", b"INTERNALDATE", b"RFC822.SIZE", b"FLAGS"]
FETCH_CHUNK = 500  # UIDs per FETCH command
META_ITEMS = [b"INTERNALDATE", b"RFC822.SIZE", b"FLAGS"]


@dataclass(frozen=True)
class FetchedMessage:
    uid: int
    internaldate: datetime  # timezone-aware, UTC
    raw: bytes
    size: int
    flags: tuple  # of str, e.g. ("\\Seen",)
    truncated: bool = False  # raw is the first bytes only (a partial fetch of a larger message)


class FetchCommands(ImapConnection):
    """UID SEARCH and UID FETCH in the folder selected last."""

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
                    flags=tuple(as_text(f) for f in item.get(b"FLAGS", ())),
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
                                      flags=tuple(as_text(f) for f in item.get(b"FLAGS", ()))))
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


def _as_utc(value) -> datetime:
    if not isinstance(value, datetime):
        raise ImapError(f"server returned no usable INTERNALDATE: {value!r}")
    if value.tzinfo is None:  # no zone in the server's date: RFC 3501 requires one; assume UTC
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
