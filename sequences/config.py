"""Mailboxes and sequences as code: parse and validate a TOML file, then apply it in one transaction.

Validation runs over the whole file before anything is written, and every
error names the key path (and the line where the key can be found), so a bad
file changes nothing.
"""

from __future__ import annotations

import os
import pkgutil
import re
import tomllib
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from datetime import time
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from mailboxes.models import Mailbox
from mailboxes.secrets import mailbox_config_problems

from .config_auth import parse_oauth2
from .messages import step_validate
from .models import Sequence, Step
from .window import RECIPIENT, parse_days, zone_problem

DURATION = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# "3 days", "4 hours", "1 day 6 hours", "90 minutes": a number and a unit in words, one or more times.
DURATION_PART = re.compile(r"(\d+)\s*(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|[smhdw])\b", re.I)
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
    if match:
        return int(match.group(1)) * UNITS[match.group(2)]
    if isinstance(value, str) and value.strip():
        parts = DURATION_PART.findall(value)
        rest = DURATION_PART.sub("", value).replace(",", " ").replace(" and ", " ").strip()
        if parts and not rest:
            return sum(int(n) * UNITS[unit[0].lower()] for n, unit in parts)
    raise ValueError(f"{value!r} is not a duration (use e.g. \"0s\", \"90s\", \"15m\", \"3d\", \"3 days\", "
                     "\"4 hours\")")


@dataclass
class Plan:
    mailboxes: list[dict[str, Any]] = field(default_factory=list)
    sequences: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# Each mailbox field and the TOML key that names it: an existing mailbox changes only in the keys a file names.
MAILBOX_KEYS: dict[str, tuple[str, ...]] = {
    "address": ("address",), "display_name": ("display_name",), "daily_cap": ("daily_cap",),
    "is_drill_target": ("drill_target",), "ca_file": ("ca_file",),
    "smtp_host": ("smtp", "host"), "smtp_port": ("smtp", "port"), "smtp_username": ("smtp", "username"),
    "smtp_password_env": ("smtp", "password_env"), "smtp_security": ("smtp", "security"),
    "window_days": ("window", "days"), "window_start": ("window", "start"), "window_end": ("window", "end"),
    "window_timezone": ("window", "timezone"), "window_fallback_timezone": ("window", "fallback_timezone"),
    "imap_host": ("imap", "host"), "imap_port": ("imap", "port"), "imap_username": ("imap", "username"),
    "imap_password_env": ("imap", "password_env"), "imap_security": ("imap", "security"),
    "imap_folders": ("imap", "folders"),
    "transport_kind": ("transport", "kind"), "esp_name": ("transport", "esp"),
    "esp_api_key_env": ("transport", "api_key_env"), "esp_api_url": ("transport", "api_url"),
    "esp_schedule_ahead_minutes": ("transport", "schedule_ahead_minutes"),
    "auth": ("auth",), "oauth2_provider": ("oauth2", "provider"), "oauth2_token_url": ("oauth2", "token_url"),
    "oauth2_client_id": ("oauth2", "client_id"), "oauth2_client_secret_env": ("oauth2", "client_secret_env"),
    "oauth2_refresh_token_env": ("oauth2", "refresh_token_env"), "oauth2_scope": ("oauth2", "scope"),
    "guardrail_window_days": ("guardrail", "window"), "guardrail_bounce_rate": ("guardrail", "bounce_rate"),
    "guardrail_bounce_min_sends": ("guardrail", "bounce_min_sends"),
    "guardrail_complaint_rate": ("guardrail", "complaint_rate"),
    "guardrail_complaint_min_deliveries": ("guardrail", "complaint_min_deliveries"),
    "guardrail_silence_seconds": ("guardrail", "silence_after_resume"),
}
GUARDRAIL_KEYS = {"window", "bounce_rate", "bounce_min_sends", "complaint_rate", "complaint_min_deliveries",
                  "silence_after_resume"}
STEP_KEYS = {"subject": "subject", "body": "body", "wait_seconds": "wait", "thread": "thread"}


def _named(table: dict, keys: tuple[str, ...]) -> bool:
    for key in keys:
        if not isinstance(table, dict) or key not in table:
            return False
        table = table[key]
    return True


