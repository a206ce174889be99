"""Score the suggested reply categories (inbound.classify.intent) on a labelled corpus of replies.

    python manage.py bench_replies [--corpus FILE] [--json OUT] [--show-misses]

The corpus is JSON Lines, one reply a line: ``text``, ``expected`` (a category value: interested, meeting,
not_interested, wrong_person, out_of_office, unsubscribe, other), and optionally ``id``, ``language``,
``split`` (the shipped corpus marks "tune", the replies the phrase tables were written against, and
"check", held back and never tuned on), ``hard`` (true on the cases a keyword matcher gets wrong: scored apart
too) and ``note``. The report names the model (learned/model.json's version) and the time one reply takes
(p50 and p99, the suggestion and ingestion's classify apart). Figures are given for the whole corpus and per split:
per category its items, agreement (recall: of the replies labelled so, how many were suggested so),
precision (of the replies suggested so, how many were labelled so) and what the misses were suggested as.

A last table scores ingestion's own decision on the same replies: each text is wrapped in a minimal RFC 5322
message answering one of our messages and read by ``inbound.classify.classify``; its ``unsubscribe_request``
(which suppresses the address) is compared with the Unsubscribe label.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from inbound.classify import classify, learned
from inbound.classify.intent import Category, suggest
from inbound.classify.reply import POSSIBLE_OPTOUT
from inbound.classify.training import labelled_lines
from inbound.kinds import Kind

CATEGORIES = tuple(c.value for c in Category)
# The phrase tables cover these; replies in other languages are scored, and shown apart.
COVERED_LANGUAGES = ("en", "de", "fr", "es")


class CorpusError(Exception):
    pass


def load_corpus(path: Path) -> list[dict[str, Any]]:
    """The labelled replies of a JSON Lines file; CorpusError naming the line when one is not usable."""
    if not path.is_file():
        raise CorpusError(f"corpus file not found: {path}")
    items = []
    for number, item in labelled_lines(path, CorpusError):
        item.setdefault("id", f"line {number}")
        items.append(item)
    if not items:
        raise CorpusError(f"no replies in {path}")
    return items


def run(path: Path) -> dict[str, Any]:
    """Suggest a category for every reply of the corpus and return all figures."""
    items = load_corpus(path)
    suggest("warm up")  # loads the model once; its load time is not a reply's
    started = time.perf_counter()
    rows, timings = [], []
    for item in items:
        began = time.perf_counter()
        got = suggest(item["text"])
        timings.append(time.perf_counter() - began)
        rows.append({**item, "got": got.category.value, "phrase": got.phrase, "confidence": got.confidence,
                     "decided_by": got.decided_by})
    seconds = time.perf_counter() - started
    splits = sorted({row["split"] for row in rows if row.get("split")})
    ingest_timings = []
    for row in rows:
        raw = as_reply(row["text"])
        began = time.perf_counter()
        result = classify(raw)
        ingest_timings.append(time.perf_counter() - began)
        row["ingested"] = result.kind
        row["provisional"] = result.rule == POSSIBLE_OPTOUT
    hard = [row for row in rows if row.get("hard")]
    return {
        "corpus": str(path),
        "items": len(rows),
        "seconds": round(seconds, 3),
        "model": learned.version() or "none (phrase tables only)",
        "latency_ms": {"suggest": _percentiles(timings), "ingestion": _percentiles(ingest_timings)},
        "hard": _table(hard) if hard else None,
        "split_hard": {name: _table(part) for name in splits
                       if (part := [r for r in hard if r.get("split") == name])},
        "all": _table(rows),
        "splits": {name: _table([r for r in rows if r.get("split") == name]) for name in splits},
        "languages": _languages(rows),
        "split_languages": {name: _languages([r for r in rows if r.get("split") == name]) for name in splits},
        "ingestion": {"all": _ingestion(rows)} | {
            f"split {name}": _ingestion([r for r in rows if r.get("split") == name]) for name in splits
        },
        "ingestion_misses": [
            {key: row.get(key) for key in ("id", "split", "expected", "ingested", "text")}
            for row in rows
            if (row["expected"] == Category.UNSUBSCRIBE) != (row["ingested"] == Kind.UNSUBSCRIBE_REQUEST)
        ],
        "misses": [
            {key: row.get(key) for key in ("id", "split", "language", "expected", "got", "phrase", "confidence",
                                           "decided_by", "note", "text")}
            for row in rows if row["got"] != row["expected"]
        ],
    }


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    at = lambda share: round(ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000, 2)  # noqa: E731
    return {"p50": at(0.5), "p99": at(0.99), "max": round(ordered[-1] * 1000, 2)} if ordered else {}


def _table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    labelled = Counter(row["expected"] for row in rows)
    suggested = Counter(row["got"] for row in rows)
    confused: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        if row["got"] != row["expected"]:
            confused[row["expected"]][row["got"]] += 1
    table: dict[str, Any] = {}
    for category in CATEGORIES:
        agree = sum(1 for row in rows if row["expected"] == category == row["got"])
        table[category] = {
            "items": labelled[category],
            "agree": agree,
            "agreement": _rate(agree, labelled[category]),
            "suggested": suggested[category],
            "precision": _rate(agree, suggested[category]),
            "misses_as": dict(confused[category].most_common()),
        }
    agree = sum(1 for row in rows if row["expected"] == row["got"])
    table["all"] = {"items": len(rows), "agree": agree, "agreement": _rate(agree, len(rows))}
    return table


def as_reply(text: str) -> bytes:
    """A person's reply to one of our messages, as a mail client would send it: the text as its body."""
    msg = EmailMessage()
    msg["From"] = "Jane Doe <jane@example.org>"
    msg["To"] = "Tom <tom@outreach.example>"
    msg["Subject"] = "Re: A quick question"
    msg["Date"] = "Thu, 03 Dec 2026 10:00:00 +0000"
    msg["Message-ID"] = "<reply-1@example.org>"
    msg["In-Reply-To"] = "<seq-1@outreach.example>"
    msg["References"] = "<seq-1@outreach.example>"
    msg.set_content(text)
    return msg.as_bytes()


