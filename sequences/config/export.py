"""Export: a sequence (and its mailboxes) as a TOML file `load_sequences` reads back."""

from __future__ import annotations

from datetime import time
from typing import Any

from mailboxes import settings_schema
from mailboxes.models import Mailbox
from mailboxes.settings_schema import Kind

from ..models import CROSSED_NOTE, Sequence
from .durations import duration_text
from .parts import PARTS

_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\r": "\\r"}


def _toml_string(text: str, *, multiline: bool = False) -> str:
    """A TOML basic string; with *multiline* and a newline in *text*, a multi-line one that keeps the lines.

    A multi-line string's line ends are plain newlines: a body typed in the browser (whose lines end in CRLF)
    exports without a "\\r" on every line; TOML readers take CRLF there as a newline anyway, and a message's
    lines go out with CRLF whichever way they are stored."""
    if multiline:
        text = text.replace("\r\n", "\n")
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



def _mailbox_tables(mailbox: Mailbox) -> dict[str, dict[str, Any]]:
    """The mailbox's settings as the loader names them ({"": top-level, "smtp": {...}, ...}, in the order of
    mailboxes.settings_schema); secrets are env names, durations in words."""
    tables: dict[str, dict[str, Any]] = {"": {}}
    for setting in settings_schema.in_toml():
        section = settings_schema.SECTIONS.get(setting.section)
        if section is not None and not section.exported(mailbox):
            continue  # no IMAP, no ESP, no OAuth2, no ramp-up: no table
        value = getattr(mailbox, setting.field)
        if value is None or (not setting.exported_empty and not value):
            continue  # absent says the same (no spacing, the provider's default, the system's CAs)
        if setting.kind is Kind.DURATION:
            value = duration_text(value)
        elif setting.kind is Kind.DAYS:
            value = f"{value}d"
        tables.setdefault(setting.section, {})[setting.key] = value
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
    lines.append(f"unsubscribe_style = {_toml_string(sequence.unsubscribe_style)}")
    if sequence.booking_url:
        lines.append(f"booking_url = {_toml_string(sequence.booking_url)}")
    if sequence.crossed_note != CROSSED_NOTE:
        lines.append(f"crossed_note = {_toml_string(sequence.crossed_note, multiline=True)}")
    if sequence.status == Sequence.Status.DRAFT:
        lines.append('status = "draft"  # nothing is sent until it is launched')
    for step in sequence.steps.order_by("position").prefetch_related("variants"):
        variants = sorted(step.variants.all(), key=lambda v: v.pk)
        lines += ["", "[[sequence.step]]"]
        if not variants:  # a step with variants sends theirs: its own text is not part of it
            lines += [f"subject = {_toml_string(step.subject)}", f"body = {_toml_string(step.body, multiline=True)}"]
        lines += [f"wait = {_toml_string(duration_text(step.wait_seconds))}", f"thread = {_toml_value(step.thread)}"]
        for variant in variants:
            lines += ["", "[[sequence.step.variants]]"]
            if variant.stopped_at is not None:
                lines.append(f"# stopped on {variant.stopped_at:%Y-%m-%d %H:%M} UTC: nothing of it is sent")
            lines += [f"name = {_toml_string(variant.name)}", f"subject = {_toml_string(variant.subject)}",
                      f"body = {_toml_string(variant.body, multiline=True)}", f"weight = {variant.weight}"]
    for key, part in PARTS.items():  # keys kept by apps above (sequences.config.parts): arrays of tables
        for table in part.export(sequence):
            lines += ["", f"[[sequence.{key}]]"] + [f"{name} = {_toml_value(value)}" for name, value in table.items()]
    return "\n".join(lines) + "\n"
