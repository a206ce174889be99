"""The learned reply classifier (inbound.classify.learned): shipped, loaded without pickle or download, trained
again to the same model from the shipped data, and kept out of the decisions a rule has made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from inbound.classify import classify, learned, training
from inbound.classify.intent import MODEL, PHRASES, Category, suggest
from inbound.classify.reply import POSSIBLE_OPTOUT
from inbound.kinds import Kind
from proving.bench.replies import as_reply

UNTOUCHED = Path(settings.BASE_DIR) / "tests" / "inbound" / "reply_categories" / "untouched.jsonl"
pytestmark = pytest.mark.one_database("the learned model reads text")


def test_the_shipped_model_is_small_loads_without_pickle_and_names_its_version():
    model = learned.load()
    assert model is not None, "no model is shipped: run manage.py train_replies"
    assert learned.MODEL_FILE.stat().st_size <= 20 * 1024 * 1024
    meta = json.loads(learned.META_FILE.read_text())
    assert model.version == meta["version"] == learned.version() and model.categories == list(training.CATEGORIES)
    assert meta["trained_on"]["items"] >= 4000 and set(meta["trained_on"]["languages"]) >= {
        "en", "de", "fr", "es", "it", "nl", "pt", "pl"}


def test_the_shipped_model_was_trained_on_the_shipped_data(capsys):
    call_command("train_replies", "--check")
    assert learned.version() in capsys.readouterr().out


def test_training_is_deterministic_and_refuses_evaluation_splits(tmp_path, capsys, monkeypatch):
    lines = [line for path in sorted(training.DATA_DIR.glob("*.jsonl")) for line in path.read_text().splitlines()[::15]]
    data = tmp_path / "small.jsonl"
    data.write_text("\n".join(lines) + "\n")
    made = []
    text = "Bitte nehmen Sie mich aus dem Verteiler."
    with monkeypatch.context() as patch:
        # Smaller hashed feature spaces than the shipped model's: the same reading, hashing, fit, rounding and
        # digest, in seconds instead of most of a minute (a fit's time goes to its weights, one per feature and
        # category).
        for name, n_features in (("chars", 2**13), ("words", 2**12)):
            patch.setitem(learned.FEATURES, name, learned.FEATURES[name] | {"n_features": n_features})
        for run in ("a", "b"):
            meta = training.train([data], model_file=tmp_path / f"{run}.npz", meta_file=tmp_path / f"{run}.json",
                                  progress=lambda line: None, score_held_back=False)
            made.append(learned.load(tmp_path / f"{run}.npz", tmp_path / f"{run}.json"))
            assert meta["trained_on"]["items"] == len(lines)
        assert made[0].version == made[1].version
        assert made[0].predict_prepared(learned.prepare(text)) == made[1].predict_prepared(learned.prepare(text))

    with pytest.raises(CommandError, match="for evaluation, not training"):
        call_command("train_replies", "--data", str(UNTOUCHED))
    with pytest.raises(CommandError, match="not found"):
        call_command("train_replies", "--data", str(tmp_path / "missing.jsonl"))
    changed = tmp_path / "changed.jsonl"
    changed.write_text(lines[0] + "\n")
    with pytest.raises(CommandError, match="trained on other data"):
        call_command("train_replies", "--check", "--data", str(changed))


def test_no_data_protection_demand_is_suggested_interested():
    demands = [json.loads(line) for line in UNTOUCHED.read_text().splitlines()]
    demands = [item for item in demands if item.get("data_request")]
    assert len(demands) >= 20
    suggested = {item["id"]: suggest(item["text"]).category for item in demands}
    assert Category.INTERESTED not in suggested.values(), suggested


def test_a_rule_that_set_words_of_stopping_aside_is_not_undone_by_the_model():
    for text in ("Please don't remove me, I do read these", "How do I unsubscribe my team from the Acme digest?",
                 "Sounds good, send pricing.\n\nTo unsubscribe from these emails, click here: https://x.example/u"):
        got = suggest(text)
        assert got.category is not Category.UNSUBSCRIBE, (text, got)


def test_the_model_decides_where_no_phrase_does_and_says_so():
    got = suggest("Ci sentiamo giovedì alle 10, ho accettato l'invito.")  # no Italian phrase table
    assert got.decided_by == MODEL and got.phrase == "" and 0 < got.confidence < 1
    assert suggest("Please remove me from your list.").decided_by == PHRASES  # a phrase decides an opt-out


def test_bench_replies_names_the_model_and_the_time_one_reply_takes(tmp_path, capsys):
    # One line in five of the evaluation file: every category, language and kind of hard case, in a fifth of the
    # time (the figures on the whole file are the operator guide's).
    lines = UNTOUCHED.read_text().splitlines()[::5]
    corpus, out = tmp_path / "fifth.jsonl", tmp_path / "b.json"
    corpus.write_text("\n".join(lines) + "\n")
    call_command("bench_replies", "--corpus", str(corpus), "--json", str(out))
    printed = capsys.readouterr().out
    figures = json.loads(out.read_text())
    assert f"model {learned.version()}" in printed and "p99" in printed
    assert figures["model"] == learned.version() and figures["latency_ms"]["suggest"]["p99"] > 0
    assert figures["hard"]["all"]["items"] == sum('"hard": true' in line for line in lines) > 0
    assert set(figures["ingestion"]["all"]) >= {"recall", "precision", "provisional", "stopped_recall"}


def _reading(optout: float) -> learned.Prediction:
    rest = (1 - optout) / 6
    probabilities = {name: rest for name in training.CATEGORIES} | {"unsubscribe": optout}
    best = max(probabilities, key=probabilities.__getitem__)
    return learned.Prediction(best, probabilities[best], probabilities)


@pytest.mark.parametrize("optout, kind, rule", [
    (0.02, Kind.HUMAN_REPLY, POSSIBLE_OPTOUT),  # the model reads the reply otherwise: held for an operator
    (0.40, Kind.UNSUBSCRIBE_REQUEST, "unsubscribe_text"),
])
def test_a_request_the_phrases_read_and_the_model_doubts_is_held_provisionally_never_let_through(
        monkeypatch, optout, kind, rule):
    monkeypatch.setattr(learned, "predict", lambda text: _reading(optout))

    result = classify(as_reply("Stop the follow-ups, we're on for Monday at 11. See you then."))

    assert (result.kind, result.rule) == (kind, rule), result.reason


def test_a_data_protection_demand_is_never_doubted(monkeypatch):
    monkeypatch.setattr(learned, "predict", lambda text: _reading(0.01))

    result = classify(as_reply("Under Article 17 GDPR I request the erasure of my personal data."))

    assert (result.kind, result.rule) == (Kind.UNSUBSCRIBE_REQUEST, "data_request"), result.reason


@pytest.mark.parametrize("text, kind, rule", [
    ("Who gave you my address? Just curious, nice pitch though.", Kind.HUMAN_REPLY, POSSIBLE_OPTOUT),
    ("Skąd macie mój adres? Pytam z ciekawości, bo mail całkiem zgrabny.", Kind.HUMAN_REPLY, POSSIBLE_OPTOUT),
    ("Who gave you my address?", Kind.UNSUBSCRIBE_REQUEST, "data_request"),
    ("Just curious: who gave you my address? And please delete my data.", Kind.UNSUBSCRIBE_REQUEST, "data_request"),
])
def test_a_source_question_asked_out_of_curiosity_is_held_provisionally_and_any_other_is_a_demand(text, kind, rule):
    result = classify(as_reply(text))

    assert (result.kind, result.rule) == (kind, rule), result.reason
