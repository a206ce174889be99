"""Mailboxes and sequences as code: TOML text -> plain values (a Plan), every key checked as it is read.

Durations are read here too ("90s", "3 days", "1 day 6 hours"), with their shortest exact spelling for export.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from datetime import time
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from mailboxes.models import Mailbox, SaveToSent
from mailboxes.secrets import mailbox_config_problems
from mailboxes.tls import mailbox_connection_problems

from ..booking_token import booking_url_problem
from ..crossing import crossed_note_problem
from ..messages import step_validate
from ..models import Sequence
from ..window import RECIPIENT, parse_days, zone_problem
from .auth import parse_oauth2
from .validate import ConfigError, Reader, check_lengths, check_ranges, known_esps

DURATION = re.compile(r"^\s*([0-9]+)\s*([smhdw]?)\s*$")
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# "3 days", "4 hours", "1 day 6 hours", "90 minutes": a number and a unit in words, one or more times.
DURATION_PART = re.compile(r"([0-9]+)\s*(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|[smhdw])\b", re.I)
SECURITY = ("none", "starttls", "tls")


# The longest duration any key or form takes (a step's wait, a reply view's age, a guardrail's window): a year,
# well inside the 32-bit column that holds it in seconds. A longer one is refused, never wrapped.
MAX_DURATION = 365 * 86400
MAX_DURATION_WORDS = "365 days"
# More digits than any duration up to MAX_DURATION has: refused before int() reads them.
_MAX_DIGITS = 12


def parse_duration(value: Any) -> int:
    """'90s', '15m', '3d', '1w' or a number of seconds -> seconds; ValueError in words, also over MAX_DURATION."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return _at_most_a_year(value, value)
    match = DURATION.match(str(value)) if isinstance(value, str) else None
    if match:
        return _at_most_a_year(_number(match.group(1), value) * UNITS[match.group(2)], value)
    if isinstance(value, str) and value.strip():
        parts = DURATION_PART.findall(value)
        rest = DURATION_PART.sub("", value).replace(",", " ").replace(" and ", " ").strip()
        if parts and not rest:
            return _at_most_a_year(sum(_number(n, value) * UNITS[unit[0].lower()] for n, unit in parts), value)
    raise ValueError(f"{value!r} is not a duration (use e.g. \"0s\", \"90s\", \"15m\", \"3d\", \"3 days\", "
                     "\"4 hours\")")


class DurationTooLong(ValueError):
    """A duration over MAX_DURATION: its words name the maximum."""


def _shown(value: Any) -> str:
    text = str(value)
    return repr(value) if len(text) <= 40 else repr(text[:40]) + "…"


def _number(digits: str, value: Any) -> int:
    if len(digits) > _MAX_DIGITS:
        raise DurationTooLong(f"{_shown(value)} is too long: a duration is at most {MAX_DURATION_WORDS}")
    return int(digits)


def _at_most_a_year(seconds: int, value: Any) -> int:
    if seconds > MAX_DURATION:
        raise DurationTooLong(f"{_shown(value)} is too long: a duration is at most {MAX_DURATION_WORDS}")
    return seconds


def duration_text(seconds: int) -> str:
    """Seconds as the loader's shortest exact duration: 259200 -> "3d", 5400 -> "90m", 0 -> "0s"."""
    for unit in ("w", "d", "h", "m"):
        if seconds and seconds % UNITS[unit] == 0:
            return f"{seconds // UNITS[unit]}{unit}"
    return f"{seconds}s"


@dataclass
class Plan:
    mailboxes: list[dict[str, Any]] = field(default_factory=list)
    sequences: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# Each mailbox field and the TOML key that names it: an existing mailbox changes only in the keys a file names.
MAILBOX_KEYS: dict[str, tuple[str, ...]] = {
    "address": ("address",), "display_name": ("display_name",), "daily_cap": ("daily_cap",),
    "is_drill_target": ("drill_target",), "ca_file": ("ca_file",), "dkim_selector": ("dkim_selector",),
    "reply_view_max_age": ("reply_view_max_age",), "follow_ups_without_reply_view": ("follow_ups_without_reply_view",),
    "save_to_sent": ("save_to_sent",),
    "min_gap": ("min_gap",), "gap_jitter": ("gap_jitter",), "ramp_start": ("ramp", "start"),
    "ramp_step": ("ramp", "step"),
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
    "guardrail_refusal_rate": ("guardrail", "refusal_rate"),
    "guardrail_refusal_min_sends": ("guardrail", "refusal_min_sends"),
}
GUARDRAIL_KEYS = {"window", "bounce_rate", "bounce_min_sends", "complaint_rate", "complaint_min_deliveries",
                  "silence_after_resume", "refusal_rate", "refusal_min_sends"}
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


