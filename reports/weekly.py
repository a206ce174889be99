"""The weekly report by email: what it says. One week's figures per sequence, a bar chart made of table cells, the
CSV of the same table attached, a link to the reports page. reports.weekly_send sends it once per week.

Which week. Monday to Sunday by the install's calendar (settings.TIME_ZONE, UTC unless changed). Its days are the
reports' days: the days (UTC) the messages were handed off (reports.figures), so the mail shows what the reports
page shows for those seven days, and what those messages brought back as far as it is known when the mail is
made. A week is complete once its Sunday has ended both by the install's calendar and in UTC; the last complete
week is the one before the week "today" is in.

What it holds. The figures of each sequence in the report (every sequence, less those turned off for it:
WeeklyReportSequence), read from the rollup (reports.figures.report), never from the jobs; sequence names and
counts only, never a contact's name or address. The chart is HTML table cells with inline styles (most mail
clients show no SVG and block images); the numbers are beside the bars.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from db.clock import db_now
from mailboxes.install_mail import Attachment, InstallMessage
from workspaces.models import Workspace
from workspaces.scoping import current_scope

from .exports import report_csv, report_filename
from .figures import COLUMNS, THRESHOLDS, Column, Line, Report, report, week_of
from .models import WeeklyReportSequence

WEEK = timedelta(days=7)
# The figures each sequence shows in the mail (the attached CSV has every column of the page).
SHOWN = ("sent", "replied", "positive", "meeting", "unsubscribed", "bounced_hard", "complained", "reply_rate",
         "positive_rate", "meetings_per_100", "bounce_rate", "bounce_level", "complaint_rate", "complaint_level")
MAIL_COLUMNS: tuple[Column, ...] = tuple(next(c for c in COLUMNS if c.name == name) for name in SHOWN)
LEVEL_WORDS = {"ok": "OK", "warn": "Warn", "stop": "Stop", "": ""}
LEVEL_STYLE = {"ok": "color:#276749;", "warn": "color:#8a5300;background:#fdf3e1;font-weight:bold;",
               "stop": "color:#a1251b;background:#fbe9e7;font-weight:bold;", "": ""}
MOST_ROWS = 12  # the chart's rows; the tables and the CSV have every sequence
BAR_ROOM = 80  # percent of the bar cell a full-scale bar takes: the number beside it keeps the rest
SERIES = (("reply_rate", "Reply rate", "#3b78d8"), ("positive_rate", "Positive rate", "#2e9e5b"))


def install_today() -> date:
    """Today, by the database clock, on whichever calendar is behind: the install's (TIME_ZONE) or UTC's."""
    now = db_now()
    return min(timezone.localdate(now), now.astimezone(UTC).date())


def last_complete_week(today: date | None = None) -> date:
    """The Monday of the last week whose Sunday has ended."""
    return week_of(today or install_today()) - WEEK


def week_complete(monday: date, today: date | None = None) -> bool:
    return monday + WEEK <= (today or install_today())


def left_out() -> list[int]:
    """The ids of the sequences turned off for the weekly report (a sequence without a row is in it)."""
    return list(WeeklyReportSequence.objects.filter(enabled=False).values_list("sequence_id", flat=True))


@dataclass(frozen=True)
class WeeklyReport:
    week: date  # its Monday
    report: Report  # by sequence, the sequences in the weekly report only
    complete: bool  # False: the week is not over, its figures are so far
    workspace: str = ""  # its workspace's name, where the install has several

    @property
    def sunday(self) -> date:
        return self.week + timedelta(days=6)

    @property
    def words(self) -> str:
        return f"Monday {self.week:%Y-%m-%d} to Sunday {self.sunday:%Y-%m-%d}"

    @property
    def summary(self) -> str:
        total, n = self.report.total, len(self.report.lines)
        return (f"{total.counts['sent']} sent, {total.counts['replied']} replied, {total.positive} positive "
                f"in {n} sequence{'' if n == 1 else 's'}")

    @property
    def subject(self) -> str:
        so_far = "" if self.complete else " (so far)"
        whose = f" of {self.workspace}" if self.workspace else ""
        return f"Weekly report{whose}, {self.week:%Y-%m-%d} to {self.sunday:%Y-%m-%d}{so_far}: {self.summary}"

    @property
    def link(self) -> str:
        query = urlencode({"by": "sequence", "since": self.week.isoformat(), "until": self.sunday.isoformat()})
        return f"{settings.OUTREACH_PUBLIC_URL.rstrip('/')}{reverse('reports')}?{query}"

    def attachment(self) -> Attachment:
        return Attachment(report_filename(self.report, "csv"), report_csv(self.report), "text/csv")


def weekly_report(*, week: date, today: date | None = None) -> WeeklyReport:
    """The weekly report of the week that starts on *week*'s Monday (any day of it names it)."""
    monday = week_of(week)
    found = report(by="sequence", since=monday, until=monday + timedelta(days=6), leave_out=left_out())
    return WeeklyReport(week=monday, report=found, complete=week_complete(monday, today), workspace=_workspace_named())


