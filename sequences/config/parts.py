"""Keys of a `[[sequence]]` table kept by an app above `sequences`: the reply rules of `inbound`
(`[[sequence.on_reply]]`). Each registers how its key is read, applied and exported (from its AppConfig.ready), so
a sequence stays one TOML table while each key lives with the app that owns its meaning.

A part is an array of tables (`[[sequence.on_reply]]`). Its key absent from a file leaves what the sequence has;
given (even `on_reply = []`), it replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..models import Sequence
from .validate import Reader


@dataclass(frozen=True)
class SequencePart:
    key: str
    # (reader, path, the key's value, the sequence's own name, names of the sequences in the file and the
    # database) -> the plain value apply takes; errors go to the reader under the path.
    parse: Callable[[Reader, str, Any, str, set[str]], Any]
    # (the sequence, the parsed value) -> the changes made, one line each ("on_reply: ..."); inside the apply's
    # transaction, once every sequence of the file exists.
    apply: Callable[[Sequence, Any], list[str]]
    # The sequence -> its tables (`[[sequence.<key>]]`, each a dict of plain values), [] when it has none.
    export: Callable[[Sequence], list[dict[str, Any]]]


PARTS: dict[str, SequencePart] = {}


def sequence_part_register(part: SequencePart) -> None:
    PARTS[part.key] = part
