"""`[[sequence.on_reply]]`: a sequence's reply rules in TOML (inbound.reply_rules), read, applied and exported
through sequences.config.parts.

    [[sequence.on_reply]]
    category = "not_interested"
    enroll = "Re-engage"      # or: assign = "USERNAME", or: notify = "USERNAME"
    after = "90d"             # enroll only: how long after the reply the first step is due

The same rules are kept by the sequence's page (ui.reply_rules), through `reply_rules_set` here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from sequences.config.durations import duration_text, parse_duration
from sequences.config.parts import SequencePart
from sequences.config.validate import Reader
from sequences.models import Sequence
from sequences.permissions import VIEW_INBOUND
from sequences.services.common import ServiceError, T, operator_log

from .kinds import Category
from .models import ReplyRule
from .reply_rules import NEVER_ENROLL, rule_words

A = ReplyRule.Action
KEY = "on_reply"
KEYS = {"category", "enroll", "after", "assign", "notify"}
ACTIONS = (A.ENROLL.value, A.ASSIGN.value, A.NOTIFY.value)


def user_problem(username: str, action: str) -> str:
    """Why this user cannot be a rule's assignee or recipient ('' when they can)."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None or not user.is_active:
        return f"there is no active user {username!r}"
    if not user.has_perm(VIEW_INBOUND):
        return f"{username!r} may not read replies (give them the operator or staff role first)"
    if action == A.NOTIFY and not user.email:
        return f"{username!r} has no email address to send the notice to"
    return ""


def rule_problems(rule: dict[str, Any], *, own: str, sequences: set[str]) -> dict[str, str]:
    """key -> what is wrong with one rule's plain values ({} when nothing is)."""
    problems = {}
    if rule["category"] not in Category:
        problems["category"] = f"must be one of {', '.join(c.value for c in Category)}"
    if rule["action"] == A.ENROLL:
        if rule["target"] == own:
            problems["enroll"] = "the person is in this sequence already: name another one"
        elif rule["target"] not in sequences:
            problems["enroll"] = f"no sequence named {rule['target']!r} (in this file or the database)"
        if rule["category"] in NEVER_ENROLL:
            problems["enroll"] = "a reply asking to stop never enrolls the person anywhere: assign or notify instead"
    elif problem := user_problem(rule["target"], rule["action"]):
        problems[rule["action"]] = problem
    return problems


def parse(reader: Reader, path: str, value: Any, own: str, sequences: set[str]) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        reader.error(path, "must be a list of [[sequence.on_reply]] tables")
        return []
    rules: list[dict[str, Any]] = []
    for index, table in enumerate(value):
        rpath = f"{path}[{index}]"
        if not isinstance(table, dict):
            reader.error(rpath, "must be a table")
            continue
        reader.unknown(table, rpath, KEYS)
        category = reader.get(table, rpath, "category", str, required=True)
        named = [action for action in ACTIONS if action in table]
        if len(named) != 1:
            reader.error(rpath, "give exactly one action: enroll = \"SEQUENCE\" (with after = \"90d\"), "
                                "assign = \"USERNAME\" or notify = \"USERNAME\"")
            continue
        action = named[0]
        target = reader.get(table, rpath, action, str, required=True)
        after = 0
        if "after" in table:
            if action != A.ENROLL:
                reader.error(f"{rpath}.after", "only an enroll rule waits (after = \"90d\")")
            try:
                after = parse_duration(table["after"])
            except ValueError as exc:
                reader.error(f"{rpath}.after", str(exc), table["after"])
        if category is None or target is None:
            continue
        rule = {"category": category, "action": action, "target": target, "after_seconds": after}
        for key, problem in rule_problems(rule, own=own, sequences=sequences).items():
            reader.error(f"{rpath}.{key}", problem, table.get(key))
        if rule in rules:
            reader.error(rpath, "the same rule is given twice")
        rules.append(rule)
    return rules


def plain(rule: ReplyRule) -> dict[str, Any]:
    target = rule.enroll_in.name if rule.action == A.ENROLL else rule.user.get_username()
    return {"category": rule.category, "action": rule.action, "target": target, "after_seconds": rule.after_seconds}


