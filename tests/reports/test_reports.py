"""Reports (/reports/, its CSV and XLSX, manage.py report) against a campaign with known outcomes, and the rollup
they read: incremental (a run counts again only the people the timeline names) and idempotent (a run repeated, or
a rebuild from nothing, gives the same numbers)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from openpyxl import load_workbook

from inbound.replies.services import conversation_categorize
from proving.harness import mails
from reports import rollup as rollup_module
from reports.figures import BY, COLUMNS, report
from reports.models import DailyFigures, PersonFigures
from reports.rollup import rollup, rollup_rebuild
from reports.tasks import reports_rollup
from sequences.models import Sequence
from sequences.spreadsheet import unformula
from sequences.variants import Arm, comparison_words
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.reports.conftest import SPRING, ingest, sent_job, work
from tests.ui.conftest import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)
LABELS = {"sequence": ["Sequence"], "step": ["Sequence", "Step"], "variant": ["Sequence", "Step", "Variant"],
          "mailbox": ["Mailbox", "Address"], "domain": ["Sending domain"], "week": ["Week of"]}


def _rate(n: int, base: int, decimals: int) -> str:
    return f"{100 * n / base:.{decimals}f}" if base else ""


def _level(n: int, base: int, warn: float, stop: float) -> str:
    if not base:
        return ""
    rate = 100 * n / base
    return "stop" if rate >= stop else "warn" if rate >= warn else "ok"


def truth_texts(c: dict[str, int]) -> list[str]:
    """The report's columns for these counts, worked out here from the definitions (not from reports.figures)."""
    positive = c["interested"] + c["meeting"]
    counts = [c["sent"], c["delivered"], c["replied"], positive, c["meeting"], c["out_of_office"],
              c["not_interested"], c["unsubscribed"], c["bounced_hard"], c["bounced_soft"], c["complained"]]
    return [str(n) for n in counts] + [
        _rate(c["replied"], c["sent"], 1), _rate(positive, c["sent"], 1), _rate(c["meeting"], c["sent"], 1),
        _rate(c["bounced_hard"], c["tried"], 2), _level(c["bounced_hard"], c["tried"], 5, 10),
        _rate(c["complained"], c["delivered"], 2), _level(c["complained"], c["delivered"], 0.1, 0.3),
    ]


def truth_rows(campaign, by: str, sequence: str | None) -> list[list[str]]:
    """Every expected row as text, labels first, then the total, in no particular order but the total last."""
    expected = campaign.expected(by, sequence)
    rows = sorted([[str(label) for label in labels] + truth_texts(c) for labels, c in expected.items()])
    total = {name: sum(c[name] for c in expected.values()) for name in next(iter(expected.values()))}
    return rows + [["Total"] + [""] * (len(LABELS[by]) - 1) + truth_texts(total)]


def _sorted(rows: list[list[str]]) -> list[list[str]]:
    return sorted(rows[:-1]) + rows[-1:]


class _Table(HTMLParser):
    """The rows of #report-table as text, cell by cell."""

    def __init__(self):
        super().__init__()
        self.rows, self.inside, self.cell = [], False, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id") == "report-table":
            self.inside = True
        elif self.inside and tag == "tr" and "data-row" in attrs:
            self.rows.append([])
        elif self.inside and tag == "td" and self.rows:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif tag == "td" and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def page_rows(html: str) -> list[list[str]]:
    table = _Table()
    table.feed(html)
    levels = {"OK": "ok", "Warn": "warn", "Stop": "stop"}
    return [[levels.get(cell, cell) for cell in row] for row in table.rows]


