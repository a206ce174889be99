"""A report: the rollup's counts for a date range, grouped by sequence, step, variant, mailbox, sending domain or
week, with the rates people act on and the providers' lines marked. One grouped read of `DailyFigures`.

The same `Report` is the page's table (ui/reports.py), its CSV and XLSX (reports.exports) and `manage.py report`,
so the three can never show different columns or numbers.

The days are the days (UTC) the messages were handed off: a report of a week is what the messages sent that week
brought back, however late it came (a reply next week counts for this week's messages).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.db.models import Sum

from mailboxes.models import Mailbox
from sequences.models import Sequence, Step, StepVariant
from sequences.variants import Arm, comparison_words
from workspaces.models import Workspace

from .models import COUNTS, DailyFigures

BY = {"sequence": "Sequence", "step": "Step", "variant": "Variant", "mailbox": "Mailbox",
      "domain": "Sending domain", "week": "Week", "workspace": "Workspace"}
LABELS = {"sequence": ("Sequence",), "step": ("Sequence", "Step"), "variant": ("Sequence", "Step", "Variant"),
          "mailbox": ("Mailbox", "Address"), "domain": ("Sending domain",), "week": ("Week of",),
          "workspace": ("Workspace",)}
_GROUP = {"sequence": ("sequence_id",), "step": ("sequence_id", "step_id"),
          "variant": ("sequence_id", "step_id", "variant_id"), "mailbox": ("mailbox_id",),
          "domain": ("mailbox_id",), "week": ("day",), "workspace": ("sequence__workspace_id",)}
# By workspace: every workspace's rows, for those who work across the install (the page and the command read it
# outside any one workspace's scope); inside one workspace it is that workspace's one row.


@dataclass(frozen=True)
class Threshold:
    """A provider's line for a rate: at or above `warn`, look now; at or above `stop`, sending is at risk."""

    warn: float  # percent
    stop: float
    source: str

    @property
    def words(self) -> str:
        return f"Warn at {self.warn:g} %, stop at {self.stop:g} % — {self.source}"

    def level(self, rate: float | None) -> str:
        if rate is None:
            return ""
        return "stop" if rate >= self.stop else "warn" if rate >= self.warn else "ok"


THRESHOLDS = {
    # Google's email sender guidelines: keep the spam rate reported in Postmaster Tools below 0.1 % and never let
    # it reach 0.3 %; Yahoo's sender best practices: keep the complaint rate below 0.3 %.
    "complaint_rate": Threshold(warn=0.1, stop=0.3, source="Gmail and Yahoo sender guidelines (spam rate under "
                                "0.1 %, never 0.3 % or more)"),
    # Amazon SES: an account with a bounce rate of 5 % or more is placed under review; at 10 % or more its
    # sending may be paused (hard bounces, of the messages sent).
    "bounce_rate": Threshold(warn=5.0, stop=10.0, source="Amazon SES (under review at 5 %, sending paused at "
                             "10 %, hard bounces)"),
}


@dataclass(frozen=True)
class Column:
    name: str  # an attribute of Line
    heading: str  # on the page and in the exports
    decimals: int | None = None  # a rate (percent): its decimals; None: a count or words


COLUMNS = (
    Column("sent", "Sent"),
    Column("delivered", "Delivered (as far as we know)"),
    Column("replied", "Replied"),
    Column("positive", "Positive"),
    Column("meeting", "Meetings booked"),
    Column("out_of_office", "Out of office"),
    Column("not_interested", "Not interested"),
    Column("unsubscribed", "Unsubscribed"),
    Column("bounced_hard", "Bounced (hard)"),
    Column("bounced_soft", "Bounced (soft)"),
    Column("complained", "Complained"),
    Column("reply_rate", "Reply rate (%)", 1),
    Column("positive_rate", "Positive rate (%)", 1),
    Column("meetings_per_100", "Meetings per 100 sent", 1),
    Column("bounce_rate", "Bounce rate (%)", 2),
    Column("bounce_level", "Bounce level"),
    Column("complaint_rate", "Complaint rate (%)", 2),
    Column("complaint_level", "Complaint level"),
)


def _per(n: int, base: int, per: float = 100.0) -> float | None:
    return per * n / base if base else None


