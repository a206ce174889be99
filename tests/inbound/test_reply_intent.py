"""The suggested category of a person's reply (inbound.classify.intent): agreement with a labelled corpus of
realistic replies, the hard cases one by one, and what a suggestion says about itself (phrase, confidence).

The corpus (reply_categories/corpus.jsonl) was written in rounds ("round"). Round 1 came first and the
phrase tables were written against it; each later round was written with the tables frozen, scored once, and
only then learnt from (rounds 2 to 5, "tune"). Round 6, the "check" split, was never learnt from: its floors
are lower and measure wording the tables had not seen. ``manage.py bench_replies`` prints the figures.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inbound.classify.intent import MODEL, Category, Suggestion, read_phrases, suggest

pytestmark = pytest.mark.one_database("the reply categories of a text")

CORPUS = Path(__file__).parent / "reply_categories" / "corpus.jsonl"
COVERED = {"en", "de", "fr", "es"}  # the languages with phrase tables

# Floors reached with margin; `manage.py bench_replies` prints the measured figures.
FLOOR_ALL = 0.88  # every reply, the languages without tables included (measured 0.93)
FLOOR_COVERED = 0.95  # English, German, French, Spanish (measured 0.98)
FLOOR_COVERED_PER_CATEGORY = 0.92  # each category in those languages (lowest measured 0.97, wrong person)
FLOOR_CHECK = 0.80  # the held-back split in those languages (measured 0.89)
FLOOR_CHECK_PER_CATEGORY = 0.65  # each category of the held-back split (lowest measured 0.79, wrong person)
FLOOR_PRECISION = 0.95  # of the replies suggested as a category, how many are labelled so (lowest 0.99)


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> tuple[str, dict]:
    """One pass over the corpus, through the benchmark command: what it printed and the JSON it wrote."""
    out = tmp_path_factory.mktemp("bench") / "var" / "replies.json"
    printed = io.StringIO()
    call_command("bench_replies", "--json", str(out), stdout=printed)
    return printed.getvalue(), json.loads(out.read_text())


@pytest.fixture(scope="module")
def scored(bench) -> list[dict]:
    """Every labelled reply with the category suggested for it (a reply not among the misses agreed)."""
    missed = {miss["id"]: miss["got"] for miss in bench[1]["misses"]}
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{**row, "got": missed.get(row["id"], row["expected"])} for row in rows]


def agreement(rows: list[dict]) -> float:
    return sum(row["got"] == row["expected"] for row in rows) / len(rows)


def per_category(rows: list[dict]) -> dict[str, float]:
    return {c.value: agreement([r for r in rows if r["expected"] == c.value]) for c in Category}


def test_the_corpus_is_what_it_says(scored):
    assert len(scored) >= 240
    assert len({row["id"] for row in scored}) == len(scored)
    splits = Counter(row["split"] for row in scored)
    assert set(splits) == {"tune", "check"} and splits["check"] >= 0.15 * len(scored)
    assert {row["round"] for row in scored if row["split"] == "check"} == {max(row["round"] for row in scored)}
    for language in COVERED:
        labelled = Counter(row["expected"] for row in scored if row["language"] == language)
        assert all(labelled[c.value] >= 5 for c in Category), (language, labelled)
    assert {row["language"] for row in scored} - COVERED, "a few replies in languages without phrase tables"


def test_agreement_floors_on_the_whole_corpus(scored):
    covered = [row for row in scored if row["language"] in COVERED]
    assert agreement(scored) >= FLOOR_ALL
    assert agreement(covered) >= FLOOR_COVERED
    low = {c: rate for c, rate in per_category(covered).items() if rate < FLOOR_COVERED_PER_CATEGORY}
    assert not low, low


def test_agreement_floors_on_the_held_back_split(scored):
    check = [row for row in scored if row["language"] in COVERED and row["split"] == "check"]
    assert agreement(check) >= FLOOR_CHECK
    low = {c: rate for c, rate in per_category(check).items() if rate < FLOOR_CHECK_PER_CATEGORY}
    assert not low, low


def test_a_suggested_category_is_rarely_wrong(scored):
    """Misses fall to Other (the operator decides) far more than to a wrong category."""
    for category in Category:
        if category is Category.OTHER:
            continue
        suggested = [row for row in scored if row["got"] == category.value]
        assert agreement(suggested) >= FLOOR_PRECISION, category


@pytest.mark.parametrize(
    ("text", "category", "phrase"),
    [
        # Put off to later is not interest: nothing is wanted now.
        ("not now, maybe in Q3", Category.NOT_INTERESTED, "not now"),
        ("Not now - but tell me more in Q3", Category.NOT_INTERESTED, "Not now"),
        ("Circle back next year please.", Category.NOT_INTERESTED, "Circle back next year"),
        ("I'm not the right person — talk to Ana", Category.WRONG_PERSON, "I'm not the right person"),
        ("We're not interested right now but my colleague Ana might be", Category.WRONG_PERSON, None),
        ("please remove me from your list", Category.UNSUBSCRIBE, None),
        ("I'd like to unsubscribe from these emails, thanks.", Category.UNSUBSCRIBE, "like to unsubscribe"),
        ("Not interested. Please remove my email from your database.", Category.UNSUBSCRIBE, None),
        # A question about taking other people off something else asks nothing of us.
        ("how do I unsubscribe my team from the Zendesk digest?", Category.OTHER, "how do I unsubscribe my team"),
        ("thanks, but we're all set", Category.NOT_INTERESTED, "we're all set"),
        ("Thanks for thinking of us, but we'll pass.", Category.NOT_INTERESTED, "we'll pass"),
        ("booked a slot for Tuesday", Category.MEETING, "booked a slot"),
        ("see you Thursday at 3", Category.MEETING, "see you Thursday"),
        ("Accepted: Intro call @ Wed 12 Mar 2026 10:00 - 10:30 (CET)", Category.MEETING, "Accepted:"),
        # A time proposed is not yet a meeting booked.
        ("Does Thursday at 3 work for you?", Category.INTERESTED, "Does Thursday at 3 work"),
        ("sounds good, tell me more", Category.INTERESTED, "tell me more"),
        ("send me pricing", Category.INTERESTED, "send me pricing"),
        ("I am out of the office until Monday with limited access to email.", Category.OUT_OF_OFFICE, None),
        ("Das interessiert uns leider nicht.", Category.NOT_INTERESTED, "interessiert uns leider nicht"),
        ("Je ne veux plus recevoir vos e-mails.", Category.UNSUBSCRIBE, None),
        ("No soy la persona adecuada, hable con Ana.", Category.WRONG_PERSON, "No soy la persona adecuada"),
    ],
)
def test_hard_cases(text, category, phrase):
    got = suggest(text)
    assert got.category is category, got
    if phrase is not None:
        assert got.phrase == phrase
    assert got.phrase in " ".join(text.split()), "the phrase is quoted as written"


@pytest.mark.parametrize(
    ("text", "category", "phrase"),
    [
        ("I am not really interested", Category.NOT_INTERESTED, "not really interested"),
        ("Ça ne m'intéresse pas", Category.NOT_INTERESTED, "ne m'intéresse pas"),
        ("No me parece interesante", Category.NOT_INTERESTED, "No me parece interesante"),
        ("No, I'd love to hear more actually", Category.INTERESTED, "I'd love to hear"),
        # the plain refusal in the languages without tables of their own
        ("Não me interessa.", Category.NOT_INTERESTED, "Não me interessa"),
        ("Non mi interessa.", Category.NOT_INTERESTED, "Non mi interessa"),
        ("Interesseert me niet.", Category.NOT_INTERESTED, "Interesseert me niet"),
        ("Nie interesuje nas to, dziękuję.", Category.NOT_INTERESTED, "Nie interesuje nas"),
    ],
)
def test_a_negation_turns_interest_into_a_refusal_within_its_clause(text, category, phrase):
    got = suggest(text)
    assert (got.category, got.phrase) == (category, phrase)


@pytest.mark.parametrize(
    "text",
    [
        "FYI the case study link in your email goes to a 404.",
        "The link to your brochure is broken.",
        "Der Link zur Demo funktioniert nicht.",
        "Le lien vers la présentation ne marche pas.",
        "El enlace al caso de éxito no funciona.",
        "Il link alla demo non funziona.",
        "De link naar de brochure werkt niet.",
        "O link da apresentação não abre.",
        "Link do prezentacji nie działa.",
    ],
)
def test_a_broken_link_reported_is_no_interest_in_what_it_names(text):
    got = suggest(text)
    assert got.category is Category.OTHER, got


def test_what_is_wanted_beside_a_broken_link_is_still_interest():
    got = suggest("The case study link is broken. Could you send me the pricing instead?")
    assert got.category is Category.INTERESTED and got.phrase != "case study", got


def test_a_negated_request_to_stop_is_none():
    assert suggest("Please don't remove me, I do read these").category is not Category.UNSUBSCRIBE


def test_the_quote_left_in_a_reply_and_the_signature_are_not_read():
    quoted = (
        "Sounds good, send the deck.\n\nOn Mon, 2 Mar 2026, Tom <tom@outreach.example> wrote:\n"
        "> If this is not for you, please remove me from... just reply unsubscribe\n> not interested? no problem"
    )
    assert suggest(quoted).category is Category.INTERESTED
    signed = (
        "Will read this later.\n\nCONFIDENTIALITY NOTICE: If you are not the intended recipient, please notify "
        "the sender. To unsubscribe from our newsletter, click here."
    )
    got = suggest(signed)
    assert (got.category, got.phrase, got.language) == (Category.OTHER, "", "en")


def test_the_phrase_is_quoted_as_written_and_names_its_language():
    got = suggest("Hi Tom,\n\nYES PLEASE SEND PRICING for 40 seats.\n\nRob")
    assert got.category is Category.INTERESTED and got.phrase == "SEND PRICING" and got.language == "en"
    assert suggest("Kein Interesse, danke.").language == "de"
    assert suggest("Hola, ¿me envía más información?").phrase == "envía más información"


def test_confidence_is_lower_when_the_reply_also_says_the_opposite():
    clean, torn = suggest("Please remove me from your list."), suggest("Yes please! Actually no, remove me.")
    assert clean.category is torn.category is Category.UNSUBSCRIBE
    assert 0 < torn.confidence < clean.confidence <= 1
    weak = read_phrases("Got a one-pager?").suggestion  # a hint word only (the model, agreeing, may be surer)
    assert weak.category is Category.INTERESTED and weak.confidence <= 0.5


def test_nothing_recognised_is_other_with_no_phrase():
    for text in ("", "   ", "👍", "Received, thanks.", "\x00\x07" * 10, "a" * 20000):
        got = suggest(text)
        assert got.category is Category.OTHER and got.phrase == "", got
        assert got.decided_by in ("", MODEL)  # no phrase decided; the model may be sure it is nothing more
    assert suggest("   ") == Suggestion(Category.OTHER)  # nothing to read: no confidence at all


def test_bench_replies_prints_a_table_and_writes_json(bench, scored):
    printed, figures = bench
    assert "split check" in printed and "split tune" in printed and "misses suggested as" in printed
    assert set(figures["splits"]) == {"tune", "check"} and figures["items"] == len(scored)
    wrong_person = [row for row in scored if row["expected"] == "wrong_person"]
    assert figures["all"]["wrong_person"]["items"] == len(wrong_person)
    sample = figures["misses"][0]
    assert suggest(sample["text"]).category.value == sample["got"] != sample["expected"]
    check = [row for row in scored if row["split"] == "check"]
    assert figures["splits"]["check"]["all"]["agreement"] == round(agreement(check), 4)


def test_bench_replies_scores_another_corpus_and_refuses_a_broken_one(tmp_path, capsys):
    held_out = tmp_path / "held_out.jsonl"
    held_out.write_text(
        json.dumps({"text": "Not interested, thanks.", "expected": "not_interested"}) + "\n"
        + json.dumps({"text": "Tell me more!", "expected": "meeting"}) + "\n"
    )
    call_command("bench_replies", "--corpus", str(held_out))
    printed = capsys.readouterr().out
    assert "Agreement, all replies: 1/2" in printed and "interested 1" in printed  # the miss and what it became
    held_out.write_text(json.dumps({"text": "x", "expected": "maybe"}) + "\n")
    with pytest.raises(CommandError, match="expected"):
        call_command("bench_replies", "--corpus", str(held_out))