def _ingestion(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Ingestion's unsubscribe_request against the Unsubscribe label: recall, precision, what else it decided."""
    labelled = [row for row in rows if row["expected"] == Category.UNSUBSCRIBE]
    decided = [row for row in rows if row["ingested"] == Kind.UNSUBSCRIBE_REQUEST]
    agree = sum(1 for row in decided if row["expected"] == Category.UNSUBSCRIBE)
    # Provisionally suppressed (may be asking to stop): nothing more is sent until an operator decides.
    held = [row for row in rows if row["ingested"] == Kind.UNSUBSCRIBE_REQUEST or row.get("provisional")]
    held_agree = sum(1 for row in held if row["expected"] == Category.UNSUBSCRIBE)
    return {
        "provisional": sum(1 for row in rows if row.get("provisional")),
        "stopped_recall": _rate(held_agree, len(labelled)),
        "stopped_precision": _rate(held_agree, len(held)),
        "items": len(rows),
        "labelled": len(labelled),
        "decided": len(decided),
        "agree": agree,
        "recall": _rate(agree, len(labelled)),
        "precision": _rate(agree, len(decided)),
        "misses_as": dict(Counter(str(r["ingested"]) for r in labelled if r["ingested"] != Kind.UNSUBSCRIBE_REQUEST)),
        "wrongly_from": dict(Counter(r["expected"] for r in decided if r["expected"] != Category.UNSUBSCRIBE)),
    }


def _languages(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_language: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_language[row.get("language") or "?"].append(row)
    return {
        language: {"items": len(group), "agree": (ok := sum(r["got"] == r["expected"] for r in group)),
                   "agreement": _rate(ok, len(group))}
        for language, group in sorted(by_language.items(), key=lambda item: (-len(item[1]), item[0]))
    }


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _pct(value: float | None) -> str:
    return "  n/a " if value is None else f"{value * 100:5.1f}%"


def format_report(result: dict[str, Any], *, show_misses: bool = False) -> str:
    latency = result["latency_ms"]
    lines = [
        f"Corpus {result['corpus']}: {result['items']} replies in {result['seconds']}s; model {result['model']}",
        f"Per reply: suggestion p50 {latency['suggest']['p50']} ms, p99 {latency['suggest']['p99']} ms; "
        f"ingestion's classify p50 {latency['ingestion']['p50']} ms, p99 {latency['ingestion']['p99']} ms",
    ]
    sections = [("all replies", result["all"])] + [(f"split {n}", t) for n, t in result["splits"].items()]
    if result["hard"]:
        sections += [("hard cases", result["hard"])]
        sections += [(f"hard cases, split {n}", t) for n, t in result["split_hard"].items()]
    for title, table in sections:
        total = table["all"]
        lines += [
            "",
            f"Agreement, {title}: {total['agree']}/{total['items']} {_pct(total['agreement'])}",
            f"  {'category':<15} {'items':>5}   {'agreement':>15}   {'precision':>15}   misses suggested as",
        ]
        for category in CATEGORIES:
            row = table[category]
            agreement = f"{row['agree']:>4}/{row['items']:<4} {_pct(row['agreement'])}"
            precision = f"{row['agree']:>4}/{row['suggested']:<4} {_pct(row['precision'])}"
            misses = ", ".join(f"{got} {n}" for got, n in row["misses_as"].items()) or "-"
            lines.append(f"  {category:<15} {row['items']:>5}   {agreement}   {precision}   {misses}")
    splits = list(result["split_languages"])
    lines += ["", "Agreement per language" + "".join(f"   {f'split {name}':>16}" for name in splits)]
    for language, row in result["languages"].items():
        line = f"  {language:<4} {row['agree']:>4}/{row['items']:<4} {_pct(row['agreement'])}"
        for name in splits:
            part = result["split_languages"][name].get(language)
            line += f"   {part['agree']:>4}/{part['items']:<4} {_pct(part['agreement'])}" if part else f"   {'-':>16}"
        lines.append(line + ("" if language in COVERED_LANGUAGES else "   (no phrase table: the model reads it)"))
    width = max(11, *(len(title) for title in result["ingestion"]))
    lines += ["", "Ingestion's unsubscribe decision (unsubscribe_request suppresses the address)",
              f"  {'replies':<{width}} {'recall':>15}   {'precision':>15}   misses decided as / wrongly from"]
    for title, row in result["ingestion"].items():
        recall = f"{row['agree']:>4}/{row['labelled']:<4} {_pct(row['recall'])}"
        precision = f"{row['agree']:>4}/{row['decided']:<4} {_pct(row['precision'])}"
        misses = ", ".join(f"{got} {n}" for got, n in row["misses_as"].items()) or "-"
        wrong = ", ".join(f"{got} {n}" for got, n in row["wrongly_from"].items()) or "-"
        lines.append(f"  {title:<{width}} {recall}   {precision}   {misses} / {wrong}")
    lines += ["", "With the provisional suppressions (may be asking to stop: held until an operator decides)",
              f"  {'replies':<{width}} {'provisional':>11}   {'recall':>7}   {'precision':>9}"]
    for title, row in result["ingestion"].items():
        lines.append(f"  {title:<{width}} {row['provisional']:>11}   {_pct(row['stopped_recall']):>7}   "
                     f"{_pct(row['stopped_precision']):>9}")
    if show_misses:
        lines += ["", f"Disagreements ({len(result['misses'])})"]
        lines += [f"  {json.dumps(miss, ensure_ascii=False)}" for miss in result["misses"]]
        lines += ["", f"Ingestion's unsubscribe disagreements ({len(result['ingestion_misses'])})"]
        lines += [f"  {json.dumps(miss, ensure_ascii=False)}" for miss in result["ingestion_misses"]]
    return "\n".join(lines) + "\n"