@dataclass
class Line:
    """One row of a report: its labels (one per label column) and its counts."""

    labels: tuple
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    short: str = ""  # the row's name on a chart
    # A variant's row: its step's id. The verdicts compare a step's variants by it, never by the sequence's name,
    # which two workspaces may share (a report read across the install).
    step_id: int | None = None

    def add(self, counts: dict[str, int]) -> None:
        for name in COUNTS:
            self.counts[name] += counts.get(name) or 0

    @property
    def positive(self) -> int:
        return self.counts["interested"] + self.counts["meeting"]

    @property
    def reply_rate(self) -> float | None:
        return _per(self.counts["replied"], self.counts["sent"])

    @property
    def positive_rate(self) -> float | None:
        return _per(self.positive, self.counts["sent"])

    @property
    def meetings_per_100(self) -> float | None:
        return _per(self.counts["meeting"], self.counts["sent"])

    @property
    def bounce_rate(self) -> float | None:
        """Hard bounces of the messages tried (sent, or refused at the hand-off): the providers' measure."""
        return _per(self.counts["bounced_hard"], self.counts["tried"])

    @property
    def complaint_rate(self) -> float | None:
        """Complaints of the messages delivered as far as we know: Gmail's spam rate is of delivered mail."""
        return _per(self.counts["complained"], self.counts["delivered"])

    @property
    def bounce_level(self) -> str:
        return THRESHOLDS["bounce_rate"].level(self.bounce_rate)

    @property
    def complaint_level(self) -> str:
        return THRESHOLDS["complaint_rate"].level(self.complaint_rate)

    def get(self, name: str) -> int | float | str | None:
        return self.counts[name] if name in self.counts else getattr(self, name)

    def value(self, column: Column) -> int | float | str | None:
        """The cell: a count, a rate rounded to its column's decimals (None: nothing sent), or words."""
        v = self.get(column.name)
        return round(v, column.decimals) if column.decimals is not None and v is not None else v

    def text(self, column: Column) -> str:
        """The cell as the page and the CSV show it: rates with their column's decimals, "" for none."""
        v = self.get(column.name)
        if v is None:
            return ""
        return f"{v:.{column.decimals}f}" if column.decimals is not None else str(v)


@dataclass
class Report:
    by: str
    since: date | None
    until: date | None
    sequence: Sequence | None
    lines: list[Line]
    total: Line
    verdicts: list[tuple[str, str]] = field(default_factory=list)  # (step, the A/B comparison in words)

    @property
    def label_headings(self) -> tuple[str, ...]:
        return LABELS[self.by]

    @property
    def headings(self) -> list[str]:
        return [*LABELS[self.by], *(c.heading for c in COLUMNS)]

    def rows(self, *, text: bool = False) -> list[list]:
        """Every line, then the total: labels, then each column's value (as text for a CSV)."""
        return [[*line.labels, *((line.text(c) if text else line.value(c)) for c in COLUMNS)]
                for line in [*self.lines, self.total]]

    @property
    def by_words(self) -> str:
        return BY[self.by].lower()

    @property
    def range_words(self) -> str:
        if self.since and self.until:
            return f"from {self.since:%Y-%m-%d} to {self.until:%Y-%m-%d}"
        if self.since:
            return f"from {self.since:%Y-%m-%d}"
        if self.until:
            return f"up to {self.until:%Y-%m-%d}"
        return "at any time"


def report(*, by: str, sequence: Sequence | None = None, since: date | None = None,
           until: date | None = None, leave_out: Collection[int] = ()) -> Report:
    """The rollup's counts of messages handed off from *since* to *until* (days, inclusive, UTC), grouped *by*;
    without the sequences whose ids are in *leave_out* (those the weekly report is turned off for)."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}, not {by!r}")
    rows = DailyFigures.objects.order_by()
    if sequence is not None:
        rows = rows.filter(sequence=sequence)
    if leave_out:
        rows = rows.exclude(sequence_id__in=list(leave_out))
    if since is not None:
        rows = rows.filter(day__gte=since)
    if until is not None:
        rows = rows.filter(day__lte=until)
    if by == "variant":
        rows = rows.filter(variant__isnull=False)
    grouped = list(rows.values(*_GROUP[by]).annotate(**{name: Sum(name) for name in COUNTS}))
    lines = _LINES[by](grouped, one_sequence=sequence is not None)
    total = Line(labels=("Total",) + ("",) * (len(LABELS[by]) - 1))
    for line in lines:
        total.add(line.counts)
    found = Report(by=by, since=since, until=until, sequence=sequence, lines=lines, total=total)
    if by == "variant":
        found.verdicts = _verdicts(lines)
    return found


def _line(labels: tuple, counts: dict, short: str) -> Line:
    line = Line(labels=labels, short=short)
    line.add(counts)
    return line


def _sequence_names(ids: Collection[int]) -> dict[int, str]:
    """Each sequence's name; where sequences of two workspaces share a name (a report across the install), each
    is followed by its workspace's: "Onboarding (Acme)"."""
    rows = list(Sequence.objects.filter(pk__in=ids).values_list("pk", "name", "workspace__name"))
    shared = Counter(name for _, name, _ in rows)
    return {pk: f"{name} ({workspace})" if shared[name] > 1 else name for pk, name, workspace in rows}


