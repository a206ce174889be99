"""Benchmark the inbound-mail classifier against a labelled corpus.

    python manage.py bench_classifier /work/shared/corpus [--json OUT] [--show-misses]

DIR is the corpus root (sets in sub-folders, each with an ``expected.csv``) or
one set. The same run scores flufl.bounce alone, so the two can be compared
on identical input. The corpus stays outside the repository; nothing here
writes to the database.
"""

from __future__ import annotations

import csv
import email
import email.policy
import json
import logging
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from inbound.classify import Classification, classify
from inbound.kinds import BOUNCE, HARD, SOFT
from proving.jsonout import json_target

# Expected classes scored for agreement (the corpus' vocabulary).
CLASSES = ("complaint", "autoreply", "human_reply", "bounce")
# Our kinds in the corpus' vocabulary. An unsubscribe request is a human reply
# whose text asks to stop; the corpus does not label that intent separately.
KIND_TO_CLASS = {
    "complaint": "complaint",
    "auto_reply": "autoreply",
    "human_reply": "human_reply",
    "unsubscribe_request": "human_reply",
    "bounce": "bounce",
    "unrelated": "unrelated",
    "auth_failure": "auth_failure",
}
# The corpus labels every feedback-loop report "complaint" and names its ARF
# Feedback-Type. Two types are not complaints and have their own answer: an
# opt-out report (ARF drafts) is the recipient's unsubscribe request, and an
# RFC 6591 auth-failure report is an authentication failure nobody complained
# about. For those rows only that kind agrees; calling one a complaint is a miss.
FEEDBACK_TYPE_KIND = {
    "opt-out": "unsubscribe_request",
    "opt-out-list": "unsubscribe_request",
    "auth-failure": "auth_failure",
}
# Recipient sources that come from a standard field (RFC 3464 Final-Recipient,
# Exim's X-Failed-Recipients, RFC 5965 Original-Rcpt-To); the others are
# sisimai's guesses from prose or the embedded original.
RELIABLE_SOURCES = ("dsn-final-recipient", "x-failed-recipients", "arf-original-rcpt-to")
RELIABLE_BOUNCE_SOURCES = ("dsn-final-recipient", "x-failed-recipients")
SISIMAI_CLASS = {
    "hard": "bounce",
    "soft": "bounce",
    "unknown": "bounce",
    "complaint": "complaint",
    "autoreply": "autoreply",
    "delivered": "delivered",
    "not_bounce": "not_bounce",
}


class Command(BaseCommand):
    help = "Score inbound.classify (and flufl.bounce alone) on a labelled mail corpus."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("dir", help="corpus root or one of its sets (folders with expected.csv)")
        parser.add_argument("--json", dest="json_out", help="write all figures to this JSON file")
        parser.add_argument("--show-misses", action="store_true", help="list every disagreement")

    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["dir"])
        json_out = json_target(options["json_out"])
        # flufl.bounce logs a traceback for every message it cannot read
        # (e.g. no From:); the crash count in the report says the same.
        logging.getLogger("flufl.bounce").setLevel(logging.CRITICAL)
        try:
            result = run_benchmark(root, progress=sys.stderr)
        except BenchmarkInputError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(format_report(result, show_misses=options["show_misses"]))
        if json_out:
            json_out.write_text(json.dumps(result, indent=2, sort_keys=True))
            self.stdout.write(f"JSON written to {options['json_out']}")


class BenchmarkInputError(Exception):
    pass


# ---------------------------------------------------------------------------
# Loading


def find_sets(root: Path) -> list[Path]:
    if not root.is_dir():
        raise BenchmarkInputError(f"corpus directory not found: {root}")
    if (root / "expected.csv").is_file():
        return [root]
    sets = sorted(p for p in root.iterdir() if p.is_dir() and (p / "expected.csv").is_file())
    if not sets:
        raise BenchmarkInputError(f"no expected.csv in {root} or in its sub-folders")
    return sets


