"""Mailboxes and sequences as code: TOML text -> plain values (a Plan), every key checked as it is read.

Durations are read here too ("90s", "3 days", "1 day 6 hours"), with their shortest exact spelling for export.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import time
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from mailboxes import settings_schema
from mailboxes.models import Mailbox
from mailboxes.secrets import mailbox_config_problems
from mailboxes.settings_schema import Kind, Setting
from mailboxes.tls import mailbox_connection_problems
from workspaces.current import workspace_named
from workspaces.scoping import scoped_workspace_id

from ..booking_token import booking_url_problem
from ..crossing import crossed_note_problem
from ..messages import step_validate
from ..models import Sequence
from ..window import RECIPIENT, parse_days, zone_problem
from .auth import parse_oauth2
from .durations import parse_duration
from .parts import PARTS
from .validate import ConfigError, Reader, check_lengths, check_ranges, known_esps


@dataclass
class Plan:
    mailboxes: list[dict[str, Any]] = field(default_factory=list)
    sequences: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# Read only to be refused (mailboxes.secrets.mailbox_config_problems): an ESP's API URL is fixed, no setting.
REFUSED_KEYS: dict[str, tuple[str, ...]] = {"esp_api_url": ("transport", "api_url")}
# Tables a reader of their own reads: auth = "oauth2" and its [oauth2] table (sequences.config.auth).
OWN_READER = {"auth", "oauth2"}
# How a file writes each kind of setting (a duration is read by parse_duration, whatever its type).
TOML_TYPES: dict[Kind, type | tuple[type, ...]] = {
    Kind.TEXT: str, Kind.EMAIL: str, Kind.URL: str, Kind.SECRET_ENV: str, Kind.CHOICE: str, Kind.WEEKDAYS: str,
    Kind.TIME: str, Kind.INT: int, Kind.PERCENT: (int, float), Kind.BOOL: bool, Kind.FOLDERS: list}


def mailbox_keys() -> dict[str, tuple[str, ...]]:
    """Each mailbox field and the TOML key that names it (mailboxes.settings_schema): an existing mailbox changes
    only in the keys a file names."""
    return {**{s.field: s.toml for s in settings_schema.in_toml() if s.field != "name"}, **REFUSED_KEYS}


MAILBOX_KEYS = mailbox_keys()
STEP_KEYS = {"subject": "subject", "body": "body", "wait_seconds": "wait", "thread": "thread"}
STATUSES = ("draft", "active")


def _named(table: dict, keys: tuple[str, ...]) -> bool:
    for key in keys:
        if not isinstance(table, dict) or key not in table:
            return False
        table = table[key]
    return True


def _time(reader: Reader, path: str, value: str | None) -> time | None:
    if value is None:
        return None
    try:
        return time.fromisoformat(value)
    except ValueError:
        reader.error(path, f"{value!r} is not a time (HH:MM)")
        return None


def config_workspace_chosen() -> None:
    """A file finds its mailboxes and sequences by name in one workspace: the command's (`--workspace`), or the
    install's only one. ConfigError in words where there are several and none was named."""
    if scoped_workspace_id() is None:
        try:
            workspace_named(None)
        except LookupError as exc:
            raise ConfigError([str(exc)]) from None


def parse(text: str) -> Plan:
    config_workspace_chosen()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"not valid TOML: {exc}"]) from None
    except RecursionError:  # tomllib reads nested arrays and tables by recursion
        raise ConfigError(["not readable TOML: arrays or tables nested too deeply"]) from None
    reader = Reader(text)
    reader.unknown(data, "", {"mailbox", "sequence"})
    plan = Plan()
    known_mailboxes = set(Mailbox.objects.values_list("name", flat=True))
    for index, table in enumerate(data.get("mailbox", [])):
        entry = _parse_mailbox(reader, f"mailbox[{index}]", table)
        if entry:
            check_lengths(reader, f"mailbox[{index}]", entry, Mailbox, MAILBOX_KEYS)
            plan.mailboxes.append(entry)
            known_mailboxes.add(entry["name"])
    for index, table in enumerate(data.get("sequence", [])):
        entry = _parse_sequence(reader, f"sequence[{index}]", table, known_mailboxes)
        if entry:
            check_lengths(reader, f"sequence[{index}]", entry, Sequence, {})
            plan.sequences.append(entry)
    known_sequences = set(Sequence.objects.values_list("name", flat=True)) | {e["name"] for e in plan.sequences}
    for entry in plan.sequences:
        entry["parts"] = {key: PARTS[key].parse(reader, f"{entry['path']}.{key}", value, entry["name"],
                                                known_sequences) for key, value in entry["parts"].items()}
    _follow_ups_need_a_reply_view(reader, plan)
    for kind, entries in (("mailbox", plan.mailboxes), ("sequence", plan.sequences)):
        counts = Counter(e["name"] for e in entries)
        for name in sorted(n for n, c in counts.items() if c > 1 and n is not None):
            reader.error(f"{kind}.name", f"{name!r} appears more than once")
    if reader.errors:
        raise ConfigError(reader.errors)
    plan.warnings = reader.warnings
    return plan