def known_esps() -> set[str]:
    """The ESPs anymail has a backend for (mailboxes.transports.esp loads anymail.backends.<esp>)."""
    import anymail.backends

    return {m.name for m in pkgutil.iter_modules(anymail.backends.__path__)} - {"base", "base_requests"}


KEY_LINE = re.compile(r"(?:^|[{,])\s*([A-Za-z0-9_-]+)\s*=")
ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([A-Za-z0-9_.-]+)\s*\]\]")
INDEXED = re.compile(r"(mailbox|sequence)\[(\d+)\](?:\.step\[(\d+)\])?")


class _Reader:
    """Collects errors with key paths instead of stopping at the first.

    Line numbers come from one pass over the file (every `key =` and every
    `[[table]]` header), so a file full of errors is reported in linear time:
    an error inside `mailbox[3]` looks only at that table's own lines.
    """

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.keys: dict[str, list[int]] = {}  # key -> lines where `key =` appears, in order
        self.starts: dict[str, list[int]] = {}  # "mailbox" | "sequence" | "sequence.step" -> header lines
        self.top: list[int] = []  # lines of every [[mailbox]] and [[sequence]] header
        for number, line in enumerate(self.lines, 1):
            header = ARRAY_HEADER.match(line)
            if header:
                self.starts.setdefault(header.group(1), []).append(number)
                if header.group(1) in ("mailbox", "sequence"):
                    self.top.append(number)
            for key in KEY_LINE.findall(line):
                self.keys.setdefault(key, []).append(number)

    def _span(self, path: str) -> tuple[int, int]:
        """The lines (first, last) of the `[[...]]` table a path is in, or the whole file (bisect: no rescans)."""
        match = INDEXED.match(path)
        starts = self.starts.get(match.group(1), []) if match else []
        if not match or int(match.group(2)) >= len(starts):
            return 1, len(self.lines)
        first = starts[int(match.group(2))]
        following = bisect_right(self.top, first)
        last = self.top[following] - 1 if following < len(self.top) else len(self.lines)
        if match.group(3) is not None:
            steps = self.starts.get("sequence.step", [])
            at = bisect_right(steps, first) + int(match.group(3))
            if at < len(steps) and steps[at] <= last:
                first = steps[at]
                if at + 1 < len(steps) and steps[at + 1] <= last:
                    last = steps[at + 1] - 1
        return first, last

    def where(self, path: str, value: Any = None) -> str:
        """The key path, with the line of the first `key =` in its table that also shows the bad value."""
        key = path.rsplit(".", 1)[-1].split("[")[0]
        first, last = self._span(path)
        lines = self.keys.get(key, [])
        hits = lines[bisect_left(lines, first):bisect_right(lines, last)] or lines[:1]
        if value is not None:
            shown = [n for n in hits if str(value) in self.lines[n - 1]]
            hits = shown or hits
        return f"{path} (line {hits[0]})" if hits else path

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{self.where(path)}: {message}")

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
    for kind, entries in (("mailbox", plan.mailboxes), ("sequence", plan.sequences)):
        counts = Counter(e["name"] for e in entries)
        for name in sorted(n for n, c in counts.items() if c > 1 and n is not None):
            reader.error(f"{kind}.name", f"{name!r} appears more than once")
    if reader.errors:
        raise ConfigError(reader.errors)
    plan.warnings = reader.warnings
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
                                 "transport", "drill_target", "ca_file", "auth", "oauth2", "guardrail"})
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
    # A private CA (PEM) trusted for this mailbox's SMTP and IMAP TLS, besides the system's.
    out["ca_file"] = reader.get(table, path, "ca_file", str, "")
    if out["ca_file"] and not Path(out["ca_file"]).is_file():
        reader.error(f"{path}.ca_file", f"no file {out['ca_file']!r}", out["ca_file"])

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
    reader.unknown(window, f"{path}.window", {"days", "start", "end", "timezone", "fallback_timezone"})
    out["window_days"] = reader.get(window, f"{path}.window", "days", str, "")
    try:
        parse_days(out["window_days"] or "")
    except ValueError as exc:
        reader.error(f"{path}.window.days", str(exc), out["window_days"])
    out["window_start"] = _time(reader, f"{path}.window.start", reader.get(window, f"{path}.window", "start", str))
    out["window_end"] = _time(reader, f"{path}.window.end", reader.get(window, f"{path}.window", "end", str))
    # "recipient": the window opens in each contact's own zone; fallback_timezone where a contact has none.
    out["window_timezone"] = reader.get(window, f"{path}.window", "timezone", str, "UTC")
    if out["window_timezone"] != RECIPIENT and zone_problem(out["window_timezone"] or "UTC"):
        reader.error(f"{path}.window.timezone", f"{zone_problem(out['window_timezone'])}, or \"{RECIPIENT}\" "
                                               "for each contact's own zone")
    out["window_fallback_timezone"] = reader.get(window, f"{path}.window", "fallback_timezone", str, "UTC")
    if zone_problem(out["window_fallback_timezone"] or "UTC"):
        reader.error(f"{path}.window.fallback_timezone", zone_problem(out["window_fallback_timezone"]))
    elif "fallback_timezone" in window and out["window_timezone"] != RECIPIENT:
        reader.warn(f"{path}.window.fallback_timezone", f"used only with timezone = \"{RECIPIENT}\"")

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
        if out["esp_name"] and out["esp_name"].lower() not in known_esps():
            reader.error(f"{path}.transport.esp", f"unknown ESP {out['esp_name']!r} (known: "
                                                  f"{', '.join(sorted(known_esps()))})", out["esp_name"])
    parse_oauth2(reader, path, table, out)
    _parse_guardrail(reader, f"{path}.guardrail", reader.get(table, path, "guardrail", dict, {}), out)
    _check_ranges(reader, path, out)
    out["given"] = {name for name, keys in MAILBOX_KEYS.items() if _named(table, keys)}
    for key, value, problem in mailbox_config_problems(out):
        reader.error(f"{path}.{key}", problem, value)
    return out