def _load_rows(set_dir: Path) -> dict[str, list[dict[str, str]]]:
    by_file: dict[str, list[dict[str, str]]] = defaultdict(list)
    with (set_dir / "expected.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row.get("file"):
                by_file[row["file"]].append(row)
    return by_file


def _expected_class(rows: list[dict[str, str]]) -> str:
    """One class per file; "" when the source published no expectation."""
    if rows[0].get("expected_class"):
        return rows[0]["expected_class"]
    labels = {SISIMAI_CLASS.get(r.get("hard_or_soft", ""), "") for r in rows} - {""}
    # sisimai marks an ARF report "complaint" whatever its type; the Feedback-Type decides.
    if "bounce" in labels:
        return "bounce"
    return sorted(labels)[0] if labels else ""


def _row_candidates(row: dict[str, str]) -> set[str]:
    values = f"{row.get('recipient', '')};{row.get('recipient_alt', '')}"
    return {v.strip().lower() for v in values.split(";") if "@" in v}


# ---------------------------------------------------------------------------
# flufl.bounce alone


def _flufl(raw: bytes) -> tuple[set[str], set[str], bool]:
    """(temporary, permanent, crashed) as flufl.bounce reports them."""
    from flufl.bounce import all_failures

    try:
        msg = email.message_from_bytes(raw, policy=email.policy.compat32)
        temporary, permanent = all_failures(msg)
    except Exception:
        return set(), set(), True

    def norm(values: Any) -> set[str]:
        return {(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)).strip("<>").lower() for v in values}

    return norm(temporary), norm(permanent), False


# ---------------------------------------------------------------------------
# Scoring


def run_benchmark(root: Path, progress: Any = None) -> dict[str, Any]:
    """Classify every labelled file under ``root`` and return all figures."""
    sets = find_sets(root)
    jobs = [(s, name, rows) for s in sets for name, rows in sorted(_load_rows(s).items())]
    state = _State()
    started = time.perf_counter()
    for index, (set_dir, name, rows) in enumerate(jobs, 1):
        _score_file(state, set_dir, name, rows)
        if progress is not None and (index % 50 == 0 or index == len(jobs)):
            progress.write(f"bench_classifier: {index}/{len(jobs)} files\n")
            progress.flush()
    return state.result(root, [s.name for s in sets], time.perf_counter() - started)


class _State:
    def __init__(self) -> None:
        self.files = 0
        self.crashes: list[str] = []
        self.flufl_crashes = 0
        self.agree: dict[str, Counter[str]] = defaultdict(Counter)  # class -> {n, ours, flufl}
        self.extra: dict[str, Counter[str]] = defaultdict(Counter)  # other labels -> our kinds
        self.confusion: dict[str, Counter[str]] = {"ours": Counter(), "flufl": Counter()}
        self.recipients: dict[str, dict[str, Counter[str]]] = {
            "ours": defaultdict(Counter),
            "flufl": defaultdict(Counter),
        }
        self.complaint_recipients: Counter[str] = Counter()
        self.reply_text: Counter[str] = Counter()
        self.unsubscribe_in_human = 0
        self.misses: list[dict[str, str]] = []
        self.slowest = (0.0, "")
        # rule -> {n, scored, agree, hs_n, hs_ok}: how often each rule decided and how often it agreed.
        self.rules: dict[str, Counter[str]] = defaultdict(Counter)
        self.feedback_types: Counter[str] = Counter()

    def result(self, root: Path, sets: list[str], seconds: float) -> dict[str, Any]:
        return {
            "root": str(root),
            "sets": sets,
            "files": self.files,
            "seconds": round(seconds, 2),
            "slowest_file": {"file": self.slowest[1], "seconds": round(self.slowest[0], 3)},
            "crashes": len(self.crashes),
            "crashed_files": self.crashes,
            "flufl_crashes": self.flufl_crashes,
            "class_agreement": _class_table(self.agree),
            "other_labels": {k: dict(v) for k, v in sorted(self.extra.items())},
            "hard_soft": {who: _confusion(c) for who, c in self.confusion.items()},
            "recipient_accuracy": {who: _recipient_table(t) for who, t in self.recipients.items()},
            "complaint_recipient_accuracy": _ratio(self.complaint_recipients),
            "reply_text_exact": _ratio(self.reply_text),
            "unsubscribe_in_human_set": self.unsubscribe_in_human,
            "per_rule": _rule_table(self.rules),
            "complaint_feedback_types": dict(sorted(self.feedback_types.items())),
            "misses": self.misses,
        }


