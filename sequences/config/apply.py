"""Apply a parsed Plan: create mailboxes and sequences by name, or change only the keys the file names, in one
transaction; every change is listed for the operator."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import time
from typing import Any

from django.db import transaction

from mailboxes.bound import SECRETS, bind
from mailboxes.models import MAILBOX_NAME_TAKEN, Mailbox
from mailboxes.secrets import ENV_FIELDS

from ..models import Sequence, Step, StepVariant
from ..reasons import Reason
from ..secret_names import mailbox_name_problem
from ..services.mailbox_health import held_release
from ..services.mailbox_setup import VIEW_FIELDS
from ..states import sequence_move
from .parse import Plan
from .parts import PARTS
from .validate import ConfigError


@dataclass
class ApplyResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # "mailbox sales: daily_cap 200 -> 50", one per field


def _show(value: Any) -> str:
    return repr(value.strftime("%H:%M")) if isinstance(value, time) else repr(value)


def _update(obj: Any, values: dict[str, Any], names: set[str], what: str, result: ApplyResult) -> bool:
    """Set only the named fields that differ; note each change; save those fields. True when any changed."""
    changed = []
    for name in sorted(names):
        old, new = getattr(obj, name), values[name]
        if old != new:
            result.changes.append(f"{what}: {name} {_show(old)} -> {_show(new)}")
            setattr(obj, name, new)
            changed.append(name)
    if changed:
        obj.save(update_fields=changed)
    return bool(changed)


def _bind_named(mailbox: Mailbox, given: set[str]) -> None:
    """The file names a mailbox's variables afresh (on a machine an admin runs it on): each secret it names, and
    that no secret entered in the browser overrides, goes to the endpoint the file now gives (mailboxes.bound).
    A secret entered in the browser stays bound where it was entered."""
    before = dict(mailbox.secret_endpoints or {})
    for which, (sealed, env) in SECRETS.items():
        if env in given and not getattr(mailbox, sealed):
            bind(mailbox, which)
    if mailbox.secret_endpoints != before:
        mailbox.save(update_fields=["secret_endpoints"])


def _pool_update(sequence: Sequence, names: list[str], what: str, result: ApplyResult, *, created: bool) -> bool:
    """Set a sequence's pool of mailboxes; a change applies to new enrollments only (each keeps its mailbox)."""
    old = sorted(sequence.pool.values_list("name", flat=True))
    if old == sorted(names):
        return False
    sequence.pool.set(Mailbox.objects.filter(name__in=names))
    if not created:
        result.changes.append(f"{what}: mailboxes {old!r} -> {sorted(names)!r} (new enrollments only)")
    return not created


def _status_update(sequence: Sequence, status: str | None, what: str, result: ApplyResult) -> bool:
    """`status = "active"` launches a draft (through the sequence state machine); a launched one stays launched."""
    if status is None or status == sequence.status:
        return False
    if status == Sequence.Status.DRAFT:
        raise ConfigError([f"{what}: it was launched already ({sequence.get_status_display().lower()}) and cannot "
                           "become a draft again; pause it instead"])
    if sequence.status == Sequence.Status.DRAFT:
        sequence_move(sequence=sequence, to=Sequence.Status.ACTIVE, actor="load_sequences")
        result.changes.append(f"{what}: launched (draft -> active)")
        return True
    return False  # paused: a file does not resume it (its page or `manage.py resume` does)


def _variants_update(step: Step, variants: list[dict[str, Any]], what: str, result: ApplyResult, *,
                     created: bool) -> bool:
    """A step's A/B variants by name: add the new ones, change the named keys of the others, remove those the file
    no longer names and that no job carries (a variant with emails stays: stop it on the step's page)."""
    existing = {v.name: v for v in StepVariant.objects.filter(step=step)}
    changed = False
    for entry in variants:
        current = existing.pop(entry["name"], None)
        if current is None:
            StepVariant.objects.create(step=step, **entry)
            if not created:
                result.changes.append(f"{what}: variant {entry['name']} added")
                changed = True
        else:
            changed |= _update(current, entry, {"subject", "body", "weight"}, f"{what} variant {entry['name']}",
                               result)
    for name, gone in existing.items():
        if gone.jobs.exists():
            raise ConfigError([f"{what}: variant {name!r} has emails and cannot be removed; stop it on the "
                               "step's page instead, and keep it in the file"])
        gone.delete()
        result.changes.append(f"{what}: variant {name} removed")
        changed = True
    return changed


