"""The cost budget of one rendering of a step's template: how much a short text may make a process build.

A few hundred characters of template can ask for gigabytes: each `{% with a=a|add:a %}` doubles a value,
`a|join:a` squares a length, a loop repeats its body. So every rendering runs against a `Budget` and stops with
`OverBudget`, its reason in words, as soon as it passes one bound, before the memory is taken:

- MAX_OUTPUT characters written, counted as each piece of text is produced, not once the whole is built;
- MAX_VALUES characters made by filters. Every value a template builds comes out of a filter (`with`, `cycle`
  and `firstof` only name values), so this bounds what one rendering holds, however its values are nested
  or assigned. A filter whose result can outgrow its inputs many times (`join`) is sized before it runs;
  any other makes at most a few times its inputs, once, before it is refused;
- MAX_ITERATIONS loop bodies, and MAX_SECONDS for what the other bounds leave (a filter that reads a long
  value and makes a short one, many times);
- and when a template is compiled, MAX_NESTING levels of blocks: Django's parser recurses once per level.

A bound once passed stays passed: a template cannot catch the refusal (`{% if %}` turns an error in its
condition into False) and carry on. Pure: no models, no I/O.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass

from django.template import TemplateSyntaxError
from django.template.base import Node, Token, TokenType
from django.template.defaulttags import ForNode

MAX_OUTPUT = 500_000  # characters a rendering writes
MAX_VALUES = 1_000_000  # characters its filters make
MAX_ITERATIONS = 10_000  # loop bodies it runs
MAX_SECONDS = 2.0
MAX_NESTING = 16  # blocks ({% if %}, {% for %}, {% with %}) inside one another


class OverBudget(Exception):
    """A rendering that passed one of its bounds; the text says which."""


@dataclass
class Budget:
    """What one rendering has used so far; `over` names the first bound it passed ('' while within all)."""

    deadline: float
    written: int = 0
    made: int = 0
    loops: int = 0
    over: str = ""

    def refuse(self, reason: str):
        self.over = self.over or reason
        raise OverBudget(self.over)

    def check(self) -> None:
        """Refuses again once a bound was passed, and past the deadline."""
        if self.over:
            raise OverBudget(self.over)
        if time.monotonic() > self.deadline:
            self.refuse(f"takes more than {MAX_SECONDS:g} s to render")

    def write(self, text: str) -> None:
        self.written += len(text)
        if self.written > MAX_OUTPUT:
            self.refuse(f"renders to more than {MAX_OUTPUT:,} characters")
        self.check()

    def room_for(self, size: int) -> None:
        """Refuses when SIZE more characters of values would pass MAX_VALUES."""
        if self.made + size > MAX_VALUES:
            self.refuse(f"its filters make more than {MAX_VALUES:,} characters of values (add, join, ... "
                        "applied to their own results)")

    def make(self, size: int) -> None:
        """Charge SIZE characters a filter made."""
        self.room_for(size)
        self.made += size

    def loop(self) -> None:
        self.loops += 1
        if self.loops > MAX_ITERATIONS:
            self.refuse(f"the loops run more than {MAX_ITERATIONS:,} times")
        self.check()


_CURRENT: ContextVar[Budget] = ContextVar("template_budget")


def render_within(template, context) -> str:
    """TEMPLATE (compiled, then `instrument`ed) rendered for CONTEXT under a budget of its own; OverBudget names
    the bound it passed, also when the template swallowed the refusal or failed otherwise after it."""
    budget = Budget(deadline=time.monotonic() + MAX_SECONDS)
    token = _CURRENT.set(budget)
    try:
        text = template.render(context)
    except Exception:
        if budget.over:
            raise OverBudget(budget.over) from None
        raise
    finally:
        _CURRENT.reset(token)
    if budget.over:
        raise OverBudget(budget.over)
    return text


def nesting_check(tokens: Iterable[Token]) -> None:
    """TemplateSyntaxError when blocks nest deeper than MAX_NESTING, found in the tokens before Django's parser
    recurses into them (a few thousand levels fit in a template's length, and overflow Python's stack)."""
    blocks = [(token, token.contents.split(None, 1)[0] if token.contents.strip() else "")
              for token in tokens if token.token_type == TokenType.BLOCK]
    names = {name for _, name in blocks}
    depth, in_comment = 0, False
    for token, name in blocks:
        if in_comment:  # what {% comment %} holds is skipped, not parsed
            in_comment = name != "endcomment"
        elif name == "comment":
            in_comment = True
        elif f"end{name}" in names:
            depth += 1
            if depth > MAX_NESTING:
                raise TemplateSyntaxError(f"line {token.lineno}: blocks nested more than {MAX_NESTING} deep")
        elif name.startswith("end"):
            depth = max(depth - 1, 0)


def charged(func: Callable, *, size_ahead: Callable[..., int] | None = None) -> Callable:
    """Filter FUNC, what it makes charged to the rendering's budget. `size_ahead(value, *args)`: the size of its
    result, known before it is made (for a filter whose result can outgrow its inputs many times)."""

    @functools.wraps(func)  # Django reads the filter's arguments and flags through the wrapper
    def filter_(value, *args, **kwargs):
        budget = _CURRENT.get()
        budget.check()
        if size_ahead is not None:
            budget.room_for(size_ahead(value, *args))
        result = func(value, *args, **kwargs)
        if result is not value and all(result is not arg for arg in args):  # a value of its own, not an input
            budget.make(written_size(result, limit=MAX_VALUES - budget.made))
        return result

    return filter_


def written_size(value, *, limit: int) -> int:
    """The characters VALUE takes when written out, counted until past LIMIT: a text's length; a list's or a
    table's items, nested ones too, each with a few characters of punctuation; nothing for a number."""
    total, pending = 0, [value]
    while pending and total <= limit:
        item = pending.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, list | tuple | dict):
            total += 4 * len(item)
            if total <= limit:
                pending.extend(item.items() if isinstance(item, dict) else item)
    return total


def joined_size(value, arg="", *_) -> int:
    """How long `value|join:arg` would be: its items, and the separator between each two of them."""
    if not isinstance(arg, str):
        return 0
    if isinstance(value, str):
        count = items = len(value)
    elif isinstance(value, list | tuple | dict):
        count = len(value)
        items = sum(len(item) for item in value if isinstance(item, str))
    else:
        return 0
    return items + max(count - 1, 0) * len(arg)


class _LoopBody(Node):
    """First node of every {% for %} body: counts the bodies a rendering runs."""

    child_nodelists = ()

    def render(self, context):
        _CURRENT.get().loop()
        return ""


@functools.cache
def _writing(cls: type[Node]) -> type[Node]:
    """CLS, what each of its nodes writes charged to the rendering: for a node with no nodes inside, whose text
    is its own (a container's text is its children's, charged as they write it)."""

    def render_annotated(self, context):
        text = cls.render_annotated(self, context)
        _CURRENT.get().write(text)
        return text

    return type(cls.__name__, (cls,), {"render_annotated": render_annotated, "__module__": cls.__module__})


def instrument(template) -> None:
    """Make TEMPLATE (just compiled) count against the budget of `render_within`: every loop body, and the text
    of every node that writes its own. It then renders only within a budget."""
    for loop in template.nodelist.get_nodes_by_type(ForNode):
        loop.nodelist_loop.insert(0, _LoopBody())
    for node in template.nodelist.get_nodes_by_type(Node):
        if not isinstance(node, _LoopBody) and not any(getattr(node, name, None) for name in node.child_nodelists):
            node.__class__ = _writing(type(node))