def _score_file(state: _State, set_dir: Path, name: str, rows: list[dict[str, str]]) -> None:
    path = set_dir / name
    if not path.is_file():
        state.misses.append({"file": f"{set_dir.name}/{name}", "problem": "listed in expected.csv but missing"})
        return
    raw = path.read_bytes()
    state.files += 1
    label = f"{set_dir.name}/{name}"
    started = time.perf_counter()
    try:
        ours = classify(raw)
    except Exception as exc:  # classify promises never to raise; count it if it does
        state.crashes.append(f"{label}: {type(exc).__name__}")
        ours = Classification(kind="unrelated", reason="crash")
    elapsed = time.perf_counter() - started
    if elapsed > state.slowest[0]:
        state.slowest = (elapsed, label)
    if ours.reason.startswith("internal error"):
        state.crashes.append(f"{label}: {ours.reason}")
    temporary, permanent, flufl_crashed = _flufl(raw)
    state.flufl_crashes += flufl_crashed

    expected = _expected_class(rows)
    got = KIND_TO_CLASS.get(ours.kind, ours.kind)
    flufl_bounce = bool(temporary or permanent)
    rule = state.rules[ours.rule or "(none)"]
    rule["n"] += 1
    if expected in CLASSES:
        agreed = _agrees(expected, rows, ours.kind, got)
        if expected == "complaint":
            state.feedback_types[f"{_feedback_type(rows) or '(none)'}->{ours.kind}"] += 1
        rule["scored"] += 1
        rule["agree"] += agreed
        table = state.agree[expected]
        table["n"] += 1
        table["ours"] += agreed
        table["flufl"] += flufl_bounce if expected == "bounce" else 0
        table["flufl_not_bounce"] += not flufl_bounce
        if not agreed:
            state.misses.append(
                {"file": label, "expected": expected, "got": ours.kind, "reason": ours.reason, "rule": ours.rule}
            )
        if expected == "human_reply" and ours.kind == "unsubscribe_request":
            state.unsubscribe_in_human += 1
    elif expected:
        state.extra[expected][ours.kind] += 1

    for row in rows:
        _score_row(state, label, row, ours, temporary, permanent)


def _feedback_type(rows: list[dict[str, str]]) -> str:
    return (rows[0].get("feedback_type") or "").strip().lower()


def _agrees(expected: str, rows: list[dict[str, str]], kind: str, got: str) -> bool:
    if expected == "complaint" and _feedback_type(rows) in FEEDBACK_TYPE_KIND:
        return kind == FEEDBACK_TYPE_KIND[_feedback_type(rows)]
    return got == expected


def _score_row(
    state: _State, label: str, row: dict[str, str], ours: Classification, temporary: set[str], permanent: set[str]
) -> None:
    candidates = _row_candidates(row)
    hard_or_soft = row.get("hard_or_soft", "")
    if hard_or_soft in (HARD, SOFT):
        predicted = _our_type(ours, candidates)
        state.confusion["ours"][f"{hard_or_soft}->{predicted}"] += 1
        state.rules[ours.rule or "(none)"]["hs_n"] += 1
        state.rules[ours.rule or "(none)"]["hs_ok"] += predicted == hard_or_soft
        state.confusion["flufl"][f"{hard_or_soft}->{_flufl_type(temporary, permanent, candidates)}"] += 1
        if predicted != hard_or_soft:
            state.misses.append(
                {
                    "file": label,
                    "expected": hard_or_soft,
                    "got": predicted,
                    "reason": ours.reason,
                    "rule": ours.rule,
                    "sisimai_reason": row.get("reason", ""),
                }
            )
    if candidates and hard_or_soft in (HARD, SOFT, "unknown", "complaint"):
        source = row.get("recipient_source") or "unlabelled"
        found = bool(candidates & {r.lower() for r in ours.recipients})
        state.recipients["ours"][source]["n"] += 1
        state.recipients["ours"][source]["ok"] += found
        state.recipients["flufl"][source]["n"] += 1
        state.recipients["flufl"][source]["ok"] += bool(candidates & (temporary | permanent))
        if not found:
            state.misses.append(
                {
                    "file": label,
                    "expected_recipient": ";".join(sorted(candidates)),
                    "got_recipients": ",".join(ours.recipients),
                    "source": source,
                }
            )
    original_rcpt = row.get("original_rcpt_to", "")
    if row.get("expected_class") == "complaint" and "@" in original_rcpt:
        state.complaint_recipients["n"] += 1
        state.complaint_recipients["ok"] += original_rcpt.lower() in ours.recipients
    if row.get("expected_class") == "human_reply" and row.get("expected_reply_text", "").strip():
        state.reply_text["n"] += 1
        state.reply_text["ok"] += _squash(row["expected_reply_text"]) == _squash(ours.reply_text)