def reply_rules_set(sequence: Sequence, wanted: list[dict[str, Any]]) -> list[str]:
    """Make the sequence's rules these, in this order; the caller holds a transaction. A rule that stays keeps its
    row (and so what it did, and the replies it already acted on); what changed, one line each."""
    current = list(ReplyRule.objects.filter(sequence=sequence).select_related("enroll_in", "user"))
    if [plain(r) for r in current] == wanted:
        return []
    kept: dict[int, ReplyRule] = {}
    for index, rule in enumerate(wanted):
        match = next((r for r in current if plain(r) == rule and r.pk not in {k.pk for k in kept.values()}), None)
        if match is not None:
            kept[index] = match
    lines = [f"on_reply: removed {rule_words(r)}" for r in current if r not in kept.values()]
    ReplyRule.objects.filter(sequence=sequence).exclude(pk__in=[r.pk for r in kept.values()]).delete()
    for rule in kept.values():  # out of the way of the new positions first (unique per sequence)
        ReplyRule.objects.filter(pk=rule.pk).update(position=rule.position + 10_000)
    users = get_user_model().objects
    for index, rule in enumerate(wanted, 1):
        if (row := kept.get(index - 1)) is not None:
            ReplyRule.objects.filter(pk=row.pk).update(position=index)
            continue
        row = ReplyRule.objects.create(
            sequence=sequence, position=index, category=rule["category"], action=rule["action"],
            after_seconds=rule["after_seconds"],
            # The target by its name in the rule's own workspace (another may name one the same).
            enroll_in=(Sequence._base_manager.get(workspace_id=sequence.workspace_id, name=rule["target"])
                       if rule["action"] == A.ENROLL else None),
            user=users.get(username=rule["target"]) if rule["action"] != A.ENROLL else None)
        lines.append(f"on_reply: added {rule_words(row)}")
    return lines


def export(sequence: Sequence) -> list[dict[str, Any]]:
    tables = []
    for rule in ReplyRule.objects.filter(sequence=sequence).select_related("enroll_in", "user"):
        values = plain(rule)
        table = {"category": values["category"], values["action"]: values["target"]}
        if rule.action == A.ENROLL:
            table["after"] = duration_text(rule.after_seconds)
        tables.append(table)
    return tables


PART = SequencePart(key=KEY, parse=parse, apply=reply_rules_set, export=export)


def _locked_plain(sequence_id: int) -> tuple[Sequence, list[dict[str, Any]]]:
    sequence = Sequence.objects.select_for_update().get(pk=sequence_id)
    rules = ReplyRule.objects.filter(sequence=sequence).select_related("enroll_in", "user")
    return sequence, [plain(rule) for rule in rules]


def reply_rule_add(*, sequence_id: int, rule: dict[str, Any], actor: str) -> list[str]:
    """Add one rule at the end (the sequence's page); ServiceError in words when it cannot be; operator log."""
    with transaction.atomic(durable=True):
        sequence, rules = _locked_plain(sequence_id)
        names = set(Sequence._base_manager.filter(workspace_id=sequence.workspace_id).values_list("name", flat=True))
        if problems := rule_problems(rule, own=sequence.name, sequences=names):
            raise ServiceError("; ".join(problems.values()))
        if rule in rules:
            raise ServiceError("the sequence has this rule already")
        lines = reply_rules_set(sequence, [*rules, rule])
        operator_log(actor=actor, action="reply_rule_add", target=f"sequence {sequence.name}", kind=T.SEQUENCE,
                     target_id=sequence.pk, result={"changes": lines})
    return lines


def reply_rule_remove(*, sequence_id: int, position: int, actor: str) -> list[str]:
    """Remove the rule at this position; the rules after it move up; operator log."""
    with transaction.atomic(durable=True):
        sequence, rules = _locked_plain(sequence_id)
        if not 1 <= position <= len(rules):
            raise ServiceError(f"the sequence has no rule {position}")
        lines = reply_rules_set(sequence, rules[:position - 1] + rules[position:])
        operator_log(actor=actor, action="reply_rule_remove", target=f"sequence {sequence.name}", kind=T.SEQUENCE,
                     target_id=sequence.pk, result={"changes": lines})
    return lines