def config_apply(plan: Plan) -> ApplyResult:
    """Create mailboxes and sequences by name, or change only the keys the file names; one transaction. The plan
    comes from `parse`, which refused it where no workspace was chosen."""
    result = ApplyResult()
    with transaction.atomic():
        if problems := [f"mailbox {entry['name']}: {problem}" for entry in plan.mailboxes for env in ENV_FIELDS
                        if (problem := mailbox_name_problem(entry.get(env) or ""))]:
            raise ConfigError(problems)
        # A mailbox's name is the install's (metrics, health and logs name it): one another workspace uses is
        # refused, never overwritten, in words that say no more than that it is taken. A sequence's name is its
        # workspace's: the file's names are found, or made, in the workspace it is loaded in.
        names = [e["name"] for e in plan.mailboxes]
        taken = (set(Mailbox._base_manager.filter(name__in=names).values_list("name", flat=True))
                 - set(Mailbox.objects.filter(name__in=names).values_list("name", flat=True)))
        if taken:
            raise ConfigError([f"mailbox {name}: {MAILBOX_NAME_TAKEN}" for name in sorted(taken)])
        for entry in plan.mailboxes:
            what = f"mailbox {entry['name']}"
            fields = {k: v for k, v in entry.items() if k not in ("name", "given")}
            mailbox = Mailbox.objects.select_for_update().filter(name=entry["name"]).first()
            if mailbox is None:
                Mailbox.objects.create(name=entry["name"], **fields)
                result.created.append(what)
                continue
            before = {name: getattr(mailbox, name) for name in VIEW_FIELDS}
            if _update(mailbox, fields, entry["given"], what, result):
                result.updated.append(what)
            else:
                result.unchanged.append(what)
            _bind_named(mailbox, entry["given"])
            if any(getattr(mailbox, name) != value for name, value in before.items()):
                held_release(mailbox=mailbox, reason=Reason.CONFIG_APPLIED)  # what it held for its view goes again
        applied: list[tuple[Sequence, dict[str, Any], bool]] = []
        for entry in plan.sequences:
            what = f"sequence {entry['name']}"
            mailbox = Mailbox.objects.get(name=entry["mailbox"])
            sequence = Sequence.objects.select_for_update().filter(name=entry["name"]).first()
            created = sequence is None
            changed = False
            if created:
                sequence = Sequence.objects.create(name=entry["name"], mailbox=mailbox,
                                                   stop_on_reply=entry.get("stop_on_reply") or "person",
                                                   unsubscribe_style=entry.get("unsubscribe_style") or "headers",
                                                   booking_url=entry.get("booking_url") or "",
                                                   **({"crossed_note": entry["crossed_note"]}
                                                      if entry.get("crossed_note") else {}),
                                                   status=entry.get("status") or Sequence.Status.ACTIVE)
            else:
                changed |= _status_update(sequence, entry.get("status"), what, result)
                if entry.get("stop_on_reply") and _update(sequence, entry, {"stop_on_reply"}, what, result):
                    changed = True
                if entry.get("unsubscribe_style") and _update(sequence, entry, {"unsubscribe_style"}, what, result):
                    changed = True
                # Given, it is set ("" removes it); a file without the key leaves it as it is.
                if entry.get("booking_url") is not None and _update(sequence, entry, {"booking_url"}, what, result):
                    changed = True
                if entry.get("crossed_note") and _update(sequence, entry, {"crossed_note"}, what, result):
                    changed = True
            if not created and sequence.mailbox_id != mailbox.pk:
                result.changes.append(f"{what}: mailbox {sequence.mailbox.name!r} -> {mailbox.name!r}")
                sequence.mailbox = mailbox
                sequence.save(update_fields=["mailbox"])
                changed = True
            changed |= _pool_update(sequence, entry["pool"], what, result, created=created)
            existing = {s.position: s for s in Step.objects.filter(sequence=sequence)}
            for step in entry["steps"]:
                values = {k: v for k, v in step.items() if k not in ("given", "variants")}
                current = existing.get(step["position"])
                if current is None:
                    current = Step.objects.create(sequence=sequence, **values)
                    if not created:
                        result.changes.append(f"{what}: step {step['position']} added")
                        changed = True
                else:
                    changed |= _update(current, values, step["given"], f"{what} step {step['position']}", result)
                if step["variants"]:  # a file without variants for a step leaves the step's variants as they are
                    changed |= _variants_update(current, step["variants"], f"{what} step {step['position']}",
                                                result, created=created)
            extra = Step.objects.filter(sequence=sequence, position__gt=len(entry["steps"]))
            if extra.filter(jobs__isnull=False).exists():
                raise ConfigError([
                    f"sequence {entry['name']!r}: steps beyond #{len(entry['steps'])} already have send jobs; "
                    "they cannot be removed (pause the sequence and create a new one)"
                ])
            for position in extra.values_list("position", flat=True):
                result.changes.append(f"{what}: step {position} removed")
                changed = True
            extra.delete()
            applied.append((sequence, entry, created))
            if created:
                result.created.append(what)
            else:
                (result.updated if changed else result.unchanged).append(what)
        for sequence, entry, created in applied:  # keys kept by apps above, once every sequence exists
            _parts_apply(sequence, entry, result, created=created)
    return result


def _parts_apply(sequence: Sequence, entry: dict[str, Any], result: ApplyResult, *, created: bool) -> None:
    what = f"sequence {entry['name']}"
    for key, value in entry.get("parts", {}).items():
        lines = PARTS[key].apply(sequence, value)
        if lines and not created:
            result.changes += [f"{what}: {line}" for line in lines]
            if what in result.unchanged:
                result.unchanged.remove(what)
                result.updated.append(what)