def _our_type(ours: Classification, candidates: set[str]) -> str:
    if ours.kind != BOUNCE:
        return "not_bounce"
    for recipient, kind in zip(ours.recipients, ours.recipient_types, strict=False):
        if recipient in candidates:
            return kind
    return ours.bounce_type


def _flufl_type(temporary: set[str], permanent: set[str], candidates: set[str]) -> str:
    # flufl reports "permanent" and "temporary"; permanent is its "hard".
    if candidates & permanent:
        return HARD
    if candidates & temporary:
        return SOFT
    if permanent:
        return HARD
    return SOFT if temporary else "not_bounce"


def _squash(text: str) -> str:
    return " ".join(text.split())


def _ratio(counter: Counter[str]) -> dict[str, Any]:
    n = counter["n"]
    return {"n": n, "ok": counter["ok"], "rate": round(counter["ok"] / n, 4) if n else None}


def _class_table(agree: dict[str, Counter[str]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    total = Counter()
    for cls in CLASSES:
        counts = agree.get(cls, Counter())
        total.update(counts)
        table[cls] = {
            "n": counts["n"],
            "ours": counts["ours"],
            "ours_rate": round(counts["ours"] / counts["n"], 4) if counts["n"] else None,
            "flufl": counts["flufl"] if cls == "bounce" else None,
            "flufl_rate": round(counts["flufl"] / counts["n"], 4) if counts["n"] and cls == "bounce" else None,
            "flufl_not_bounce": counts["flufl_not_bounce"],
        }
    # flufl.bounce only tells bounce from not-bounce: it agrees on a bounce
    # file when it finds a failure, and on no other class.
    table["all"] = {
        "n": total["n"],
        "ours": total["ours"],
        "ours_rate": round(total["ours"] / total["n"], 4) if total["n"] else None,
        "flufl": total["flufl"],
        "flufl_rate": round(total["flufl"] / total["n"], 4) if total["n"] else None,
    }
    return table


def _rule_table(rules: dict[str, Counter[str]]) -> dict[str, Any]:
    """Per deciding rule: files decided, class agreement on labelled files, hard/soft agreement on rows."""
    table = {}
    for name, counts in sorted(rules.items(), key=lambda item: (-item[1]["n"], item[0])):
        table[name] = {
            "decided": counts["n"],
            "scored": counts["scored"],
            "agree": counts["agree"],
            "agree_rate": round(counts["agree"] / counts["scored"], 4) if counts["scored"] else None,
            "hard_soft_n": counts["hs_n"],
            "hard_soft_ok": counts["hs_ok"],
            "hard_soft_rate": round(counts["hs_ok"] / counts["hs_n"], 4) if counts["hs_n"] else None,
        }
    return table


def _confusion(counter: Counter[str]) -> dict[str, Any]:
    matrix = {f"{e}->{p}": counter[f"{e}->{p}"] for e in (HARD, SOFT) for p in (HARD, SOFT, "not_bounce")}
    n = sum(matrix.values())
    ok = matrix["hard->hard"] + matrix["soft->soft"]
    found = n - matrix["hard->not_bounce"] - matrix["soft->not_bounce"]
    return {
        "matrix": matrix,
        "n": n,
        "agreement": round(ok / n, 4) if n else None,
        # Among rows the tool did see as a bounce: is its hard/soft right?
        "agreement_when_detected": round(ok / found, 4) if found else None,
        "false_hard": matrix["soft->hard"],
    }


def _recipient_table(table: dict[str, Counter[str]]) -> dict[str, Any]:
    def total(sources: Iterable[str]) -> dict[str, Any]:
        counts: Counter[str] = Counter()
        for source in sources:
            counts.update(table.get(source, Counter()))
        return _ratio(counts)

    return {
        "reliable": total(RELIABLE_SOURCES),
        # Bounce rows only: comparable with flufl.bounce, which ignores complaints.
        "reliable_bounces": total(RELIABLE_BOUNCE_SOURCES),
        "all_rows": total(table),
        "per_source": {source: _ratio(counts) for source, counts in sorted(table.items())},
    }


# ---------------------------------------------------------------------------
# Report


def _pct(value: float | None) -> str:
    return "  n/a " if value is None else f"{value * 100:5.1f}%"


def format_report(result: dict[str, Any], *, show_misses: bool = False) -> str:
    lines = [
        f"Corpus {result['root']} (sets: {', '.join(result['sets'])}): {result['files']} files "
        f"in {result['seconds']}s, slowest {result['slowest_file']['seconds']}s"
    ]
    lines += ["", "Class agreement (per file)", f"  {'expected':<12} {'n':>4}   {'ours':>13}   {'flufl.bounce':>13}"]
    for cls in (*CLASSES, "all"):
        row = result["class_agreement"][cls]
        ours = f"{row['ours']:>4} {_pct(row['ours_rate'])}"
        if row["flufl"] is None:
            flufl = f"n/a (not flagged as bounce: {row['flufl_not_bounce']})"
        else:
            flufl = f"{row['flufl']:>4} {_pct(row['flufl_rate'])}"
        lines.append(f"  {cls:<12} {row['n']:>4}   {ours:>13}   {flufl}")
    if result["other_labels"]:
        lines.append(
            "  other labels -> our kinds: "
            + "; ".join(f"{label}: {dict(kinds)}" for label, kinds in result["other_labels"].items())
        )
    lines.append(f"  human_reply files classified unsubscribe_request: {result['unsubscribe_in_human_set']}")
    if result.get("complaint_feedback_types"):
        lines.append(
            "  complaint set, Feedback-Type -> our kind: "
            + "; ".join(f"{pair}: {n}" for pair, n in result["complaint_feedback_types"].items())
        )

    lines += ["", "Hard/soft on sisimai rows labelled hard or soft (expected -> predicted)"]
    for who in ("ours", "flufl"):
        conf = result["hard_soft"][who]
        m = conf["matrix"]
        lines.append(
            f"  {who:<6} n={conf['n']}  agreement {_pct(conf['agreement'])}  "
            f"(when detected {_pct(conf['agreement_when_detected'])})  false hard {conf['false_hard']}"
        )
        lines.append(
            f"         hard->hard {m['hard->hard']:>3}  hard->soft {m['hard->soft']:>3}  "
            f"hard->none {m['hard->not_bounce']:>3}"
        )
        lines.append(
            f"         soft->hard {m['soft->hard']:>3}  soft->soft {m['soft->soft']:>3}  "
            f"soft->none {m['soft->not_bounce']:>3}"
        )

    lines += ["", "Recipient accuracy (expected recipient among those reported)"]
    for who in ("ours", "flufl"):
        acc = result["recipient_accuracy"][who]
        rel, every, bounces = acc["reliable"], acc["all_rows"], acc["reliable_bounces"]
        lines.append(
            f"  {who:<6} reliable rows {rel['ok']}/{rel['n']} {_pct(rel['rate'])}   "
            f"(bounces only {bounces['ok']}/{bounces['n']} {_pct(bounces['rate'])})   "
            f"all rows {every['ok']}/{every['n']} {_pct(every['rate'])}"
        )
        lines.append("         " + "  ".join(f"{source} {r['ok']}/{r['n']}" for source, r in acc["per_source"].items()))
    complaint = result["complaint_recipient_accuracy"]
    reply = result["reply_text_exact"]
    lines += [
        f"  complaint Original-Rcpt-To (arf set): {complaint['ok']}/{complaint['n']} {_pct(complaint['rate'])}",
        "",
        f"Reply text exact (whitespace-normalised): {reply['ok']}/{reply['n']} {_pct(reply['rate'])}",
        f"Crashes: ours {result['crashes']}   flufl.bounce {result['flufl_crashes']}",
    ]
    for crashed in result["crashed_files"]:
        lines.append(f"  crash: {crashed}")
    lines += [
        "",
        "Per rule (the rule that decided the kind)",
        f"  {'rule':<28} {'files':>5}   {'class agreement':>17}   {'hard/soft rows':>16}",
    ]
    for name, row in result["per_rule"].items():
        agree = f"{row['agree']:>4}/{row['scored']:<4} {_pct(row['agree_rate'])}" if row["scored"] else f"{'-':>17}"
        hard_soft = (
            f"{row['hard_soft_ok']:>4}/{row['hard_soft_n']:<4} {_pct(row['hard_soft_rate'])}"
            if row["hard_soft_n"]
            else f"{'-':>16}"
        )
        lines.append(f"  {name:<28} {row['decided']:>5}   {agree}   {hard_soft}")
    if show_misses:
        lines += ["", f"Disagreements ({len(result['misses'])})"]
        lines += [f"  {json.dumps(miss, ensure_ascii=False)}" for miss in result["misses"]]
    return "\n".join(lines) + "\n"
