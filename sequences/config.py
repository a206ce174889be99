"""Mailboxes and sequences as code: parse and validate a TOML file, then apply it in one transaction.

Validation runs over the whole file before anything is written, and every
error names the key path (and the line where the key can be found), so a bad
file changes nothing.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from datetime import time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from mailboxes.models import Mailbox

from .messages import step_validate
from .models import Sequence, Step
from .window import parse_days

DURATION = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
SECURITY = ("none", "starttls", "tls")


class ConfigError(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


def parse_duration(value: Any) -> int:
    """'90s', '15m', '3d', '1w' or a number of seconds -> seconds."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = DURATION.match(str(value)) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"{value!r} is not a duration (use e.g. \"0s\", \"90s\", \"15m\", \"3d\")")
    return int(match.group(1)) * UNITS[match.group(2)]


@dataclass
class Plan:
    mailboxes: list[dict[str, Any]] = field(default_factory=list)
    sequences: list[dict[str, Any]] = field(default_factory=list)


class _Reader:
    """Collects errors with key paths instead of stopping at the first."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.errors: list[str] = []

    def where(self, path: str, value: Any = None) -> str:
        """The key path, with the line of the first `key =` that also shows the bad value."""
        key = path.rsplit(".", 1)[-1].split("[")[0]
        pattern = re.compile(rf"(^|[{{,])\s*{re.escape(key)}\s*=")
        hits = [n for n, line in enumerate(self.lines, 1) if pattern.search(line)]
        if value is not None:
            shown = [n for n in hits if str(value) in self.lines[n - 1]]
            hits = shown or hits
        return f"{path} (line {hits[0]})" if hits else path

    def error(self, path: str, message: str, value: Any = None) -> None:
        self.errors.append(f"{self.where(path, value)}: {message}")

    def get(self, table: dict, path: str, key: str, kind: type | tuple, default: Any = ..., *, required: bool = False):
        if key not in table:
            if required:
                self.error(f"{path}.{key}", "is required")
            return None if default is ... else default
        value = table[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.error(f"{path}.{key}", f"must be {names}, got {type(value).__name__}", value)
            return None if default is ... else default
        return value

    def unknown(self, table: dict, path: str, allowed: set[str]) -> None:
        for key in table:
            if key not in allowed:
                self.error(f"{path}.{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _time(reader: _Reader, path: str, value: str | None) -> time | None:
    if value is None:
        return None
    try:
        return time.fromisoformat(value)
    except ValueError:
        reader.error(path, f"{value!r} is not a time (HH:MM)")
        return None


def parse(text: str) -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"not valid TOML: {exc}"]) from None
    reader = _Reader(text)
    reader.unknown(data, "", {"mailbox", "sequence"})
    plan = Plan()
    known_mailboxes = set(Mailbox.objects.values_list("name", flat=True))
    for index, table in enumerate(data.get("mailbox", [])):
        entry = _parse_mailbox(reader, f"mailbox[{index}]", table)
        if entry:
            plan.mailboxes.append(entry)
            known_mailboxes.add(entry["name"])
    for index, table in enumerate(data.get("sequence", [])):
        entry = _parse_sequence(reader, f"sequence[{index}]", table, known_mailboxes)
        if entry:
            plan.sequences.append(entry)
    names = [m["name"] for m in plan.mailboxes]
    for name in {n for n in names if names.count(n) > 1}:
        reader.error("mailbox.name", f"{name!r} appears more than once")
    names = [s["name"] for s in plan.sequences]
    for name in {n for n in names if names.count(n) > 1}:
        reader.error("sequence.name", f"{name!r} appears more than once")
    if reader.errors:
        raise ConfigError(reader.errors)
    return plan


def _parse_mailbox(reader: _Reader, path: str, table: Any) -> dict[str, Any] | None:
    if not isinstance(table, dict):
        reader.error(path, "must be a table")
        return None
    if "paused" in table:
        # A pause is an operator's action with a record (what it canceled), not configuration.
        reader.error(f"{path}.paused", "not a configuration key: pause a mailbox with `manage.py pause mailbox NAME` "
                                       "or from the mailboxes page")
        table = {k: v for k, v in table.items() if k != "paused"}
    reader.unknown(table, path, {"name", "address", "display_name", "smtp", "daily_cap", "window", "imap",
                                 "transport", "drill_target"})
    out: dict[str, Any] = {}
    out["name"] = reader.get(table, path, "name", str, required=True)
    if out["name"] is not None and not re.fullmatch(r"[-a-zA-Z0-9_]+", out["name"]):
        reader.error(f"{path}.name", "use letters, digits, '-' and '_' only")
    address = reader.get(table, path, "address", str, required=True)
    if address is not None:
        try:
            validate_email(address)
        except ValidationError:
            reader.error(f"{path}.address", f"{address!r} is not an email address")
    out["address"] = address
    out["display_name"] = reader.get(table, path, "display_name", str, "")
    out["daily_cap"] = reader.get(table, path, "daily_cap", int, 200)
    out["is_drill_target"] = reader.get(table, path, "drill_target", bool, False)

    smtp = reader.get(table, path, "smtp", dict, {})
    reader.unknown(smtp, f"{path}.smtp", {"host", "port", "username", "password_env", "security"})
    out["smtp_host"] = reader.get(smtp, f"{path}.smtp", "host", str, "127.0.0.1")
    out["smtp_port"] = reader.get(smtp, f"{path}.smtp", "port", int, 2525)
    out["smtp_username"] = reader.get(smtp, f"{path}.smtp", "username", str, "")
    out["smtp_password_env"] = reader.get(smtp, f"{path}.smtp", "password_env", str, "")
    out["smtp_security"] = reader.get(smtp, f"{path}.smtp", "security", str, "none")
    if out["smtp_security"] not in SECURITY:
        reader.error(f"{path}.smtp.security", f"must be one of {', '.join(SECURITY)}")
    if "password" in smtp:
        reader.error(f"{path}.smtp.password", "passwords are never stored; name an env var with password_env")

    window = reader.get(table, path, "window", dict, {})
    reader.unknown(window, f"{path}.window", {"days", "start", "end", "timezone"})
    out["window_days"] = reader.get(window, f"{path}.window", "days", str, "")
    try:
        parse_days(out["window_days"] or "")
    except ValueError as exc:
        reader.error(f"{path}.window.days", str(exc), out["window_days"])
    out["window_start"] = _time(reader, f"{path}.window.start", reader.get(window, f"{path}.window", "start", str))
    out["window_end"] = _time(reader, f"{path}.window.end", reader.get(window, f"{path}.window", "end", str))
    out["window_timezone"] = reader.get(window, f"{path}.window", "timezone", str, "UTC")
    try:
        ZoneInfo(out["window_timezone"] or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        reader.error(f"{path}.window.timezone", f"unknown time zone {out['window_timezone']!r}")

    imap = reader.get(table, path, "imap", dict, {})
    reader.unknown(imap, f"{path}.imap", {"host", "port", "username", "password_env", "security", "folders"})
    if imap:
        out["imap_host"] = reader.get(imap, f"{path}.imap", "host", str, required=True) or ""
        out["imap_port"] = reader.get(imap, f"{path}.imap", "port", int, 143)
        out["imap_username"] = reader.get(imap, f"{path}.imap", "username", str, "")
        out["imap_password_env"] = reader.get(imap, f"{path}.imap", "password_env", str, "")
        out["imap_security"] = reader.get(imap, f"{path}.imap", "security", str, "none")
        if out["imap_security"] not in SECURITY:
            reader.error(f"{path}.imap.security", f"must be one of {', '.join(SECURITY)}")
        folders = reader.get(imap, f"{path}.imap", "folders", list, ["INBOX"])
        if not all(isinstance(f, str) and f for f in folders):
            reader.error(f"{path}.imap.folders", "must be a list of folder names")
        out["imap_folders"] = folders
    transport = reader.get(table, path, "transport", dict, {})
    reader.unknown(transport, f"{path}.transport", {"kind", "esp", "api_key_env", "api_url", "schedule_ahead_minutes"})
    if transport:
        out["transport_kind"] = reader.get(transport, f"{path}.transport", "kind", str, "smtp")
        if out["transport_kind"] not in ("smtp", "anymail"):
            reader.error(f"{path}.transport.kind", "must be smtp or anymail")
        out["esp_name"] = reader.get(transport, f"{path}.transport", "esp", str, "")
        if out["transport_kind"] == "anymail" and not out["esp_name"]:
            reader.error(f"{path}.transport.esp", "is required for kind = \"anymail\"")
        out["esp_api_key_env"] = reader.get(transport, f"{path}.transport", "api_key_env", str, "")
        out["esp_api_url"] = reader.get(transport, f"{path}.transport", "api_url", str, "")
        out["esp_schedule_ahead_minutes"] = reader.get(transport, f"{path}.transport", "schedule_ahead_minutes", int, 0)
    return out


def _parse_sequence(reader: _Reader, path: str, table: Any, mailboxes: set[str]) -> dict[str, Any] | None:
    if not isinstance(table, dict):
        reader.error(path, "must be a table")
        return None
    reader.unknown(table, path, {"name", "mailbox", "step"})
    out: dict[str, Any] = {"name": reader.get(table, path, "name", str, required=True)}
    out["mailbox"] = reader.get(table, path, "mailbox", str, required=True)
    if out["mailbox"] is not None and out["mailbox"] not in mailboxes:
        reader.error(f"{path}.mailbox", f"no mailbox named {out['mailbox']!r} (in this file or the database)",
                     out["mailbox"])
    steps = reader.get(table, path, "step", list, [])
    if not steps:
        reader.error(f"{path}.step", "a sequence needs at least one [[sequence.step]]")
    out["steps"] = []
    for index, step in enumerate(steps, 1):
        spath = f"{path}.step[{index - 1}]"
        if not isinstance(step, dict):
            reader.error(spath, "must be a table")
            continue
        reader.unknown(step, spath, {"subject", "body", "wait", "thread"})
        subject = reader.get(step, spath, "subject", str, "")
        body = reader.get(step, spath, "body", str, required=True)
        # The same check as every other path that saves a step (admin, any later UI or API).
        for key, problems in step_validate(subject=subject or "", body=body or "", position=index).items():
            for problem in problems:
                reader.error(f"{spath}.{key}", problem, step.get(key))
        wait = step.get("wait", "0s")
        try:
            wait_seconds = parse_duration(wait)
        except ValueError as exc:
            reader.error(f"{spath}.wait", str(exc), wait)
            wait_seconds = 0
        thread = reader.get(step, spath, "thread", bool, index > 1)
        out["steps"].append({"position": index, "subject": subject or "", "body": body or "",
                             "wait_seconds": wait_seconds, "thread": thread})
    return out


@dataclass
class ApplyResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)


def config_apply(plan: Plan) -> ApplyResult:
    """Create or update mailboxes and sequences by name; one transaction, all or nothing."""
    result = ApplyResult()
    with transaction.atomic():
        for entry in plan.mailboxes:
            fields = {k: v for k, v in entry.items() if k != "name"}
            _, created = Mailbox.objects.update_or_create(name=entry["name"], defaults=fields)
            (result.created if created else result.updated).append(f"mailbox {entry['name']}")
        for entry in plan.sequences:
            mailbox = Mailbox.objects.get(name=entry["mailbox"])
            sequence, created = Sequence.objects.update_or_create(name=entry["name"], defaults={"mailbox": mailbox})
            for step in entry["steps"]:
                Step.objects.update_or_create(sequence=sequence, position=step["position"], defaults=step)
            extra = Step.objects.filter(sequence=sequence, position__gt=len(entry["steps"]))
            if extra.filter(jobs__isnull=False).exists():
                raise ConfigError([
                    f"sequence {entry['name']!r}: steps beyond #{len(entry['steps'])} already have send jobs; "
                    "they cannot be removed (pause the sequence and create a new one)"
                ])
            extra.delete()
            (result.created if created else result.updated).append(f"sequence {entry['name']}")
    return result
