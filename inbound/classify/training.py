"""Training the learned reply classifier from the shipped labelled replies (manage.py train_replies).

Deterministic: the same files give the same weights (a fixed solver, no random state, items in file order).
One item in five, chosen by a digest of its id, is held back first and scored with a model trained on the
rest, so the printed score is on replies the model did not see; the shipped model is then trained on all.
The evaluation splits of tests/inbound/reply_categories/untouched.jsonl are never read here (a file of
those splits is refused).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings

from .intent import model_reading, new_text
from .learned import FEATURES, HERE, META_FILE, MODEL_FILE, load, prepare, vectorize

DATA_DIR = HERE / "data"
CATEGORIES = ("interested", "meeting", "not_interested", "wrong_person", "out_of_office", "unsubscribe", "other")
REGULARIZATION = 20.0  # scikit-learn's C: weaker regularization fits the many short, distinct phrasings
TRAINABLE_SPLITS = {"tune", "check", "train", "install"}  # install: export_reply_labels


class TrainingError(Exception):
    pass


def default_sources() -> list[Path]:
    """The shipped training files: learned/data/*.jsonl, then the tests' labelled corpus when present."""
    sources = sorted(DATA_DIR.glob("*.jsonl"))
    corpus = Path(settings.BASE_DIR) / "tests" / "inbound" / "reply_categories" / "corpus.jsonl"
    return sources + ([corpus] if corpus.is_file() else [])


def labelled_lines(path: Path, error: type[Exception]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, item) of each reply of a JSON Lines file of labelled replies (the corpus's format), with
    a "text" and an "expected" category; `error` names the line of one that is not (bench_replies reads the
    same way)."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{path}:{number}: not JSON ({exc.msg})") from exc
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise error(f"{path}:{number}: needs a \"text\"")
        if item.get("expected") not in CATEGORIES:
            raise error(f"{path}:{number}: \"expected\" must be one of {', '.join(CATEGORIES)}")
        yield number, item


def read_items(sources: list[Path]) -> list[dict[str, Any]]:
    items = []
    for path in sources:
        for number, item in labelled_lines(path, TrainingError):
            if item.get("split", "train") not in TRAINABLE_SPLITS:
                raise TrainingError(f"{path}:{number}: split {item.get('split')!r} is for evaluation, not training")
            items.append(item | {"id": item.get("id") or f"{path.name}:{number}"})
    if not items:
        raise TrainingError("no labelled replies to train on")
    return items


def held_back(item: dict[str, Any]) -> bool:
    return hashlib.sha256(str(item["id"]).encode()).digest()[0] % 5 == 0


def fit(items: list[dict[str, Any]]) -> tuple[Any, Any]:
    """(weights, intercepts) of a multinomial logistic regression on the items."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    features = vectorize([prepare(_reading(item["text"])) for item in items])
    labels = np.array([CATEGORIES.index(item["expected"]) for item in items])
    model = LogisticRegression(C=REGULARIZATION, max_iter=1000, class_weight="balanced")
    model.fit(features, labels)
    if list(model.classes_) != list(range(len(CATEGORIES))):
        missing = [CATEGORIES[i] for i in range(len(CATEGORIES)) if i not in model.classes_]
        raise TrainingError(f"no training replies for: {', '.join(missing)}")
    return model.coef_, model.intercept_


def _reading(text: str) -> str:
    return model_reading(new_text(text))  # what suggest() and ingestion give the model: the new text only


def train(sources: list[Path] | None = None, *, model_file: Path = MODEL_FILE, meta_file: Path = META_FILE,
          progress=print, score_held_back: bool = True) -> dict[str, Any]:
    """Train, score the held-back fifth, train on everything and write the model; returns model.json's content.
    `score_held_back`: False skips the score (and its training run); model.json then says so."""
    import numpy as np
    from scipy.sparse import csr_matrix

    sources = sources or default_sources()
    items = read_items(sources)
    progress(f"{len(items)} labelled replies from {len(sources)} files")
    score: dict[str, Any] | None = None
    if score_held_back:
        keep = [item for item in items if not held_back(item)]
        back = [item for item in items if held_back(item)]
        progress(f"scoring on {len(back)} held-back replies (trained on the other {len(keep)})")
        score = _score(fit(keep), back)
        progress(f"held back: {score['agree']}/{score['items']} agree; opt-out recall {score['optout_recall']}")
    progress("training on all replies")
    weights, intercepts = fit(items)
    weights = np.round(weights, 5).astype("float32")
    sparse = csr_matrix(weights)
    sparse.eliminate_zeros()
    digest = hashlib.sha256(sparse.data.tobytes() + sparse.indices.tobytes()
                            + np.round(intercepts, 5).astype("float32").tobytes()).hexdigest()
    meta = {
        "version": f"replies-{digest[:12]}",
        "categories": list(CATEGORIES),
        "features": FEATURES,
        "regularization": REGULARIZATION,
        "trained_on": {
            "items": len(items),
            "categories": dict(sorted(Counter(item["expected"] for item in items).items())),
            "languages": dict(sorted(Counter(item.get("language", "?") for item in items).items())),
            "files": {_name(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in sources},
        },
        "held_back": score,
    }
    np.savez_compressed(model_file, data=sparse.data, indices=sparse.indices.astype("int32"),
                        indptr=sparse.indptr.astype("int32"), shape=np.array(sparse.shape),
                        intercepts=np.round(intercepts, 5).astype("float32"))
    meta_file.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    size = model_file.stat().st_size // 1024
    progress(f"wrote {model_file.name} ({size} KB) and {meta_file.name}: {meta['version']}")
    return meta


def _name(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return path.name


def _score(model: tuple[Any, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    import numpy as np

    weights, intercepts = model
    scores = vectorize([prepare(_reading(item["text"])) for item in items]) @ weights.T + intercepts
    got = [CATEGORIES[i] for i in np.asarray(scores).argmax(axis=1)]
    agree = sum(g == item["expected"] for g, item in zip(got, items, strict=True))
    optouts = [g for g, item in zip(got, items, strict=True) if item["expected"] == "unsubscribe"]
    return {"items": len(items), "agree": agree, "agreement": round(agree / len(items), 4) if items else None,
            "optout_recall": f"{optouts.count('unsubscribe')}/{len(optouts)}"}


def shipped_matches(sources: list[Path] | None = None) -> tuple[bool, str]:
    """Whether the shipped model was trained on exactly the shipped data files (their digests)."""
    model = load()
    if model is None:
        return False, "no model is shipped"
    want = {_name(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in sources or default_sources()}
    have = model.meta["trained_on"]["files"]
    if want != have:
        changed = sorted(set(want.items()) ^ set(have.items()))
        return False, f"the model was trained on other data ({', '.join(sorted({n for n, _ in changed}))})"
    return True, model.version