def _follow_ups_need_a_reply_view(reader: Reader, plan: Plan) -> None:
    """A sequence with follow-ups sends from mailboxes that read their replies, or that say they send follow-ups
    without reading them (`follow_ups_without_reply_view`): never blind by default."""
    views = {m.name: (bool(m.imap_host), m.follow_ups_without_reply_view) for m in Mailbox.objects.all()}
    for m in plan.mailboxes:  # an existing mailbox changes only in the keys the file names
        reads, allowed = views.get(m["name"], (False, False))
        views[m["name"]] = (bool(m.get("imap_host")) if "imap_host" in m["given"] else reads,
                            m["follow_ups_without_reply_view"] if "follow_ups_without_reply_view" in m["given"]
                            else allowed)
    for index, sequence in enumerate(plan.sequences):
        if len(sequence.get("steps") or []) < 2:
            continue
        for name in sequence.get("pool") or [sequence.get("mailbox")]:
            reads, allowed = views.get(name, (True, True))
            if not reads and not allowed:
                reader.error(f"sequence[{index}].mailbox",
                             f"mailbox {name!r} reads no replies (no [mailbox.imap]), so the follow-ups of this "
                             "sequence could leave after a reply; give it IMAP settings, or set "
                             "follow_ups_without_reply_view = true on it to send them anyway", name)


def _parse_mailbox(reader: Reader, path: str, table: Any) -> dict[str, Any] | None:
    """A [[mailbox]]: each setting of mailboxes.settings_schema read as its kind says, then the rules that span
    several (OAuth2's table, the window's two ends, the secrets' variables, a login in clear text)."""
    if not isinstance(table, dict):
        reader.error(path, "must be a table")
        return None
    if "paused" in table:
        # A pause is an operator's action with a record (what it canceled), not configuration.
        reader.error(f"{path}.paused", "not a configuration key: pause a mailbox with `manage.py pause mailbox NAME` "
                                       "or from the mailboxes page")
        table = {k: v for k, v in table.items() if k != "paused"}
    reader.unknown(table, path, {s.toml[0] for s in settings_schema.in_toml()})
    out: dict[str, Any] = {}
    tables = _settings_read(reader, path, table, out)
    for field_name, (section, key) in REFUSED_KEYS.items():  # read to be refused with words of their own below
        if tables.get(section):
            out[field_name] = reader.get(tables[section], f"{path}.{section}", key, str, "")
    if "password" in (tables.get("smtp") or {}):
        reader.error(f"{path}.smtp.password", "passwords are never stored; name an env var with password_env")
    parse_oauth2(reader, path, table, out)
    check_ranges(reader, path, out)
    out["given"] = {name for name, keys in mailbox_keys().items() if _named(table, keys)}
    for key, value, problem in mailbox_config_problems(out):
        reader.error(f"{path}.{key}", problem, value)
    for field_name, problem in mailbox_connection_problems(out).items():
        reader.error(f"{path}.{'.'.join(MAILBOX_KEYS[field_name])}", problem, out[field_name])
    return out


def _settings_read(reader: Reader, path: str, table: dict, out: dict[str, Any]) -> dict[str, dict | None]:
    """Every setting a [[mailbox]] table gives, into `out`, in the order of mailboxes.settings_schema; the tables
    it read (None: left out)."""
    tables: dict[str, dict | None] = {"": table}
    for setting in settings_schema.in_toml():
        if setting.toml[0] in OWN_READER:
            continue
        if setting.section not in tables:
            tables[setting.section] = _mailbox_table(reader, path, table, setting.section)
        part = tables[setting.section]
        if _optional(setting.section) and not part:
            continue  # [mailbox.imap] or [mailbox.transport] left out: the file says nothing of them
        if part is None:
            out[setting.field] = setting.default  # left out: the defaults (no ramp-up)
            continue
        where = f"{path}.{setting.section}" if setting.section else path
        out[setting.field] = _setting_read(reader, where, part, setting)
        if check := MAILBOX_CHECKS.get(setting.field):
            check(reader, f"{where}.{setting.key}", out, part)
    return tables


