"""Errors with the key path: the reader that collects every problem (and the line it is on), and the checks
that span several keys of a [[mailbox]] (the window's order, the environment's secrets).

Validation runs over the whole file before anything is written, so a bad file changes nothing.
"""

from __future__ import annotations

import os
import pkgutil
import re
from bisect import bisect_left, bisect_right
from typing import Any

import anymail.backends
from django.core.exceptions import FieldDoesNotExist

from mailboxes import settings_schema
from mailboxes.settings_schema import Kind

from ..storable import UNSTORABLE, integer_problem


class ConfigError(Exception):
    """A file that must not be applied: every problem found, each naming its key path and line."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


def known_esps() -> set[str]:
    """The ESPs anymail has a backend for (mailboxes.transports.esp loads anymail.backends.<esp>)."""
    return {m.name for m in pkgutil.iter_modules(anymail.backends.__path__)} - {"base", "base_requests"}


KEY_LINE = re.compile(r"(?:^|[{,])\s*([A-Za-z0-9_-]+)\s*=")
ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]")
INDEXED = re.compile(r"(mailbox|sequence)\[(\d+)\](?:\.step\[(\d+)\])?")


class Reader:
    """Collects errors with key paths instead of stopping at the first.

    Line numbers come from one pass over the file (every `key =` and every
    `[[table]]` header), so a file full of errors is reported in linear time:
    an error inside `mailbox[3]` looks only at that table's own lines.
    """

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.keys: dict[str, list[int]] = {}  # key -> lines where `key =` appears, in order
        self.starts: dict[str, list[int]] = {}  # "mailbox" | "sequence" | "sequence.step" -> header lines
        self.top: list[int] = []  # lines of every [[mailbox]] and [[sequence]] header
        for number, line in enumerate(self.lines, 1):
            header = ARRAY_HEADER.match(line)
            if header:
                self.starts.setdefault(header.group(1), []).append(number)
                if header.group(1) in ("mailbox", "sequence"):
                    self.top.append(number)
            for key in KEY_LINE.findall(line):
                self.keys.setdefault(key, []).append(number)

    def _span(self, path: str) -> tuple[int, int]:
        """The lines (first, last) of the `[[...]]` table a path is in, or the whole file (bisect: no rescans)."""
        match = INDEXED.match(path)
        starts = self.starts.get(match.group(1), []) if match else []
        if not match or int(match.group(2)) >= len(starts):
            return 1, len(self.lines)
        first = starts[int(match.group(2))]
        following = bisect_right(self.top, first)
        last = self.top[following] - 1 if following < len(self.top) else len(self.lines)
        if match.group(3) is not None:
            steps = self.starts.get("sequence.step", [])
            at = bisect_right(steps, first) + int(match.group(3))
            if at < len(steps) and steps[at] <= last:
                first = steps[at]
                if at + 1 < len(steps) and steps[at + 1] <= last:
                    last = steps[at + 1] - 1
        return first, last

    def where(self, path: str, value: Any = None) -> str:
        """The key path, with the line of the first `key =` in its table that also shows the bad value."""
        key = path.rsplit(".", 1)[-1].split("[")[0]
        first, last = self._span(path)
        lines = self.keys.get(key, [])
        hits = lines[bisect_left(lines, first):bisect_right(lines, last)] or lines[:1]
        if value is not None:
            shown = [n for n in hits if str(value) in self.lines[n - 1]]
            hits = shown or hits
        return f"{path} (line {hits[0]})" if hits else path

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{self.where(path)}: {message}")

    def error(self, path: str, message: str, value: Any = None) -> None:
        self.errors.append(f"{self.where(path, value)}: {message}")

    def get(self, table: dict, path: str, key: str, kind: type | tuple, default: Any = ..., *, required: bool = False):
        if key not in table:
            if required:
                self.error(f"{path}.{key}", "is required")
            return None if default is ... else default
        value = table[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.error(f"{path}.{key}", f"must be {names}, got {type(value).__name__}", value)
            return None if default is ... else default
        if isinstance(value, str) and UNSTORABLE.search(value):
            self.error(f"{path}.{key}", "contains a NUL character or a lone surrogate, which nothing can store")
            return None if default is ... else default
        if isinstance(value, int) and not isinstance(value, bool) and (problem := integer_problem(value)):
            # TOML's integers are 64-bit (tomllib reads any size); every integer column here is 32-bit.
            self.error(f"{path}.{key}", problem, value)
            return None if default is ... else default
        return value

    def unknown(self, table: dict, path: str, allowed: set[str]) -> None:
        for key in table:
            if key not in allowed:
                self.error(f"{path}.{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})")


def check_ranges(reader: Reader, path: str, out: dict[str, Any]) -> None:
    """The window's order, and the environment variables that hold secrets (a setting's own bounds are its
    description's: mailboxes.settings_schema)."""
    start, end = out.get("window_start"), out.get("window_end")
    if (start is None) != (end is None):
        reader.error(f"{path}.window.{'end' if end is None else 'start'}", "a window needs both start and end")
    elif start is not None and end is not None and end <= start:
        reader.error(f"{path}.window.end", f"{end:%H:%M} is not after start {start:%H:%M}", f"{end:%H:%M}")
    # An unset variable is a warning, not an error: the file is often loaded where the secrets are not
    # (a deploy host, CI) while the workers that send have them; a send without one fails on that mailbox.
    for setting in settings_schema.in_toml():
        name = out.get(setting.field) if setting.kind is Kind.SECRET_ENV else None
        if name and name not in os.environ:
            reader.warn(f"{path}.{'.'.join(setting.toml)}", f"environment variable {name} is not set here; the "
                                                            "worker that sends or polls must have it")


def check_lengths(reader: Reader, path: str, out: dict[str, Any], model, keys: dict[str, tuple[str, ...]]) -> None:
    """Every text value no longer than the column it is stored in (`keys`: a field's TOML key path)."""
    for name, value in out.items():
        if not isinstance(value, str):
            continue
        try:
            limit = model._meta.get_field(name).max_length
        except FieldDoesNotExist:  # a planning value, not a column
            continue
        if limit and len(value) > limit:
            key = ".".join(keys.get(name, (name,)))
            reader.error(f"{path}.{key}", f"{len(value)} characters, at most {limit}")