def xlsx_rows(content: bytes) -> list[list[str]]:
    sheet = load_workbook(io.BytesIO(content)).active
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    decimals = [None] * (len(rows[0]) - len(COLUMNS)) + [c.decimals for c in COLUMNS]
    out = []
    for row in rows[1:]:
        out.append([("" if v is None else f"{v:.{d}f}" if d is not None else unformula(str(v)))
                    for v, d in zip(row, decimals, strict=True)])
    return [rows[0]] + out


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_every_figure_on_the_page_in_the_csv_the_xlsx_and_the_command_equals_the_ground_truth(
        campaign, users, tmp_path):
    assert reports_rollup().startswith("reports rolled up: ")  # what the scheduler runs once a minute
    # An operator marks the reply to the follow-up Meeting booked: the rollup takes it in on its next run.
    p8 = campaign.people["p8@acme2.test"]
    conversation_categorize(conversation_id=p8.pk, category="meeting", actor="tester")
    campaign.last("p8@acme2.test").counts.update(interested=0, meeting=1)
    rollup()
    client = logged_in(users["staff"])  # the role that reads results
    spring = campaign.sequences[SPRING]

    for by in (by for by in BY if by != "workspace"):  # one workspace here: tests/workspaces compares several
        for sequence in (None, spring):
            name = sequence.name if sequence else None
            truth = truth_rows(campaign, by, name)
            headings = LABELS[by] + [c.heading for c in COLUMNS]
            query = f"?by={by}" + (f"&sequence={sequence.pk}" if sequence else "")

            page = client.get("/reports/" + query)
            assert page.status_code == 200
            assert _sorted(page_rows(page.content.decode())) == truth, (by, name, "page")

            exported = client.get("/reports/export.csv" + query)
            header, *lines = list(csv.reader(io.StringIO(exported.content.decode())))
            assert header == headings and _sorted([[unformula(c) for c in line] for line in lines]) == truth, \
                (by, name, "csv")

            workbook = client.get("/reports/export.xlsx" + query)
            assert workbook["Content-Type"].startswith("application/vnd.openxmlformats")
            header, *lines = xlsx_rows(workbook.content)
            assert header == headings and _sorted(lines) == truth, (by, name, "xlsx")

            args = ["--by", by, *(["--sequence", name] if name else [])]
            out = tmp_path / f"{by}-{bool(name)}.csv"
            call_command("report", *args, "--format", "csv", "--output", str(out))
            header, *lines = list(csv.reader(out.open(encoding="utf-8")))
            assert header == headings and _sorted([[unformula(c) for c in line] for line in lines]) == truth, \
                (by, name, "command csv")
            out = tmp_path / f"{by}-{bool(name)}.xlsx"
            call_command("report", *args, "--format", "xlsx", "--output", str(out), "--no-rollup")
            header, *lines = xlsx_rows(out.read_bytes())
            assert _sorted(lines) == truth, (by, name, "command xlsx")

    # The A/B comparison in words, with the sample-size caveat, from the sends and replies the test counted.
    arms = [Arm(v, sum(m.counts["sent"] for m in campaign.messages if m.variant == v),
                sum(m.counts["replied"] for m in campaign.messages if m.variant == v)) for v in ("A", "B")]
    page = client.get(f"/reports/?by=variant&sequence={spring.pk}").content.decode()
    assert comparison_words(arms) in page.replace("&#x27;", "'")
    assert "Too early to tell" in comparison_words(arms)
    # The levels are marked against the providers' lines, which the page names with their sources.
    assert "Gmail and Yahoo sender guidelines" in page and "Amazon SES" in page


def test_the_figures_of_one_date_range_leave_out_the_days_outside_it(campaign, users):
    rollup()
    day = campaign.messages[0].day
    client = logged_in(users["operator"])
    before = client.get(f"/reports/?by=week&until={day - timedelta(days=1)}").content.decode()
    assert page_rows(before) == [], "nothing was sent before the campaign's day"
    inside = page_rows(client.get(f"/reports/?by=week&since={day}&until={day}").content.decode())
    assert _sorted(inside) == truth_rows(campaign, "week", None)
    wrong = client.get(f"/reports/?since={day}&until={day - timedelta(days=1)}")
    assert "is after" in wrong.content.decode() and "report-table" not in wrong.content.decode()


def _snapshot() -> list[tuple]:
    return sorted((r.day, r.sequence_id, r.step_id, r.variant_id or 0, r.mailbox_id, *r.counts().values())
                  for r in DailyFigures.objects.all())


def test_the_rollup_is_idempotent_and_counts_again_only_the_people_the_timeline_names(campaign, monkeypatch):
    first = rollup()
    counted = sum(len(p.messages) for p in PersonFigures.objects.all())
    assert first.enrollments >= len(campaign.people) and first.messages == counted == 16  # 15 sent, 1 refused
    numbers = _snapshot()
    again = rollup()
    assert again.messages == 0 and _snapshot() == numbers, "run twice: the same numbers"
    assert rollup_rebuild().messages == counted and _snapshot() == numbers, \
        "counted again from nothing: the same numbers"
    assert {k: sum(getattr(r, k) for r in DailyFigures.objects.all()) for k in ("sent", "replied")} == \
        {"sent": 15, "replied": 3}

    # Nothing re-read: the next run counts again the one person an operator's new category names, and the days
    # change by exactly that.
    monkeypatch.setattr(rollup_module, "OVERLAP", timedelta(0))
    rollup()
    p0 = campaign.people["p0@acme0.test"]
    conversation_categorize(conversation_id=p0.pk, category="meeting", actor="tester")
    run = rollup()
    assert (run.enrollments, run.messages) == (1, 1)
    changed = {row[:5]: row[5:] for row in _snapshot()}
    for key, counts in {row[:5]: row[5:] for row in numbers}.items():
        diff = [a - b for a, b in zip(changed[key], counts, strict=True)]
        interested, meeting = 3, 4  # positions in COUNTS
        if any(diff):
            assert diff[interested] == -1 and diff[meeting] == 1 and sum(map(abs, diff)) == 2
    assert rollup().messages == 0


