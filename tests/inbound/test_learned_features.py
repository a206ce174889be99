"""The learned classifier's features (inbound.classify.learned.features) are scikit-learn's HashingVectorizer's to
the last bit, on every text the model was trained on and on texts made to reach the edges (empty, one letter,
words shorter than the n-grams, runs of white space, scripts beyond Latin, emoji)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.sparse import hstack
from sklearn.feature_extraction.text import HashingVectorizer

from inbound.classify import training
from inbound.classify.learned import FEATURES, prepare, vectorize
from inbound.classify.learned.features import word_prefix

pytestmark = pytest.mark.one_database("the features of a text")

EDGES = ["", " ", "a", "ab", "a b  c\t\td\n\ne", "x" * 40, "ünsubscribe  ñ ß", "отпишите меня", "請停止", "stop 🙏🙏",
         "Re: RE: fw", "it's o'clock — 12:30 / 50%", "a" * 2000, "unsubscribing unsubscribe me", "ab-\nmelden ab"]


def scikit_learn(texts: list[str]):
    """What the model was first trained with: one HashingVectorizer per part of FEATURES, side by side."""
    parts = [
        HashingVectorizer(analyzer=_ANALYZERS[part["analyzer"]], ngram_range=tuple(part["ngram_range"]),
                          n_features=part["n_features"], alternate_sign=False, norm="l2", lowercase=False,
                          token_pattern=r"(?u)\b\w+\b",
                          preprocessor=word_prefix if part["analyzer"] == "word_prefix" else None).transform(texts)
        for part in FEATURES.values()
    ]
    return hstack(parts, format="csr")


_ANALYZERS = {"char_wb": "char_wb", "word": "word", "word_prefix": "word"}  # the last with word_prefix first


def shipped_texts() -> list[str]:
    return [prepare(json.loads(line)["text"]) for path in sorted(training.DATA_DIR.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def same_to_the_bit(ours, theirs) -> None:
    ours.sort_indices()
    theirs.sort_indices()
    assert ours.shape == theirs.shape
    assert (ours.indptr == theirs.indptr).all()
    assert (ours.indices == theirs.indices).all()
    assert (ours.data == theirs.data).all()  # equal, not close: a model trained on either is the same model


def test_every_shipped_text_gives_scikit_learns_features_to_the_bit():
    texts = shipped_texts()
    assert len(texts) > 6000
    same_to_the_bit(vectorize(texts), scikit_learn(texts))


@pytest.mark.parametrize("text", EDGES)
def test_edge_texts_give_scikit_learns_features_to_the_bit(text):
    same_to_the_bit(vectorize([text]), scikit_learn([text]))
    same_to_the_bit(vectorize([prepare(text)]), scikit_learn([prepare(text)]))


def test_reading_a_reply_imports_no_scikit_learn():
    code = ("import django, os, sys; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'outreach.settings'); "
            "django.setup(); from inbound.tasks import warm; warm(); "
            "from inbound.classify.learned import predict; predict('please take me off your list'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                         cwd=root)
    assert out.stdout.strip() == "[]", out.stdout[-2000:]