def _workspace_named() -> str:
    """The scope's workspace's name where the install has several ("" where it has one: nothing to tell apart)."""
    scope = current_scope()
    if scope is None or scope.with_unowned:  # each workspace's report is made with_unowned where it is the only one
        return ""
    return Workspace.objects.filter(pk=scope.workspace_id).values_list("name", flat=True).first() or ""


def _nice(peak: float) -> float:
    """A round scale end at or above *peak* (1, 2, 2.5, 5 times a power of ten), so two weeks' charts compare."""
    if peak <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(peak))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= peak)


def _chart(lines: list[Line]) -> list[dict]:
    """Each sequence's reply and positive rate as a bar: its width in percent of the cell, and its number."""
    shown = lines[:MOST_ROWS]
    peak = max([v for line in shown for name, *_ in SERIES if (v := line.get(name)) is not None] + [0.0])
    end = _nice(peak)
    rows = []
    for line in shown:
        bars = []
        for name, label, colour in SERIES:
            value = line.get(name)
            width = max(1, round(BAR_ROOM * value / end)) if value else 0  # a rate above 0 shows a sliver
            text = "no sends" if value is None else f"{value:.1f} %"
            bars.append({"label": label, "width": width, "rest": 100 - width, "colour": colour, "text": text})
        rows.append({"name": line.short, "sent": line.counts["sent"], "bars": bars})
    return rows


def _figures(line: Line) -> list[dict]:
    cells = []
    for column in MAIL_COLUMNS:
        text = line.text(column)
        level = text if column.name.endswith("_level") else ""
        cells.append({"name": column.name, "heading": column.heading,
                      "text": LEVEL_WORDS[text] if column.name.endswith("_level") else text,
                      "style": LEVEL_STYLE[level]})
    return cells


def _context(built: WeeklyReport, to: Iterable[str]) -> dict:
    found = built.report
    return {
        "built": built, "report": found, "chart": _chart(found.lines), "more": max(0, len(found.lines) - MOST_ROWS),
        "tables": [{"name": line.labels[0], "figures": _figures(line), "total": False} for line in found.lines]
        + [{"name": "Total", "figures": _figures(found.total), "total": True}],
        "thresholds": THRESHOLDS, "time_zone": settings.TIME_ZONE, "to": list(to),
        "sender": settings.OUTREACH_INSTALL_MAIL_FROM, "filename": built.attachment().filename,
    }


def weekly_message(built: WeeklyReport, *, to: Iterable[str]) -> InstallMessage:
    """The mail: HTML with its chart, the same figures as plain text, and the CSV of the table attached."""
    to = tuple(to)
    context = _context(built, to)
    return InstallMessage(to=to, subject=built.subject, text=render_to_string("reports/weekly_email.txt", context),
                          html=render_to_string("reports/weekly_email.html", context),
                          attachments=(built.attachment(),))
