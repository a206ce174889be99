"""The reports page (/reports/) and its exports: what the messages sent in a date range brought back, by sequence,
step, variant, mailbox, sending domain or week, read from the scheduler's rollup (reports.rollup), never from
the jobs. The same roles as the results on the sequence pages: anyone who may see sequences.

The rollup runs once a minute. When its last run is older than STALE (no scheduler running, as on a quick
local install), the page rolls up first, as the dashboard counts itself (ui/dashboard_counts.py).
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse

from db.clock import db_now
from reports.exports import XLSX_TYPE, report_csv, report_filename, report_xlsx
from reports.figures import BY, COLUMNS, THRESHOLDS, Report, report
from reports.models import RollupMark
from reports.rollup import MARK, rollup
from sequences.models import Sequence
from sequences.permissions import VIEW
from sequences.variants import MIN_SENDS
from workspaces.scoping import workspace_unscoped

from . import report_charts
from .access import ui_view

STALE = timedelta(minutes=3)
LEVEL_WORDS = {"ok": "OK", "warn": "Warn", "stop": "Stop", "": ""}
# Where the table's long heading words may break on a narrow column (a soft hyphen, shown only at a break): the
# eighteen figures then fit a 1366 px screen. The exports' headings have none.
SOFT_BREAKS = {"Unsubscribed": "Unsub\u00adscribed", "Complained": "Com\u00adplained",
               "interested": "inter\u00adested", "Delivered": "Deliv\u00adered", "Complaint": "Com\u00adplaint",
               "Meetings": "Meet\u00adings", "Positive": "Posi\u00adtive"}


def _heading(heading: str) -> str:
    return " ".join(SOFT_BREAKS.get(word, word) for word in heading.split(" "))


class ReportFilter(forms.Form):
    by = forms.ChoiceField(choices=list(BY.items()), required=False, label="Group by")
    # Its rows are set per form: the request's workspace's sequences (a class-level queryset would be built once,
    # outside any request, and see every workspace's).
    sequence = forms.ModelChoiceField(queryset=Sequence.objects.none(), required=False, empty_label="All sequences")
    since = forms.DateField(required=False, label="Sent from", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="Sent up to", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, across: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["sequence"].queryset = Sequence.objects.order_by("name")
        self.fields["by"].choices = list(groupings(across).items())

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            raise forms.ValidationError("“Sent from” is after “Sent up to”: nothing could be counted.")
        data["by"] = data.get("by") or "sequence"
        return data


def rolled_up() -> RollupMark:
    """The rollup's mark, after a run of its own when the scheduler's last one is older than STALE."""
    mark = RollupMark.objects.filter(pk=MARK).first()
    if mark is None or mark.rolled_at is None or mark.rolled_at < db_now() - STALE:
        rollup()
        mark = RollupMark.objects.get(pk=MARK)
    return mark


def across_workspaces(request) -> bool:
    """Whether the user works across an install of several workspaces (no membership: the agency's people), and so
    may compare the workspaces."""
    return not getattr(request, "workspace_sole", True) and getattr(request.user, "workspace_role", None) is None


def groupings(across: bool) -> dict[str, str]:
    """The ways the page groups its rows: by workspace only for those who work across the install."""
    return {key: words for key, words in BY.items() if key != "workspace" or across}


def _report(form: ReportFilter) -> Report:
    data = form.cleaned_data
    if data["by"] == "workspace":  # every workspace's rows: read outside the request's workspace
        with workspace_unscoped():
            return report(by="workspace", sequence=data["sequence"], since=data["since"], until=data["until"])
    return report(by=data["by"], sequence=data["sequence"], since=data["since"], until=data["until"])


def _query(request, **change) -> str:
    params = request.GET.copy()
    for key, value in change.items():
        params[key] = value
    return params.urlencode()


def _labels(found: Report, line) -> list[tuple[str, str, str]]:
    """(column heading, text, css class) for each label of a line: names wrap, a step's number does not."""
    return [(heading, label, "wrap" if isinstance(label, str) and label else "")
            for heading, label in zip(found.label_headings, line.labels, strict=True)]


def _cells(line) -> list[tuple[str, str, str]]:
    """(column heading, text, css class) for each column of a line."""
    cells = []
    for column in COLUMNS:
        text = line.text(column)
        css = "right nowrap"
        if column.name.endswith("_level"):
            css = f"level {text}" if text else ""
            text = LEVEL_WORDS[text]
        cells.append((column.heading, text, css))
    return cells


@ui_view(VIEW)
def reports_page(request):
    across = across_workspaces(request)
    form = ReportFilter(request.GET, across=across)
    context = {"form": form, "headings": [_heading(c.heading) for c in COLUMNS], "thresholds": THRESHOLDS,
               "min_sends": MIN_SENDS}
    if form.is_valid():
        mark = rolled_up()
        found = _report(form)
        context |= {
            "report": found, "mark": mark, "charts": report_charts.charts(found),
            "rows": [(_labels(found, line), _cells(line)) for line in found.lines],
            "total": (_labels(found, found.total), _cells(found.total)),
            "tabs": [(key, words, "?" + _query(request, by=key)) for key, words in groupings(across).items()],
            "csv_url": reverse("report_export_csv") + "?" + _query(request, by=found.by),
            "xlsx_url": reverse("report_export_xlsx") + "?" + _query(request, by=found.by),
        }
    return render(request, "ui/reports.html", context)


def _export(request, extension: str) -> HttpResponse:
    form = ReportFilter(request.GET, across=across_workspaces(request))
    if not form.is_valid():
        return HttpResponse(" ".join(e for errors in form.errors.values() for e in errors), status=400,
                            content_type="text/plain; charset=utf-8")
    rolled_up()
    found = _report(form)
    if extension == "csv":
        response = HttpResponse(report_csv(found), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(report_xlsx(found), content_type=XLSX_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{report_filename(found, extension)}"'
    return response


@ui_view(VIEW)
def report_export_csv(request):
    return _export(request, "csv")


@ui_view(VIEW)
def report_export_xlsx(request):
    return _export(request, "xlsx")
