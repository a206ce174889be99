"""The learned reply classifier: a linear model over word and character n-grams, shipped with the code.

The phrase tables (intent_phrases.py, stop_wording.py, optout.py) say *which words* decided and guard every
opt-out they can read; this model reads the rest: the wording nobody put in a table, typos, the languages the
tables cover thinly. ``predict`` gives a category and how sure the model is; intent.suggest decides between
the two, and ingestion (reply.py) asks it whether a reply may be asking to stop.

What is shipped, and nothing is downloaded at run time:
- ``model.npz``: the weights (a SciPy sparse matrix, one row a category) and the intercepts: plain
  arrays, loaded without pickle;
- ``model.json``: the categories, the feature settings, the version (a digest of the weights) and what it
  was trained on (each data file with its SHA-256, the item counts, the held-back score).

The features are stateless (hashed n-grams, as scikit-learn's HashingVectorizer makes them: features.py; no
vocabulary to ship), so the weights and the settings are the whole model. ``manage.py train_replies``
(classify/training.py) trains it again from the shipped data (learned/data/*.jsonl and the tests' labelled
corpus); the same data gives the same model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..optout import fold
from . import features

HERE = Path(__file__).resolve().parent
MODEL_FILE = HERE / "model.npz"
META_FILE = HERE / "model.json"
MAX_CHARS = 2000  # the person's answer is at the top; a long letter's tail adds noise, not meaning

# How the model and the phrase tables share the decision (intent.combine, reply.check_human). The values are
# chosen on the training data's held-back fifth, never on the evaluation splits.
# - The replies inbox: an opt-out the tables read is decided by its words. Otherwise a reply the model gives
#   OPTOUT_SUGGESTED or more for Unsubscribe is suggested Unsubscribe (fail safe). A table's phrase decides
#   when it is sure (TABLE_SURE), the model is unsure (below MODEL_SURE) or the model found nothing (Other);
#   where the tables found nothing, or the model is surer than MODEL_DECIDES, the model decides. Words of
#   stopping a rule set aside ("please don't remove me") are never read as an opt-out by the model.
# - Ingestion: OPTOUT_SURE or more for Unsubscribe suppresses like a request the tables read; from OPTOUT_UNSURE
#   the address is suppressed provisionally and the reply listed under Needs review. A request only the phrases
#   read (not a data-protection demand, not a subject) in a reply the model gives less than OPTOUT_DOUBT for
#   Unsubscribe is suppressed provisionally too. A reply the model reads as a person's away note (AWAY_SURE) and
#   the tables as nothing else holds the person like an auto-reply.
# On the held-back fifth of model replies-91854bfdc66b's data, TABLE_SURE 0.95 (only the decisive phrases decide
# against a sure model) agreed on 2,555 of 2,819 categories, 0.8 on 2,539; the other values changed nothing there.
OPTOUT_SUGGESTED = 0.5
TABLE_SURE = 0.95
MODEL_SURE = 0.6
MODEL_DECIDES = 0.75
OPTOUT_SURE = 0.7
OPTOUT_UNSURE = 0.35
OPTOUT_DOUBT = 0.1
AWAY_SURE = 0.8

# Feature settings: part of the model (model.json repeats them, and loading refuses a model made otherwise).
FEATURES = {
    "chars": {"analyzer": "char_wb", "ngram_range": [2, 5], "n_features": 2**19},
    "words": {"analyzer": "word", "ngram_range": [1, 2], "n_features": 2**18},
    # The words cut to five letters, alone and in pairs: the same words in another inflection read alike.
    "prefixes": {"analyzer": "word_prefix", "ngram_range": [1, 2], "n_features": 2**18},
}


@dataclass(frozen=True)
class Prediction:
    category: str  # an intent.Category value
    probability: float  # 0..1, the model's probability of that category
    probabilities: dict[str, float] = field(default_factory=dict)  # every category's

    def of(self, category: str) -> float:
        return self.probabilities.get(str(category), 0.0)


def prepare(text: str) -> str:
    """What the model reads: the person's new text, lower case without accents, spaces collapsed."""
    return " ".join(fold(text[:MAX_CHARS]).split())


def vectorize(texts: list[str]) -> Any:
    """The n-gram features of prepared texts, as one sparse matrix (rows: texts)."""
    return features.vectorize(texts, FEATURES)


class Model:
    """Loaded weights: ``predict_prepared`` on text already passed through ``prepare``."""

    def __init__(self, meta: dict[str, Any], weights: Any, intercepts: Any) -> None:
        self.meta = meta
        self.categories: list[str] = list(meta["categories"])
        self.version: str = meta["version"]
        # The weights (sparse, categories x features) are kept only transposed, a row per feature, for the product.
        self.weights_t = weights.T.tocsr()
        self.intercepts = intercepts

    def predict_prepared(self, text: str) -> Prediction:
        import numpy as np

        row = vectorize([text])
        # The weights of the text's own features only: a sparse product with the whole matrix costs ten times more.
        scores = row.data @ self.weights_t[row.indices].toarray() + self.intercepts
        scores = np.exp(scores - scores.max())
        probabilities = scores / scores.sum()
        best = int(probabilities.argmax())
        return Prediction(
            category=self.categories[best],
            probability=round(float(probabilities[best]), 4),
            probabilities={name: round(float(p), 4) for name, p in zip(self.categories, probabilities, strict=True)},
        )


def load(model_file: Path = MODEL_FILE, meta_file: Path = META_FILE) -> Model | None:
    """The shipped model, or None when none is shipped (the phrase tables then decide alone)."""
    if not (model_file.is_file() and meta_file.is_file()):
        return None
    import numpy as np
    from scipy.sparse import csr_matrix

    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    if meta.get("features") != FEATURES:
        raise ValueError(f"{meta_file}: made with other feature settings; run manage.py train_replies")
    with np.load(model_file, allow_pickle=False) as arrays:
        weights = csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=tuple(arrays["shape"]))
        intercepts = arrays["intercepts"].astype("float64")
    return Model(meta, weights, intercepts)


@cache
def shipped() -> Model | None:
    return load()


def predict(text: str) -> Prediction | None:
    """The model's category for a reply's new text (intent.new_text), or None when no model is shipped."""
    model = shipped()
    return model.predict_prepared(prepare(text)) if model is not None else None


def version() -> str:
    """The shipped model's version ("" when none is shipped): shown by bench_replies and the replies page."""
    model = shipped()
    return model.version if model is not None else ""
