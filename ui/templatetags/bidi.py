"""Text from strangers beside the page's own words: `{{ value|isolate }}` and `{{ value|as_name }}`.

A name, subject or reply may hold Unicode's bidirectional controls: U+202E (RIGHT-TO-LEFT OVERRIDE) shows the text
after it reversed, the page's own words beside it included, so "Ann‮ slaw fo" could read as a name followed by
other words. `isolate` puts the text in a `<bdi>`: its direction is its own and ends with it (an override left open
ends there too). `as_name` also shows each control in a name as a visible mark, "[U+202E]": no name needs one, and
an operator sees what the sender wrote. A reply's text keeps its controls (right-to-left writers use the marks),
isolated.
"""

from __future__ import annotations

import re

from django import template
from django.utils.html import format_html

register = template.Library()

# The embeddings, overrides and isolates with their terminators, and the three direction marks (ALM, LRM, RLM).
BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def marked(text: str) -> str:
    """The text with each bidirectional control replaced by a visible mark: "[U+202E]"."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


@register.filter
def isolate(value: object) -> str:
    """The value (escaped) in a `<bdi>`: its direction cannot reach the words around it."""
    if value is None or value == "":
        return ""
    return format_html("<bdi>{}</bdi>", value)


@register.filter
def as_name(value: object) -> str:
    """A name (escaped) in a `<bdi>`, each bidirectional control in it shown as a visible mark."""
    if value is None or value == "":
        return ""
    return format_html("<bdi>{}</bdi>", marked(str(value)))