def _mailbox_table(reader: Reader, path: str, table: dict, section: str) -> dict | None:
    """A table of a [[mailbox]] (`smtp = {...}`, `[mailbox.window]`): None when the file leaves it out."""
    part = reader.get(table, path, section, dict, None)
    if part is not None:
        reader.unknown(part, f"{path}.{section}", {s.key for s in settings_schema.in_toml() if s.section == section}
                       | {keys[-1] for keys in REFUSED_KEYS.values() if keys[0] == section})
    return part


def _setting_read(reader: Reader, where: str, part: dict, setting: Setting) -> Any:
    """One setting from its table, as its kind says; a value refused (with its words) leaves the default."""
    if setting.kind in (Kind.DURATION, Kind.DAYS):
        return _duration_read(reader, f"{where}.{setting.key}", part, setting)
    value = reader.get(part, where, setting.key, TOML_TYPES[setting.kind],
                       ... if setting.required else setting.default, required=setting.required)
    if value is None and setting.blank:
        value = setting.default  # a required key left out: "" for an [imap] without a host (the name stays None)
    if setting.kind is Kind.TIME:
        return _time(reader, f"{where}.{setting.key}", value)
    if problem := _setting_problem(setting, value):
        reader.error(f"{where}.{setting.key}", problem, None if setting.kind is Kind.FOLDERS else value)
    return float(value) if setting.kind is Kind.PERCENT else value


def _optional(section: str) -> bool:
    """A table whose absence says nothing of its settings ([mailbox.imap], [mailbox.transport])."""
    return section in settings_schema.SECTIONS and settings_schema.SECTIONS[section].optional


def _setting_problem(setting: Setting, value: Any) -> str | None:
    """What is wrong with a value of the right type, in words (its bounds, its choices, its pattern)."""
    if value is None:
        return None
    if setting.bounds is not None:
        return setting.bounds.problem(value)
    if setting.kind is Kind.CHOICE and value not in setting.values:
        values = setting.values
        return f"must be {values[0]} or {values[1]}" if len(values) == 2 else f"must be one of {', '.join(values)}"
    if setting.kind is Kind.EMAIL:
        try:
            validate_email(value)
        except ValidationError:
            return f"{value!r} is not an email address"
    if setting.kind is Kind.WEEKDAYS:
        try:
            parse_days(value)
        except ValueError as exc:
            return str(exc)
    if setting.kind is Kind.FOLDERS and not all(isinstance(f, str) and f for f in value):
        return "must be a list of folder names"
    if setting.pattern and (value or not setting.blank) and not re.fullmatch(setting.pattern, value):
        return setting.pattern_words
    return None


def _duration_read(reader: Reader, key_path: str, part: dict, setting: Setting) -> int | None:
    """A duration ("90s", "15m", "3 days" or seconds); in whole days for Kind.DAYS. Absent or refused: the default."""
    if setting.key not in part:
        return setting.default
    value = part[setting.key]
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        reader.error(key_path, str(exc), value)
        return setting.default
    if setting.kind is Kind.DAYS:
        if seconds < 86400 or seconds % 86400:
            reader.error(key_path, f"{value!r} is not a whole number of days (e.g. \"7d\")", value)
        return seconds // 86400
    return seconds


# The rules of single settings that no kind says: (reader, key path, the values so far, the setting's table).
def _window_timezone(reader: Reader, key_path: str, out: dict[str, Any], part: dict) -> None:
    """An IANA zone, or "recipient": the window opens in each contact's own zone (fallback_timezone where a contact
    has none)."""
    zone = out["window_timezone"]
    if zone != RECIPIENT and zone_problem(zone or "UTC"):
        reader.error(key_path, f"{zone_problem(zone)}, or \"{RECIPIENT}\" for each contact's own zone")


def _window_fallback_timezone(reader: Reader, key_path: str, out: dict[str, Any], part: dict) -> None:
    zone = out["window_fallback_timezone"]
    if zone_problem(zone or "UTC"):
        reader.error(key_path, zone_problem(zone))
    elif "fallback_timezone" in part and out.get("window_timezone") != RECIPIENT:
        reader.warn(key_path, f"used only with timezone = \"{RECIPIENT}\"")


