"""The reports page's charts as SVG geometry: horizontal bars, one row per line of the report, drawn on the server.

Drawn 360 units wide, the width of a phone, so at 390 px the text is the size it was written (11 px) and the
page never scrolls sideways; wider screens cap the chart's width. Each row's name sits above its bars, so a long
name wraps nothing. Each chart carries its title and a description with every number (`<title>`, `<desc>`,
aria-labelledby) and the template puts the same numbers in a table beside it. The deliverability charts draw
the providers' lines (reports.figures.THRESHOLDS) as dashed guides with their words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from reports.figures import THRESHOLDS, Line, Report

WIDTH = 360
LEFT = 4
VALUE_W = 58  # room right of the longest bar for its number
TOP = 30  # the guides' words: warn on the first line, stop on the second, so close guides never overlap
TOP_PLAIN = 8  # a chart without guides
SCALE_PAST_STOP = 4  # a chart with guides ends at most this many times past its stop line: the lines stay apart
NAME_H = 13  # a row's name above its bars
BAR_H = 9
BAR_GAP = 2
ROW_GAP = 7
MOST_ROWS = 12  # a chart shows the first rows; the table beside it has every row


@dataclass
class Bar:
    x: float
    y: float
    w: float
    h: float
    series: str
    value_x: float
    value_y: float
    text: str  # its number; "… »" when the bar runs past the chart's end


@dataclass
class Row:
    name: str
    name_y: float
    bars: list[Bar] = field(default_factory=list)
    note: str = ""  # "no sends" instead of bars


@dataclass
class Guide:
    x: float
    text: str
    text_x: float
    text_y: float
    anchor: str
    level: str  # warn | stop


@dataclass
class Chart:
    key: str  # its id on the page: chart-<key>
    title: str
    desc: str
    height: float
    rows: list[Row]
    guides: list[Guide]
    series: list[tuple[str, str]]  # (css class, words) for the legend
    headings: list[str]  # the table beside it
    table: list[list[str]]
    more: int = 0  # rows left out of the chart (the table has them)
    width: int = WIDTH
    left: int = LEFT
    top: int = TOP


def _pct(value: float | None, decimals: int) -> str:
    return "no sends" if value is None else f"{value:.{decimals}f} %"


def _nice(peak: float) -> float:
    """A round scale end at or above *peak*: 1, 2, 2.5, 5 times a power of ten."""
    if peak <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(peak))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= peak)


def _chart(key: str, title: str, lines: list[Line], series: list[tuple[str, str, str, int]],
           guides: tuple = (), headings: list[str] | None = None, extra: list | None = None) -> Chart:
    """*series*: (line attribute, css class, words, decimals) drawn as one bar each per row."""
    shown = lines[:MOST_ROWS]
    values = [line.get(name) for line in shown for name, *_ in series]
    peak = max([v for v in values if v is not None] + [g.stop * 1.2 for g in guides] + [0.0])
    if guides:  # a rate far past the lines would squeeze them against the axis: its bar runs off the end instead
        peak = min(peak, max(g.stop for g in guides) * SCALE_PAST_STOP)
    scale_end = _nice(peak)
    top = TOP if guides else TOP_PLAIN
    plot_w = WIDTH - LEFT - VALUE_W
    row_h = NAME_H + len(series) * (BAR_H + BAR_GAP) + ROW_GAP
    rows, table, words = [], [], []
    for i, line in enumerate(shown):
        y0 = top + i * row_h
        row = Row(name=line.short, name_y=round(y0 + 10, 1))
        said = []
        for j, (name, css, label, decimals) in enumerate(series):
            value = line.get(name)
            said.append(f"{label} {_pct(value, decimals)}")
            if value is None:
                row.note = "no sends"
                continue
            w = plot_w * min(value, scale_end) / scale_end
            y = y0 + NAME_H + j * (BAR_H + BAR_GAP)
            row.bars.append(Bar(x=LEFT, y=round(y, 1), w=round(max(w, 0.5), 1), h=BAR_H, series=css,
                                value_x=round(LEFT + w + 3, 1), value_y=round(y + BAR_H - 1, 1),
                                text=_pct(value, decimals) + (" »" if value > scale_end else "")))
        if row.note:
            row.bars = []
        rows.append(row)
        words.append(f"{line.short}: {', '.join(said)}")
    for line in lines:
        table.append([line.short, *(_pct(line.get(name), decimals) for name, _, _, decimals in series),
                      *((fn(line) for fn in extra) if extra else ())])
    drawn = []
    for threshold in guides:
        for n, (level, value) in enumerate((("warn", threshold.warn), ("stop", threshold.stop))):
            x = LEFT + plot_w * value / scale_end
            anchor = "start" if x < 30 else "end" if x > WIDTH - 30 else "middle"
            drawn.append(Guide(x=round(x, 1), text=f"{level} {value:g} %", text_x=round(x, 1), text_y=11 + 12 * n,
                               anchor=anchor, level=level))
    lines_words = "; ".join(words) if words else "nothing sent in this range"
    guide_words = "".join(f" Dashed lines: {g.text}." for g in drawn)
    return Chart(key=key, title=title, desc=f"{title}. {lines_words}.{guide_words}",
                 height=round(top + max(len(shown), 1) * row_h + 4, 1), rows=rows, guides=drawn, top=top,
                 series=[(css, label) for _, css, label, _ in series],
                 headings=headings or [], table=table, more=max(0, len(lines) - MOST_ROWS))


def charts(report: Report) -> list[Chart]:
    """Replies, bounces and complaints of the report's lines (the total is in the table)."""
    lines = report.lines
    bounce, complaint = THRESHOLDS["bounce_rate"], THRESHOLDS["complaint_rate"]
    return [
        _chart("replies", "Reply rate and positive rate, of the emails sent", lines,
               [("reply_rate", "reply", "reply rate", 1), ("positive_rate", "positive", "positive rate", 1)],
               headings=["", "Reply rate", "Positive rate", "Sent"], extra=[lambda line: str(line.counts["sent"])]),
        _chart("bounces", "Bounce rate (hard bounces), of the emails tried", lines,
               [("bounce_rate", "bounce", "bounce rate", 2)], guides=(bounce,),
               headings=["", "Bounce rate", "Hard bounces", "Level"],
               extra=[lambda line: str(line.counts["bounced_hard"]), lambda line: line.bounce_level]),
        _chart("complaints", "Complaint rate, of the emails delivered", lines,
               [("complaint_rate", "complaint", "complaint rate", 2)], guides=(complaint,),
               headings=["", "Complaint rate", "Complaints", "Level"],
               extra=[lambda line: str(line.counts["complained"]), lambda line: line.complaint_level]),
    ]