def _parse_guardrail(reader: _Reader, path: str, table: dict, out: dict[str, Any]) -> None:
    """Deliverability guardrail thresholds (defaults: 3 % hard bounces after 50 sends, 0.1 % complaints after
    1,000 deliveries, over 7 days; an operator's resume silences it for 24 hours)."""
    reader.unknown(table, path, GUARDRAIL_KEYS)
    durations = {"window": ("guardrail_window_days", "7d", 86400), "silence_after_resume":
                 ("guardrail_silence_seconds", "24h", 1)}
    for key, (name, default, unit) in durations.items():
        value = table.get(key, default)
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            reader.error(f"{path}.{key}", str(exc), value)
            seconds = parse_duration(default)
        if key == "window" and (seconds < 86400 or seconds % 86400):
            reader.error(f"{path}.window", f"{value!r} is not a whole number of days (e.g. \"7d\")", value)
        out[name] = seconds // unit
    for key, name, default in (("bounce_rate", "guardrail_bounce_rate", 3.0),
                               ("complaint_rate", "guardrail_complaint_rate", 0.1)):
        rate = reader.get(table, path, key, (int, float), default)
        if rate is not None and not 0 < rate <= 100:
            reader.error(f"{path}.{key}", f"a percentage above 0 and at most 100, got {rate}", rate)
        out[name] = float(rate if rate is not None else default)
    for key, name, default in (("bounce_min_sends", "guardrail_bounce_min_sends", 50),
                               ("complaint_min_deliveries", "guardrail_complaint_min_deliveries", 1000)):
        count = reader.get(table, path, key, int, default)
        if count is not None and count < 1:
            reader.error(f"{path}.{key}", f"must be 1 or more, got {count}", count)
        out[name] = count if count is not None else default


