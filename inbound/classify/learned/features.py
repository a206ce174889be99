"""The model's features: hashed word and character n-grams, as scikit-learn's HashingVectorizer makes them.

The same n-grams, the same hash (MurmurHash3, 32 bits, seed 0, of the UTF-8 bytes: `mmh3`, the function
scikit-learn ships), the same column (the hash's absolute value modulo the width), counts summed, each part
scaled to unit length; the words cut to their first letters are scikit-learn's word analyzer with a
preprocessor (word_prefix). The matrices are equal to the last bit
(tests/inbound/test_learned_features.py), so a model trained with either reads the same. Importing
scikit-learn costs a process 1.4 s of CPU; an ingest worker, which only reads, no longer pays it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import mmh3

WORD_RE = re.compile(r"(?u)\b\w+\b")  # HashingVectorizer's token_pattern as the model sets it
WHITE_SPACES_RE = re.compile(r"\s\s+")  # what its char_wb analyzer collapses first


def char_wb_ngrams(text: str, low: int, high: int) -> list[str]:
    """The character n-grams of each word padded with a space either side, `low` to `high` long; a padded word
    shorter than a length gives itself once (scikit-learn's char_wb)."""
    grams: list[str] = []
    for word in WHITE_SPACES_RE.sub(" ", text).split():
        padded = f" {word} "
        size = len(padded)
        for n in range(low, high + 1):
            grams.extend(padded[i : i + n] for i in range(max(size - n, 0) + 1))
            if size <= n:
                break
    return grams


def word_ngrams(text: str, low: int, high: int) -> list[str]:
    """The words (WORD_RE), then each run of `low` to `high` of them joined by a space (scikit-learn's word)."""
    words = WORD_RE.findall(text)
    grams = list(words) if low == 1 else []
    for n in range(max(low, 2), min(high, len(words)) + 1):
        grams.extend(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    return grams


PREFIX = 5  # letters kept of each word by word_prefix


def word_prefix(text: str) -> str:
    """The words (WORD_RE), each cut to its first PREFIX letters, joined by a space."""
    return " ".join(word[:PREFIX] for word in WORD_RE.findall(text))


def word_prefix_ngrams(text: str, low: int, high: int) -> list[str]:
    """word_ngrams of the words cut to their first letters (word_prefix): "unsubscribing me" and "unsubscribe
    me" give the same "unsub me", "abmelden" and "abmeldung" the same "abmel". It is scikit-learn's word
    analyzer given word_prefix as its preprocessor."""
    return word_ngrams(word_prefix(text), low, high)


ANALYZERS = {"char_wb": char_wb_ngrams, "word": word_ngrams, "word_prefix": word_prefix_ngrams}


def column(gram: str, width: int) -> int:
    """The column of one n-gram in a part `width` columns wide."""
    value = mmh3.hash(gram.encode("utf-8"), 0, signed=True)
    if value == -(2**31):  # |-2**31| does not fit: scikit-learn defines it so
        return (2**31 - 1 - (width - 1)) % width
    return abs(value) % width


def hashed_row(grams: Iterable[str], width: int) -> tuple[list[int], list[float]]:
    """(columns ascending, values): the counts scaled to unit length (whole numbers: the sum of their squares is
    exact in any order, as scikit-learn's is)."""
    counts = Counter(column(gram, width) for gram in grams)
    columns = sorted(counts)
    norm = math.sqrt(sum(counts[col] * counts[col] for col in columns))
    return columns, [counts[col] / norm for col in columns]


def vectorize(texts: list[str], settings: dict[str, dict[str, Any]]) -> Any:
    """One sparse row per text: each feature part of `settings` (learned.FEATURES) side by side, in its order."""
    import numpy as np
    from scipy.sparse import csr_matrix

    indptr, indices, data = [0], [], []
    for text in texts:
        offset = 0
        for part in settings.values():
            low, high = part["ngram_range"]
            columns, values = hashed_row(ANALYZERS[part["analyzer"]](text, low, high), part["n_features"])
            indices.extend(offset + col for col in columns)
            data.extend(values)
            offset += part["n_features"]
        indptr.append(len(indices))
    width = sum(part["n_features"] for part in settings.values())
    return csr_matrix((np.array(data, dtype=np.float64), np.array(indices, dtype=np.int32),
                       np.array(indptr, dtype=np.int32)), shape=(len(texts), width))
