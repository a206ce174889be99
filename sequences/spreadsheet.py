"""Cells of the CSV files the product writes and reads back: text a spreadsheet shows, never a formula it runs.

A leaf (no imports of the product): every CSV export guards its cells with `guard_formula` (the suppression
export and import in `ui`, the send ledger's file in `sequences.ledger`), and an import undoes it with
`unformula`.
"""

from __future__ import annotations

import re

# A spreadsheet runs a cell that starts with one of these as a formula (OWASP's CSV injection list). A cell
# starts after each separator too: one that splits on ";" (or a tab, or reads a line break inside quotes as a new
# row) reads "x;=1+1" as "x" and "=1+1". The export puts an apostrophe before each such start (after the spaces
# and quotes that lead to it), also where the text has one already, so the import, removing one, gives back the
# exact text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_AT = r"(^|[,;\t\r\n])([ \"]*)"  # a cell's start: the text's, or after a separator; then spaces, quotes
_STARTS = f"(?='*[{re.escape(''.join(FORMULA_START))}])"
_FORMULA = re.compile(_FORMULA_AT + _STARTS)
_GUARDED = re.compile(_FORMULA_AT + "'" + _STARTS)


def unformula(cell: str) -> str:
    """Undo the export's spreadsheet-formula guard ("'=..." -> "=...", "x;'=1" -> "x;=1")."""
    return _GUARDED.sub(r"\1\2", cell)


def guard_formula(cell: str) -> str:
    """The cell as text to a spreadsheet: an apostrophe before every formula start, at its start and after each
    separator ("=1" -> "'=1", "x;=1+1" -> "x;'=1+1")."""
    return _FORMULA.sub(r"\1\2'", cell)