def parse(text: str) -> Plan:
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
    if not isinstance(table, dict):
        reader.error(path, "must be a table")
        return None
    if "paused" in table:
        # A pause is an operator's action with a record (what it canceled), not configuration.
        reader.error(f"{path}.paused", "not a configuration key: pause a mailbox with `manage.py pause mailbox NAME` "
                                       "or from the mailboxes page")
        table = {k: v for k, v in table.items() if k != "paused"}
    reader.unknown(table, path, {"name", "address", "display_name", "smtp", "daily_cap", "window", "imap",
                                 "transport", "drill_target", "ca_file", "dkim_selector", "auth", "oauth2", "guardrail",
                                 "reply_view_max_age", "follow_ups_without_reply_view", "min_gap", "gap_jitter",
                                 "ramp", "save_to_sent"})
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
    # The reply view (sequences.reply_view): how old the view of the replies may be when a follow-up leaves
    # (absent: OUTREACH_REPLY_VIEW_MAX_AGE), and whether a mailbox that reads no replies sends follow-ups.
    max_age = table.get("reply_view_max_age")
    out["reply_view_max_age"] = None
    if max_age is not None:
        try:
            out["reply_view_max_age"] = parse_duration(max_age)
        except ValueError as exc:
            reader.error(f"{path}.reply_view_max_age", str(exc), max_age)
    out["follow_ups_without_reply_view"] = reader.get(table, path, "follow_ups_without_reply_view", bool, False)
    # A copy of each message sent in the IMAP Sent folder (sequences.sent_copies): "auto" unless the server keeps one.
    out["save_to_sent"] = reader.get(table, path, "save_to_sent", str, SaveToSent.AUTO.value)
    if out["save_to_sent"] not in SaveToSent.values:
        reader.error(f"{path}.save_to_sent", f"must be one of {', '.join(SaveToSent.values)}", out["save_to_sent"])
    # The pace (sequences.daily_cap): messages at least min_gap apart, plus a random extra up to gap_jitter; a
    # ramp-up from `start` messages on the first sending day, `step` more each day, up to daily_cap.
    for key in ("min_gap", "gap_jitter"):
        out[key] = 0
        if key in table:
            try:
                out[key] = parse_duration(table[key])
            except ValueError as exc:
                reader.error(f"{path}.{key}", str(exc), table[key])
    ramp = reader.get(table, path, "ramp", dict, None)
    out["ramp_start"], out["ramp_step"] = None, 0
    if ramp is not None:
        reader.unknown(ramp, f"{path}.ramp", {"start", "step"})
        out["ramp_start"] = reader.get(ramp, f"{path}.ramp", "start", int, required=True)
        out["ramp_step"] = reader.get(ramp, f"{path}.ramp", "step", int, 0)
        if out["ramp_start"] is not None and out["ramp_start"] < 1:
            reader.error(f"{path}.ramp.start", "must be at least 1 (the first day's messages)", out["ramp_start"])
        if out["ramp_step"] is not None and out["ramp_step"] < 0:
            reader.error(f"{path}.ramp.step", "must be 0 or more", out["ramp_step"])
    # A private CA (PEM) trusted for this mailbox's SMTP and IMAP TLS, besides the system's.
    out["ca_file"] = reader.get(table, path, "ca_file", str, "")
    # Checked with the hosts below (mailboxes.tls.ca_file_problem): a readable PEM under OUTREACH_CA_DIRS.
    # The DKIM selector the provider signs with: the domain-authentication check reads <selector>._domainkey.
    out["dkim_selector"] = reader.get(table, path, "dkim_selector", str, "")
    if out["dkim_selector"] and not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?",
                                                 out["dkim_selector"]):
        reader.error(f"{path}.dkim_selector", "letters, digits, dots, '-' and '_' only", out["dkim_selector"])

    smtp = reader.get(table, path, "smtp", dict, {})
    reader.unknown(smtp, f"{path}.smtp", {"host", "port", "username", "password_env", "security"})
    out["smtp_host"] = reader.get(smtp, f"{path}.smtp", "host", str, "127.0.0.1")
    out["smtp_port"] = reader.get(smtp, f"{path}.smtp", "port", int, 587)
    out["smtp_username"] = reader.get(smtp, f"{path}.smtp", "username", str, "")
    out["smtp_password_env"] = reader.get(smtp, f"{path}.smtp", "password_env", str, "")
    # TLS by default: "none" may log in only to a server on this machine (mailboxes.tls).
    out["smtp_security"] = reader.get(smtp, f"{path}.smtp", "security", str, "starttls")
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
        out["imap_port"] = reader.get(imap, f"{path}.imap", "port", int, 993)
        out["imap_username"] = reader.get(imap, f"{path}.imap", "username", str, "")
        out["imap_password_env"] = reader.get(imap, f"{path}.imap", "password_env", str, "")
        out["imap_security"] = reader.get(imap, f"{path}.imap", "security", str, "tls")
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
    check_ranges(reader, path, out)
    out["given"] = {name for name, keys in MAILBOX_KEYS.items() if _named(table, keys)}
    for key, value, problem in mailbox_config_problems(out):
        reader.error(f"{path}.{key}", problem, value)
    for field_name, problem in mailbox_connection_problems(out).items():
        reader.error(f"{path}.{'.'.join(MAILBOX_KEYS[field_name])}", problem, out[field_name])
    return out


def _parse_guardrail(reader: Reader, path: str, table: dict, out: dict[str, Any]) -> None:
    """Deliverability guardrail thresholds (defaults: 3 % hard bounces after 50 sends, 0.1 % complaints after
    1,000 deliveries, 2 % refusals naming authentication or a blocklist after 20 sends, over 7 days; an
    operator's resume silences it for 24 hours)."""
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
                               ("complaint_rate", "guardrail_complaint_rate", 0.1),
                               ("refusal_rate", "guardrail_refusal_rate", 2.0)):
        rate = reader.get(table, path, key, (int, float), default)
        if rate is not None and not 0 < rate <= 100:
            reader.error(f"{path}.{key}", f"a percentage above 0 and at most 100, got {rate}", rate)
        out[name] = float(rate if rate is not None else default)
    for key, name, default in (("bounce_min_sends", "guardrail_bounce_min_sends", 50),
                               ("complaint_min_deliveries", "guardrail_complaint_min_deliveries", 1000),
                               ("refusal_min_sends", "guardrail_refusal_min_sends", 20)):
        count = reader.get(table, path, key, int, default)
        if count is not None and count < 1:
            reader.error(f"{path}.{key}", f"must be 1 or more, got {count}", count)
        out[name] = count if count is not None else default


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
                                 "unsubscribe_style", "booking_url", "crossed_note"})
    out: dict[str, Any] = {"name": reader.get(table, path, "name", str, required=True)}
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