def _esp_name(reader: Reader, key_path: str, out: dict[str, Any], part: dict) -> None:
    """An ESP anymail has a backend for; required with kind = "anymail"."""
    esp = out["esp_name"]
    if out.get("transport_kind") == "anymail" and not esp:
        reader.error(key_path, "is required for kind = \"anymail\"")
    if esp and esp.lower() not in known_esps():
        reader.error(key_path, f"unknown ESP {esp!r} (known: {', '.join(sorted(known_esps()))})", esp)


MAILBOX_CHECKS: dict[str, Callable[[Reader, str, dict[str, Any], dict], None]] = {
    "window_timezone": _window_timezone, "window_fallback_timezone": _window_fallback_timezone,
    "esp_name": _esp_name,
}


def _sequence_mailboxes(reader: Reader, path: str, table: dict, known: set[str]) -> tuple[str | None, list[str]]:
    """`mailbox = "a"` (one mailbox) or `mailboxes = ["a", "b"]` (a pool to rotate over): (first, pool)."""
    if ("mailbox" in table) == ("mailboxes" in table):
        reader.error(f"{path}.mailbox", "name either `mailbox = \"NAME\"` or `mailboxes = [\"A\", \"B\"]` "
                                        "(a pool; each enrollment keeps the one it is given)")
        return None, []
    if "mailbox" in table:
        names = [reader.get(table, path, "mailbox", str)]
        key = "mailbox"
    else:
        names = reader.get(table, path, "mailboxes", list, [])
        key = "mailboxes"
        if not names:
            reader.error(f"{path}.mailboxes", "name at least one mailbox")
        elif not all(isinstance(n, str) for n in names):
            reader.error(f"{path}.mailboxes", "must be a list of mailbox names")
            return None, []
        elif len(set(names)) != len(names):
            reader.error(f"{path}.mailboxes", "names a mailbox more than once")
    for name in names:
        if name is not None and name not in known:
            reader.error(f"{path}.{key}", f"no mailbox named {name!r} (in this file or the database)", name)
    first = names[0] if names else None
    return first, (names if key == "mailboxes" else [])