def test_the_page_reads_the_rollup_and_never_the_jobs(campaign, users):
    rollup()
    client = logged_in(users["staff"])
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/reports/?by=step").status_code == 200
    read = " ".join(q["sql"] for q in queries.captured_queries)
    assert "reports_dailyfigures" in read
    for table in ("sequences_sendjob", "sequences_timelineevent", "mailboxes_inboundmessage", "inbound_conversation"):
        assert table not in read, f"the page read {table}"


def test_the_command_says_what_is_wrong_in_words(db, tmp_path):
    make_sequence(mailbox=MailboxFactory(), steps=1, name="Real one")
    with pytest.raises(CommandError, match=r"no sequence is named 'Nope' \(names are exact; sequences: 'Real one'\)"):
        call_command("report", "--sequence", "Nope", "--by", "step")
    with pytest.raises(CommandError, match=r"--since '2026-13-01' is not a date: write it as YYYY-MM-DD"):
        call_command("report", "--since", "2026-13-01")
    with pytest.raises(CommandError, match=r"--since 2026-02-01 is after --until 2026-01-01"):
        call_command("report", "--since", "2026-02-01", "--until", "2026-01-01")
    with pytest.raises(CommandError, match=r"--format xlsx needs --output FILE"):
        call_command("report", "--format", "xlsx")
    with pytest.raises(CommandError, match=r"invalid choice: 'person'"):
        call_command("report", "--by", "person")
    out = io.StringIO()
    call_command("report", "--by", "week", stdout=out)  # nothing sent yet: the header and a total of zeros
    header, total = list(csv.reader(io.StringIO(out.getvalue())))
    assert header[:2] == ["Week of", "Sent"] and total[:2] == ["Total", "0"]


def test_names_that_look_like_formulas_are_text_in_every_export(smtp_server, redis_conn, users, tmp_path):
    mailbox = MailboxFactory(name="=cmd|' /C calc'!A0", address="sales@formula.test", smtp_port=smtp_server.port)
    sequence = make_sequence(mailbox=mailbox, steps=1, name="=HYPERLINK(\"http://x.test\")",
                             body="Step {position} of other for {{ first_name }}.")
    enroll(sequence, "ada@formula.test")
    work(smtp_server, expect=1)
    rollup()
    client = logged_in(users["staff"])
    text = client.get("/reports/export.csv?by=mailbox").content.decode()
    assert "'=cmd|' /C calc'!A0" in text and "\n=" not in text
    sheet = load_workbook(io.BytesIO(client.get(f"/reports/export.xlsx?by=step&sequence={sequence.pk}").content)).active
    cell = sheet["A2"]
    assert cell.data_type == "s" and cell.value == "'" + sequence.name, "stored as text, shown with its apostrophe"
    assert unformula(cell.value) == Sequence.objects.get().name


@pytest.mark.one_database("who may open a page")
def test_who_may_read_the_reports(users, django_user_model):
    assert Client().get("/reports/").status_code == 302  # to the login page
    nobody = django_user_model.objects.create_user(username="nobody", password=PASSWORD)
    assert logged_in(nobody).get("/reports/").status_code == 403
    assert logged_in(nobody).get("/reports/export.csv").status_code == 403
    for role in ("staff", "operator", "admin"):
        assert logged_in(users[role]).get("/reports/").status_code == 200
    assert b'href="/reports/"' in logged_in(users["staff"]).get("/").content, "in the navigation"


def test_a_reply_counts_in_the_sequence_whose_message_it_answers_not_where_it_only_stopped_the_person(
        smtp_server, redis_conn):
    """The reply stops the person everywhere, with the stop reason 'replied' in the other sequence too; the report
    counts it only where the message it answers was sent."""
    mailbox = MailboxFactory(smtp_port=smtp_server.port)
    answered = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Answered",
                             body="Step {position} of spring for {{ first_name }}.")
    elsewhere = make_sequence(mailbox=mailbox, steps=2, waits=(0, 3600), name="Elsewhere",
                              body="Step {position} of other for {{ first_name }}.")
    enroll(answered, "ada@acme.test")
    stopped_too = enroll(elsewhere, "ada@acme.test")
    work(smtp_server, expect=2)
    job = sent_job("ada@acme.test", 1, sequence="Answered")
    ingest(mails.reply(to_message_id=job.message_id, sender="ada@acme.test", body="Not interested, thanks."),
           job=job, uid=1)
    stopped_too.refresh_from_db()
    assert (stopped_too.status, stopped_too.stop_reason) == ("stopped", "replied")
    rollup()
    assert report(by="sequence", sequence=answered).total.counts["replied"] == 1
    assert report(by="sequence", sequence=elsewhere).total.counts["replied"] == 0
    assert report(by="sequence", sequence=elsewhere).total.counts["sent"] == 1
