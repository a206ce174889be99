"""A report's table as a file: CSV (text, as the page shows each cell) and XLSX (numbers as numbers).

The same columns as the page, the total last. Every text cell is formula-safe: a name that starts with = + - @
(a sequence called "=HYPERLINK(…)") gets the apostrophe of `sequences.spreadsheet.guard_formula`, so a
spreadsheet shows it and never runs it; in the XLSX it is also stored as a string, never as a formula.
"""

from __future__ import annotations

import csv
import io

from openpyxl import Workbook
from openpyxl.styles import Font

from sequences.spreadsheet import guard_formula

from .figures import BY, Report

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _safe(cell):
    return guard_formula(cell) if isinstance(cell, str) else cell


def report_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([_safe(h) for h in report.headings])
    for row in report.rows(text=True):
        writer.writerow(["" if cell is None else _safe(cell) for cell in row])
    return out.getvalue()


def report_xlsx(report: Report) -> bytes:
    book = Workbook()
    sheet = book.active
    sheet.title = f"By {BY[report.by].lower()}"[:31]
    sheet.append([_safe(h) for h in report.headings])
    for cell in sheet[1]:
        cell.font = Font(bold=True)
    for row in report.rows():
        sheet.append([_safe(cell) for cell in row])
    # openpyxl reads a string that starts with "=" as a formula: every text cell is stored as a string.
    for row in sheet.iter_rows():
        for cell in row:
            if isinstance(cell.value, str):
                cell.data_type = "s"
    sheet.freeze_panes = "A2"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def report_filename(report: Report, extension: str) -> str:
    """report-by-step-spring-from-2026-01-05-to-2026-01-11.csv: what it is, for which sequence and days (ASCII
    only: it goes in a header)."""
    parts = ["report", "by", report.by]
    if report.sequence is not None:
        name = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in report.sequence.name.lower())
        parts.append(name.strip("-")[:40] or f"sequence-{report.sequence.pk}")
    if report.since or report.until:
        parts.append(report.range_words.replace(" ", "-"))
    return "-".join(parts) + "." + extension