def _check_ranges(reader: _Reader, path: str, out: dict[str, Any]) -> None:
    """Ports, caps, the window's order, and the environment variables that hold secrets."""
    for key, label in (("smtp_port", "smtp.port"), ("imap_port", "imap.port")):
        port = out.get(key)
        if port is not None and not 1 <= port <= 65535:
            reader.error(f"{path}.{label}", f"{port} is not a port (1-65535)", port)
    for key, label in (("daily_cap", "daily_cap"), ("esp_schedule_ahead_minutes", "transport.schedule_ahead_minutes")):
        value = out.get(key)
        if value is not None and value < 0:
            reader.error(f"{path}.{label}", f"must be 0 or more, got {value}", value)
    start, end = out.get("window_start"), out.get("window_end")
    if (start is None) != (end is None):
        reader.error(f"{path}.window.{'end' if end is None else 'start'}", "a window needs both start and end")
    elif start is not None and end is not None and end <= start:
        reader.error(f"{path}.window.end", f"{end:%H:%M} is not after start {start:%H:%M}", f"{end:%H:%M}")
    # An unset variable is a warning, not an error: the file is often loaded where the secrets are not
    # (a deploy host, CI) while the workers that send have them; a send without one fails on that mailbox.
    for key, label in (("smtp_password_env", "smtp.password_env"), ("imap_password_env", "imap.password_env"),
                       ("esp_api_key_env", "transport.api_key_env"),
                       ("oauth2_client_secret_env", "oauth2.client_secret_env"),
                       ("oauth2_refresh_token_env", "oauth2.refresh_token_env")):
        name = out.get(key)
        if name and name not in os.environ:
            reader.warn(f"{path}.{label}", f"environment variable {name} is not set here; the worker that "
                                           "sends or polls must have it")


def _sequence_mailboxes(reader: _Reader, path: str, table: dict, known: set[str]) -> tuple[str | None, list[str]]:
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


def _parse_sequence(reader: _Reader, path: str, table: Any, mailboxes: set[str]) -> dict[str, Any] | None:
    if not isinstance(table, dict):
        reader.error(path, "must be a table")
        return None
    reader.unknown(table, path, {"name", "mailbox", "mailboxes", "step", "stop_on_reply"})
    out: dict[str, Any] = {"name": reader.get(table, path, "name", str, required=True)}
    # A reply stops the person everywhere; "domain" also stops everyone at the company (never a free-mail domain).
    out["stop_on_reply"] = reader.get(table, path, "stop_on_reply", str, None)
    if out["stop_on_reply"] is not None and out["stop_on_reply"] not in Sequence.StopOnReply.values:
        reader.error(f"{path}.stop_on_reply", f"must be one of {', '.join(Sequence.StopOnReply.values)}",
                     out["stop_on_reply"])
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
        reader.unknown(step, spath, {"subject", "body", "wait", "thread"})
        subject = reader.get(step, spath, "subject", str, "")
        body = reader.get(step, spath, "body", str, required=True)
        thread = reader.get(step, spath, "thread", bool, index > 1)
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
                             "given": {name for name, key in STEP_KEYS.items() if key in step}})
    return out


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


def _pool_update(sequence: Sequence, names: list[str], what: str, result: ApplyResult, *, created: bool) -> bool:
    """Set a sequence's pool of mailboxes; a change applies to new enrollments only (each keeps its mailbox)."""
    old = sorted(sequence.pool.values_list("name", flat=True))
    if old == sorted(names):
        return False
    sequence.pool.set(Mailbox.objects.filter(name__in=names))
    if not created:
        result.changes.append(f"{what}: mailboxes {old!r} -> {sorted(names)!r} (new enrollments only)")
    return not created


def config_apply(plan: Plan) -> ApplyResult:
    """Create mailboxes and sequences by name, or change only the keys the file names; one transaction."""
    result = ApplyResult()
    with transaction.atomic():
        for entry in plan.mailboxes:
            what = f"mailbox {entry['name']}"
            fields = {k: v for k, v in entry.items() if k not in ("name", "given")}
            mailbox = Mailbox.objects.select_for_update().filter(name=entry["name"]).first()
            if mailbox is None:
                Mailbox.objects.create(name=entry["name"], **fields)
                result.created.append(what)
            elif _update(mailbox, fields, entry["given"], what, result):
                result.updated.append(what)
            else:
                result.unchanged.append(what)
        for entry in plan.sequences:
            what = f"sequence {entry['name']}"
            mailbox = Mailbox.objects.get(name=entry["mailbox"])
            sequence = Sequence.objects.select_for_update().filter(name=entry["name"]).first()
            created = sequence is None
            changed = False
            if created:
                sequence = Sequence.objects.create(name=entry["name"], mailbox=mailbox,
                                                   stop_on_reply=entry.get("stop_on_reply") or "person")
            elif entry.get("stop_on_reply") and _update(sequence, entry, {"stop_on_reply"}, what, result):
                changed = True
            if not created and sequence.mailbox_id != mailbox.pk:
                result.changes.append(f"{what}: mailbox {sequence.mailbox.name!r} -> {mailbox.name!r}")
                sequence.mailbox = mailbox
                sequence.save(update_fields=["mailbox"])
                changed = True
            changed |= _pool_update(sequence, entry["pool"], what, result, created=created)
            existing = {s.position: s for s in Step.objects.filter(sequence=sequence)}
            for step in entry["steps"]:
                values = {k: v for k, v in step.items() if k != "given"}
                current = existing.get(step["position"])
                if current is None:
                    Step.objects.create(sequence=sequence, **values)
                    if not created:
                        result.changes.append(f"{what}: step {step['position']} added")
                        changed = True
                else:
                    changed |= _update(current, values, step["given"], f"{what} step {step['position']}", result)
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
            if created:
                result.created.append(what)
            else:
                (result.updated if changed else result.unchanged).append(what)
    return result