def _by_sequence(grouped: list[dict], one_sequence: bool) -> list[Line]:
    names = _sequence_names({g["sequence_id"] for g in grouped})
    lines = [_line((names[g["sequence_id"]],), g, names[g["sequence_id"]]) for g in grouped]
    return sorted(lines, key=lambda line: line.labels[0].lower())


def _steps(grouped: list[dict]) -> tuple[dict[int, str], dict[int, int]]:
    names = _sequence_names({g["sequence_id"] for g in grouped})
    positions = dict(Step.objects.filter(pk__in={g["step_id"] for g in grouped}).values_list("pk", "position"))
    return names, positions


def _by_step(grouped: list[dict], one_sequence: bool) -> list[Line]:
    names, positions = _steps(grouped)
    lines = []
    for g in sorted(grouped, key=lambda g: (names[g["sequence_id"]].lower(), positions[g["step_id"]])):
        name, position = names[g["sequence_id"]], positions[g["step_id"]]
        lines.append(_line((name, position), g, f"Step {position}" if one_sequence else f"{name} · step {position}"))
    return lines


def _by_variant(grouped: list[dict], one_sequence: bool) -> list[Line]:
    names, positions = _steps(grouped)
    variants = dict(StepVariant.objects.filter(pk__in={g["variant_id"] for g in grouped}).values_list("pk", "name"))
    lines = []
    for g in sorted(grouped, key=lambda g: (names[g["sequence_id"]].lower(), positions[g["step_id"]], g["variant_id"])):
        name, position, variant = names[g["sequence_id"]], positions[g["step_id"]], variants[g["variant_id"]]
        short = f"Step {position} · {variant}" if one_sequence else f"{name} · step {position} · {variant}"
        line = _line((name, position, variant), g, short)
        line.step_id = g["step_id"]
        lines.append(line)
    return lines


def _mailboxes(grouped: list[dict]) -> dict[int, tuple[str, str]]:
    return {pk: (name, address) for pk, name, address in
            Mailbox.objects.filter(pk__in={g["mailbox_id"] for g in grouped}).values_list("pk", "name", "address")}


def _by_mailbox(grouped: list[dict], one_sequence: bool) -> list[Line]:
    boxes = _mailboxes(grouped)
    lines = [_line(boxes[g["mailbox_id"]], g, boxes[g["mailbox_id"]][0]) for g in grouped]
    return sorted(lines, key=lambda line: line.labels[0].lower())


def sending_domain(address: str) -> str:
    return address.rsplit("@", 1)[-1].lower()


def _by_domain(grouped: list[dict], one_sequence: bool) -> list[Line]:
    boxes = _mailboxes(grouped)
    domains: dict[str, Line] = {}
    for g in grouped:
        domain = sending_domain(boxes[g["mailbox_id"]][1])
        domains.setdefault(domain, Line(labels=(domain,), short=domain)).add(g)
    return [domains[d] for d in sorted(domains)]


def week_of(day: date) -> date:
    """The Monday of the day's ISO week."""
    return day - timedelta(days=day.weekday())


def _by_week(grouped: list[dict], one_sequence: bool) -> list[Line]:
    weeks: dict[date, Line] = {}
    for g in grouped:
        monday = week_of(g["day"])
        weeks.setdefault(monday, Line(labels=(monday.isoformat(),), short=f"{monday:%Y-%m-%d}")).add(g)
    return [weeks[w] for w in sorted(weeks)]


def _by_workspace(grouped: list[dict], one_sequence: bool) -> list[Line]:
    names = dict(Workspace.objects.filter(pk__in={g["sequence__workspace_id"] for g in grouped})
                 .values_list("pk", "name"))
    lines = [_line((names[g["sequence__workspace_id"]],), g, names[g["sequence__workspace_id"]]) for g in grouped]
    return sorted(lines, key=lambda line: line.labels[0].lower())


_LINES = {"sequence": _by_sequence, "step": _by_step, "variant": _by_variant, "mailbox": _by_mailbox,
          "domain": _by_domain, "week": _by_week, "workspace": _by_workspace}


def _verdicts(lines: list[Line]) -> list[tuple[str, str]]:
    """Per step with variants: how the variants' reply rates compare and how sure that is (sequences.variants, the
    words of the sequence page's variant results)."""
    steps: dict[int | None, list[Arm]] = defaultdict(list)
    titles: dict[int | None, str] = {}
    for line in lines:
        sequence_name, position, variant = line.labels
        titles[line.step_id] = f"{sequence_name} · step {position}"
        steps[line.step_id].append(Arm(variant, line.counts["sent"], line.counts["replied"]))
    return [(titles[step], comparison_words(arms)) for step, arms in steps.items()]
