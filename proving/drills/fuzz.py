"""A mutation fuzzer over well-formed inbound samples: what a hostile or broken mailbox can hold.

Each message is a sample with 1-3 mutations: byte flips, truncation, header
duplication, charset garbage, broken MIME boundaries, dropped lines, mixed
line endings, NULs, an overlong header, nesting in message/rfc822, splicing
of two samples. Deterministic for a seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

Mutator = Callable[[random.Random, bytes, list[bytes]], bytes]

GARBAGE_CHARSETS = [b"x-unknown", b"utf-7", b"utf-32", b"\xff\xfe", b"", b"\"", b"=?", b"iso-8859-99", b"cp65001",
                    b"utf-8\x00", b"unicode-1-1-utf-7", b"latin1; charset=koi8-r", b"A" * 300]
ENCODED_WORDS = [b"=?utf-8?B?////?=", b"=?utf-8?Q?=ZZ=ZZ?=", b"=?x-bogus?B?aGVsbG8=?=", b"=?utf-8?B?", b"=?==?=",
                 b"=?utf-16?B?2D3eAA==?=", b"=?iso-8859-1?q?caf=E9?=", b"=?utf-8?b?" + b"A" * 5000 + b"?="]


def _split(raw: bytes) -> tuple[list[bytes], bytes]:
    sep = b"\r\n\r\n" if b"\r\n\r\n" in raw else b"\n\n"
    head, _, body = raw.partition(sep)
    return head.split(b"\r\n" if b"\r\n" in head else b"\n"), body


def _join(lines: list[bytes], body: bytes) -> bytes:
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def flip(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, max(1, len(data) // 50))):
        if data:
            data[rng.randrange(len(data))] ^= rng.randint(1, 255)
    return bytes(data)


def truncate(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    return raw[: rng.randint(0, len(raw))]


def duplicate_header(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    lines, body = _split(raw)
    if not lines:
        return raw
    line = rng.choice(lines)
    at = rng.randrange(len(lines) + 1)
    return _join(lines[:at] + [line] * rng.randint(1, 20) + lines[at:], body)


def charset_garbage(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    out = re.sub(rb"charset=\"?[-\w]+\"?", b"charset=" + rng.choice(GARBAGE_CHARSETS), raw, flags=re.I)
    lines, body = _split(out)
    if lines:
        i = rng.randrange(len(lines))
        name, sep, value = lines[i].partition(b":")
        if sep:
            lines[i] = name + b": " + rng.choice(ENCODED_WORDS) + bytes(rng.randint(0x80, 0xFF) for _ in range(8))
    body = body + bytes(rng.randint(0x80, 0xFF) for _ in range(rng.randint(1, 64)))
    return _join(lines, body)


def break_boundary(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    match = re.search(rb'boundary="?([^";\r\n]+)"?', raw, flags=re.I)
    if not match:
        return raw.replace(b"Content-Type: text/plain", b"Content-Type: multipart/mixed; boundary=\"\"", 1)
    boundary = match.group(1)
    choice = rng.randrange(3)
    if choice == 0:
        return raw.replace(b"--" + boundary + b"--", b"")  # never closed
    if choice == 1:
        return raw.replace(match.group(0), b"boundary=\"" + boundary[::-1] + b"\"")  # declared one is absent
    return raw.replace(b"--" + boundary, b"--" + boundary + b"\r\n--" + boundary)  # empty parts


def drop_lines(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    lines = raw.split(b"\n")
    for _ in range(rng.randint(1, 5)):
        if len(lines) > 1:
            del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def line_endings(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    return raw.replace(b"\r\n", rng.choice([b"\n", b"\r", b"\n\r", b"\r\r\n"]))


def nul_bytes(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 10)):
        data.insert(rng.randrange(len(data) + 1), 0)
    return bytes(data)


def long_header(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    # Long, not huge: header parsing time grows faster than linearly with a header's length (see
    # faults.drill_big_headers, which measures that on its own), and the fuzz run must stay bounded.
    name = rng.choice([b"Subject", b"References", b"From", b"X-Junk", b"In-Reply-To", b"Content-Type"])
    value = rng.choice([b"<a@b> " * 100, b"x" * 5_000, b"=?utf-8?B?" + b"QQ==" * 1000 + b"?="])
    return name + b": " + value + b"\r\n" + raw


def nest(rng: random.Random, raw: bytes, _: list[bytes]) -> bytes:
    for depth in range(rng.randint(1, 30)):
        raw = (b"From: nest@example.org\r\nSubject: fwd " + str(depth).encode() + b"\r\nMIME-Version: 1.0\r\n"
               b"Content-Type: message/rfc822\r\n\r\n" + raw)
    return raw


def splice(rng: random.Random, raw: bytes, samples: list[bytes]) -> bytes:
    other = rng.choice(samples)
    return raw[: rng.randint(0, len(raw))] + other[rng.randint(0, len(other)):]


MUTATORS: list[Mutator] = [flip, truncate, duplicate_header, charset_garbage, break_boundary, drop_lines,
                           line_endings, nul_bytes, long_header, nest, splice]


def mutants(samples: list[bytes], *, count: int, seed: int):
    """Yield `count` (mutator names, message) pairs."""
    rng = random.Random(seed)
    for _ in range(count):
        raw = rng.choice(samples)
        names = []
        for mutator in rng.sample(MUTATORS, rng.randint(1, 3)):
            raw = mutator(rng, raw, samples)
            names.append(mutator.__name__)
        yield names, raw