# --- export: a sequence (and its mailbox) as a file `load_sequences` reads back ----------------------------------

_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\r": "\\r"}


def _toml_string(text: str, *, multiline: bool = False) -> str:
    """A TOML basic string; with *multiline* and a newline in *text*, a multi-line one that keeps the lines."""
    out = []
    for ch in text:
        if ch in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[ch])
        elif ch == "\n":
            out.append("\n" if multiline else "\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    body = "".join(out)
    if multiline and "\n" in text:
        return f'"""\n{body}"""'  # the newline right after the opening quotes is not part of the string
    return f'"{body}"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, time):
        return _toml_string(value.strftime("%H:%M"))
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return _toml_string(str(value))


def duration_text(seconds: int) -> str:
    """Seconds as the loader's shortest exact duration: 259200 -> "3d", 5400 -> "90m", 0 -> "0s"."""
    for unit in ("w", "d", "h", "m"):
        if seconds and seconds % UNITS[unit] == 0:
            return f"{seconds // UNITS[unit]}{unit}"
    return f"{seconds}s"


def _mailbox_tables(mailbox: Mailbox) -> dict[str, dict[str, Any]]:
    """The mailbox's keys as the loader names them ({"": top-level, "smtp": {...}, ...}); secrets are env names."""
    tables: dict[str, dict[str, Any]] = {"": {"name": mailbox.name}}
    for name, keys in MAILBOX_KEYS.items():
        value = getattr(mailbox, name)
        group = keys[0] if len(keys) == 2 else ""
        if (group == "imap" and not mailbox.imap_host) or (group == "transport" and mailbox.transport_kind == "smtp"):
            continue
        if group == "oauth2" and (mailbox.auth != "oauth2" or not value):
            continue  # a password mailbox has no oauth2 table; an empty key takes the provider's default
        if name == "esp_api_url" or value is None or (name == "ca_file" and not value):
            continue  # the ESP's URL is fixed, never per mailbox
        if name == "guardrail_window_days":
            value = f"{value}d"
        elif name == "guardrail_silence_seconds":
            value = duration_text(value)
        tables.setdefault(group, {})[keys[-1]] = value
    return tables


def sequence_export_toml(sequence: Sequence) -> str:
    """The sequence and its mailboxes as TOML: `load_sequences` on it creates (or leaves unchanged) the same steps."""
    pool = list(sequence.pool.order_by("pk"))
    lines = [f"# Sequence {sequence.name!r}, exported for `manage.py load_sequences`."]
    for mailbox in pool or [sequence.mailbox]:
        lines += ["", "[[mailbox]]"]
        for group, table in _mailbox_tables(mailbox).items():
            if group:
                lines += ["", f"[mailbox.{group}]"]
            lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    lines += ["", "[[sequence]]", f"name = {_toml_string(sequence.name)}"]
    if pool:
        lines.append(f"mailboxes = {_toml_value([m.name for m in pool])}")
    else:
        lines.append(f"mailbox = {_toml_string(sequence.mailbox.name)}")
    lines.append(f"stop_on_reply = {_toml_string(sequence.stop_on_reply)}")
    for step in sequence.steps.order_by("position"):
        lines += ["", "[[sequence.step]]", f"subject = {_toml_string(step.subject)}",
                  f"body = {_toml_string(step.body, multiline=True)}",
                  f"wait = {_toml_string(duration_text(step.wait_seconds))}",
                  f"thread = {_toml_value(step.thread)}"]
    return "\n".join(lines) + "\n"
