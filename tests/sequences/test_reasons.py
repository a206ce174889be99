"""One vocabulary per domain: every reason (`sequences.reasons`) and every kind of inbound mail
(`inbound.handling`) has its words and its effect, and no product module spells one as a string literal where a
reason or a kind is meant."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from inbound.handling import HANDLING
from inbound.ingest.effects import EFFECTS
from inbound.kinds import Kind
from sequences.models import Enrollment
from sequences.reasons import MEANINGS, Reason, Role, StopReason, words

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("outreach", "ui", "api", "meetings", "reports", "inbound", "sequences", "mailboxes", "db")
VOCABULARIES = {ROOT / "sequences" / "reasons.py", ROOT / "inbound" / "kinds.py", ROOT / "inbound" / "handling.py"}

# Where a string is a reason: these keyword arguments, comparisons with these attributes or names, and what the
# final check returns.
REASON_KEYWORDS = {"reason", "why", "hold", "held", "cancel_reason", "stop_reason", "data__reason",
                   "cancel_reason__in", "stop_reason__in", "data__reason__in"}
REASON_NAMES = {"reason", "cancel_reason", "stop_reason", "why", "code"}
KIND_KEYWORDS = {"kind", "kind__in", "classified"}
KIND_NAMES = {"kind"}


def test_every_reason_has_its_words_and_its_effect():
    for reason in Reason:
        meaning = MEANINGS[reason]
        assert meaning.words.endswith(".") and meaning.words[:1].isupper(), reason
        assert meaning.effect and meaning.roles, reason
        assert words(reason) == meaning.words
    assert set(MEANINGS) == set(Reason)
    # A code written by an older version still reads as words, never as a bare code.
    assert words("a_retired_reason") == "A retired reason."


def test_the_stop_reasons_are_the_reasons_that_stop_a_person():
    stops = {r.value for r, m in MEANINGS.items() if Role.STOP in m.roles}
    assert {r.value for r in StopReason} == stops
    assert all(StopReason(r.value).label == Reason(r.value).label for r in StopReason)
    assert Enrollment.StopReason is StopReason
    assert dict(Enrollment._meta.get_field("stop_reason").choices) == dict(StopReason.choices)


def test_every_kind_of_inbound_mail_has_its_words_its_effect_and_an_action_when_it_acts():
    assert set(HANDLING) == set(Kind)
    for kind, handling in HANDLING.items():
        assert kind.label and handling.effect, kind
        assert (kind in EFFECTS) == handling.acts, kind
    assert set(EFFECTS) <= set(Kind)


def _literals(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, what, value) of each string constant written where a reason or a kind is meant."""
    found = []

    def strings(node: ast.AST) -> list[ast.Constant]:
        items = node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else [node]
        return [i for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str) and i.value]

    def named(node: ast.AST, names: set[str]) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr in names) or (isinstance(node, ast.Name)
                and node.id in names) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in names))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                for what, keys in (("reason", REASON_KEYWORDS), ("kind", KIND_KEYWORDS)):
                    if keyword.arg in keys:
                        found += [(c.lineno, what, c.value) for c in strings(keyword.value)]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for what, names in (("reason", REASON_NAMES), ("kind", KIND_NAMES)):
                if any(named(side, names) for side in sides):
                    found += [(c.lineno, what, c.value) for side in sides for c in strings(side)]
        elif isinstance(node, ast.FunctionDef) and node.name == "final_check":
            found += [(r.lineno, "reason", r.value.value) for r in ast.walk(node)
                      if isinstance(r, ast.Return) and r.value is not None for _ in strings(r.value)]
    return found


def _spelled(source: str) -> list[tuple[int, str]]:
    reasons, kinds = {r.value for r in Reason}, {k.value for k in Kind}
    return [(line, value) for line, what, value in _literals(ast.parse(source))
            if value in (reasons if what == "reason" else kinds)]


@pytest.mark.parametrize("source", [
    'cancel_pending(enrollment, reason="enrollment_paused")',
    'if job.cancel_reason == "variant_stopped": pass',
    'SendJob.objects.filter(stop_reason__in=["replied", "operator"])',
    'if data.get("reason") == "reply_view": pass',
    'InboundMessage.objects.filter(kind="human_reply")',
    'def final_check(job):\n    return "suppressed"',
])
def test_the_scan_finds_a_spelled_reason_or_kind(source):
    assert _spelled(source), source


def test_no_product_module_spells_a_reason_or_a_kind():
    spelled = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or path in VOCABULARIES:
                continue
            spelled += [f"{path.relative_to(ROOT)}:{line}: {value!r}" for line, value in _spelled(path.read_text())]
    assert not spelled, "name the member of sequences.reasons.Reason or inbound.kinds.Kind:\n" + "\n".join(spelled)