def _parse_sequence(reader: Reader, path: str, table: Any, mailboxes: set[str]) -> dict[str, Any] | None:
    if not isinstance(table, dict):
        reader.error(path, "must be a table")
        return None
    reader.unknown(table, path, {"name", "mailbox", "mailboxes", "step", "stop_on_reply", "status",
                                 "unsubscribe_style", "booking_url", "crossed_note", *PARTS})
    out: dict[str, Any] = {"name": reader.get(table, path, "name", str, required=True)}
    # Keys kept by apps above (sequences.config.parts): read once every sequence's name is known.
    out["parts"] = {key: table[key] for key in PARTS if key in table}
    out["path"] = path
    # "draft": people may be enrolled, nothing is sent until it is launched; "active" (the default) sends. A file
    # launches a draft by saying "active"; it never makes a launched sequence a draft again.
    out["status"] = reader.get(table, path, "status", str, None)
    if out["status"] is not None and out["status"] not in STATUSES:
        reader.error(f"{path}.status", f"must be one of {', '.join(STATUSES)} (a sequence is paused on its page "
                                       "or with `manage.py pause`)", out["status"])
    # A reply stops the person everywhere; "domain" also stops everyone at the company (never a free-mail domain).
    out["stop_on_reply"] = reader.get(table, path, "stop_on_reply", str, None)
    if out["stop_on_reply"] is not None and out["stop_on_reply"] not in Sequence.StopOnReply.values:
        reader.error(f"{path}.stop_on_reply", f"must be one of {', '.join(Sequence.StopOnReply.values)}",
                     out["stop_on_reply"])
    # "headers" (the default): List-Unsubscribe one-click headers, which Gmail's and Yahoo's bulk-sender rules ask
    # for; "line": none, the link on the last line of the text, so Sieve vacation auto-replies come back.
    out["unsubscribe_style"] = reader.get(table, path, "unsubscribe_style", str, None)
    if out["unsubscribe_style"] is not None and out["unsubscribe_style"] not in Sequence.UnsubscribeStyle.values:
        reader.error(f"{path}.unsubscribe_style", f"must be one of {', '.join(Sequence.UnsubscribeStyle.values)}",
                     out["unsubscribe_style"])
    # The scheduling page a step links to with {{ booking_link }} (the person's token added); "" removes it.
    out["booking_url"] = reader.get(table, path, "booking_url", str, None)
    if out["booking_url"] is not None and (problem := booking_url_problem(out["booking_url"])):
        reader.error(f"{path}.booking_url", problem, out["booking_url"])
    # The note the replies page offers when a follow-up crossed a reply (sequences.crossing); absent: unchanged.
    out["crossed_note"] = reader.get(table, path, "crossed_note", str, None)
    if out["crossed_note"] is not None:
        out["crossed_note"] = out["crossed_note"].strip()
        if problem := crossed_note_problem(out["crossed_note"]):
            reader.error(f"{path}.crossed_note", problem, out["crossed_note"][:80])
    out["mailbox"], out["pool"] = _sequence_mailboxes(reader, path, table, mailboxes)
    steps = reader.get(table, path, "step", list, [])
    if not steps:
        reader.error(f"{path}.step", "a sequence needs at least one [[sequence.step]]")
    out["steps"] = []
    for index, step in enumerate(steps, 1):
        spath = f"{path}.step[{index - 1}]"
        if not isinstance(step, dict):
            reader.error(spath, "must be a table")
            continue
        reader.unknown(step, spath, {"subject", "body", "wait", "thread", "variants"})
        thread = reader.get(step, spath, "thread", bool, index > 1)
        variants = _parse_variants(reader, spath, step, index, thread)
        if variants:
            for key in ("subject", "body"):
                if key in step:
                    reader.error(f"{spath}.{key}", "a step with variants takes its subject and body from them: "
                                                   f"move this {key} into a [[sequence.step.variants]] table")
            subject = body = ""
        else:
            subject = reader.get(step, spath, "subject", str, "")
            body = reader.get(step, spath, "body", str, required=True)
            # The same check as every other path that saves a step (admin, any later UI or API).
            for key, problems in step_validate(subject=subject or "", body=body or "", position=index,
                                               thread=thread).items():
                for problem in problems:
                    reader.error(f"{spath}.{key}", problem, step.get(key))
        wait = step.get("wait", "0s")
        try:
            wait_seconds = parse_duration(wait)
        except ValueError as exc:
            reader.error(f"{spath}.wait", str(exc), wait)
            wait_seconds = 0
        out["steps"].append({"position": index, "subject": subject or "", "body": body or "",
                             "wait_seconds": wait_seconds, "thread": thread,
                             "given": {name for name, key in STEP_KEYS.items() if key in step},
                             "variants": variants})
    return out


VARIANT_KEYS = {"name", "subject", "body", "weight"}


def _parse_variants(reader: Reader, spath: str, step: dict, position: int, thread: bool) -> list[dict[str, Any]]:
    """A step's `[[sequence.step.variants]]`: each a name, a subject, a body and a weight (1 by default)."""
    tables = reader.get(step, spath, "variants", list, [])
    variants: list[dict[str, Any]] = []
    names: set[str] = set()
    for number, table in enumerate(tables):
        vpath = f"{spath}.variants[{number}]"
        if not isinstance(table, dict):
            reader.error(vpath, "must be a table")
            continue
        reader.unknown(table, vpath, VARIANT_KEYS)
        name = (reader.get(table, vpath, "name", str, required=True) or "").strip()
        if name and len(name) > 40:
            reader.error(f"{vpath}.name", "is longer than 40 characters", name)
        if name in names:
            reader.error(f"{vpath}.name", f"another variant of this step is also named {name!r}", name)
        names.add(name)
        subject = reader.get(table, vpath, "subject", str, "") or ""
        body = reader.get(table, vpath, "body", str, required=True) or ""
        weight = reader.get(table, vpath, "weight", int, 1)
        if weight is not None and weight < 1:
            reader.error(f"{vpath}.weight", "must be a whole number of at least 1 (its share of the people)",
                         weight)
        for key, problems in step_validate(subject=subject, body=body, position=position, thread=thread).items():
            for problem in problems:
                reader.error(f"{vpath}.{key}", problem, table.get(key))
        variants.append({"name": name, "subject": subject, "body": body, "weight": weight or 1})
    if len(variants) == 1:
        reader.error(f"{spath}.variants", "an A/B test needs at least two variants (or none: give the step a "
                                          "subject and body of its own)")
    return variants
