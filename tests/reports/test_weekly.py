"""The weekly report by email (reports.weekly, reports.weekly_send, manage.py weekly_report, /reports/weekly/),
sent through the install's own mail to a real SMTP server (aiosmtpd): its figures and its CSV equal the reports
page's for the week, a sequence turned off is absent, a week goes out once (twice run, two at once), a refused
send is recorded in words and sent on the next run, and only admins choose who receives it."""

from __future__ import annotations

import csv
import importlib
import io
import threading
import time
from datetime import date, timedelta
from email import message_from_bytes, policy
from html.parser import HTMLParser

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from proving.harness.stack import free_port
from reports.figures import COLUMNS, week_of
from reports.models import WeeklyReportRecipient, WeeklyReportSequence, WeeklyReportWeek, WeekState
from reports.rollup import rollup
from reports.weekly import SHOWN, last_complete_week
from reports.weekly_send import (
    STALE,
    WeeklyReportError,
    report_week_send,
    week_claim,
    weekly_recipients_set,
    weekly_sequences_set,
)
from sequences.models import OperatorAction
from sequences.spreadsheet import unformula
from tests.factories import MailboxFactory, make_sequence
from tests.races.helpers import Worker
from tests.reports.conftest import OTHER, SPRING
from tests.reports.test_reports import LABELS, page_rows, truth_rows

pytestmark = pytest.mark.django_db(transaction=True)
FROM = "reports@install.test"
_grant = importlib.import_module("reports.migrations.0002_weekly_report").weekly_perm_grant


@pytest.fixture
def install_smtp(settings, smtp_server):
    """The install's own mail, to the test SMTP server on loopback."""
    settings.OUTREACH_INSTALL_SMTP_HOST, settings.OUTREACH_INSTALL_SMTP_PORT = "127.0.0.1", smtp_server.port
    settings.OUTREACH_INSTALL_SMTP_SECURITY, settings.OUTREACH_INSTALL_SMTP_USERNAME = "none", ""
    settings.OUTREACH_INSTALL_MAIL_FROM = FROM
    settings.OUTREACH_PUBLIC_URL = "https://outreach.example.test"
    return smtp_server


@pytest.fixture
def people(users):
    """The UI's users per role, with addresses, and the admins' permission of the weekly report (recreated after a
    transactional test's flush, as the migration made it)."""
    from django.apps import apps

    _grant(apps)
    for role, user in users.items():
        user.email = f"{role}@install.test"
        user.save(update_fields=["email"])
    return users


def reports_mail(server) -> list:
    return [message_from_bytes(r.data, policy=policy.default) for r in server.received if r.sender == FROM]


class _Figures(HTMLParser):
    """{sequence name or "Total": {figure name: text}} from the mail's tables (data-sequence, data-figure)."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, dict[str, str]] = {}
        self.table: str | None = None
        self.figure: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "data-sequence" in attrs:
            self.table = "Total" if attrs.get("data-total") else attrs["data-sequence"]
            self.tables[self.table] = {}
        elif tag == "td" and "data-figure" in attrs and self.table:
            self.figure = attrs["data-figure"]
            self.tables[self.table][self.figure] = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self.figure = None

    def handle_data(self, data):
        if self.figure:
            self.tables[self.table][self.figure] += data.strip()


def mail_figures(html: str) -> dict[str, dict[str, str]]:
    parser = _Figures()
    parser.feed(html)
    levels = {"OK": "ok", "Warn": "warn", "Stop": "stop"}
    return {name: {k: levels.get(v, v) for k, v in figures.items()} for name, figures in parser.tables.items()}


def as_figures(rows: list[list[str]]) -> dict[str, dict[str, str]]:
    """The page's (or a CSV's) rows by sequence, as {name: {figure name: text}} for the figures the mail shows."""
    names = [c.name for c in COLUMNS]
    return {row[0]: {name: row[1 + names.index(name)] for name in SHOWN} for row in rows}


def csv_rows(message) -> tuple[str, list[list[str]]]:
    (attachment,) = list(message.iter_attachments())
    header, *rows = list(csv.reader(io.StringIO(attachment.get_content())))
    assert header == LABELS["sequence"] + [c.heading for c in COLUMNS]
    return attachment.get_filename(), [[unformula(cell) for cell in row] for row in rows]


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_mail_shows_the_reports_page_figures_of_the_week_and_attaches_them_as_csv(
        campaign, install_smtp, people):
    rollup()
    day = campaign.messages[0].day
    monday, sunday = week_of(day), week_of(day) + timedelta(days=6)
    weekly_recipients_set(user_ids=[people["staff"].pk, people["admin"].pk], actor="tester")

    outcome = report_week_send(today=monday + timedelta(days=7))  # the Monday after: the week is complete
    assert outcome.sent and outcome.week == monday, outcome.words
    (mail,) = reports_mail(install_smtp)
    assert mail["To"] == "admin@install.test, staff@install.test" and mail["From"] == FROM
    assert mail["Subject"].startswith(f"Weekly report, {monday} to {sunday}: 15 sent, 3 replied")

    page = logged_in(people["staff"]).get(f"/reports/?by=sequence&since={monday}&until={sunday}").content.decode()
    shown = page_rows(page)
    assert sorted(shown[:-1]) + shown[-1:] == truth_rows(campaign, "sequence", None), "the page is the truth"
    html = mail.get_body(("html",)).get_content()
    assert mail_figures(html) == as_figures(shown), "the mail's figures are the page's"
    filename, rows = csv_rows(mail)
    assert rows == shown and filename == f"report-by-sequence-from-{monday}-to-{sunday}.csv"
    # The chart (table cells, no SVG, no image), the providers' lines in words, the link to the week's page.
    assert "<svg" not in html and "<img" not in html and 'id="weekly-chart"' in html
    assert "Amazon SES" in html and "Gmail and Yahoo sender guidelines" in html
    assert (f'href="https://outreach.example.test/reports/?by=sequence&amp;since={monday}&amp;until={sunday}"'
            in html)
    text = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert f"{SPRING}\n  Sent: 14\n  Replied: 3\n" in text
    # No contact data: none of the people's addresses or names is in the mail.
    raw = next(r.data for r in install_smtp.received if r.sender == FROM).decode("utf-8", "replace")
    for email in campaign.people:
        assert email not in raw and email.split("@")[1] not in raw
    week = WeeklyReportWeek.objects.get()
    assert (week.week, week.state, week.recipients, week.attempts) == (
        monday, WeekState.SENT, ["admin@install.test", "staff@install.test"], 1)

    # A sequence turned off is absent: a copy of the same week, from the command, has Spring launch alone.
    weekly_sequences_set(enabled_ids=[campaign.sequences[SPRING].pk], actor="tester")
    out = io.StringIO()
    call_command("weekly_report", "--week", str(sunday), "--to", "operator@install.test", stdout=out)
    assert "a copy of the weekly report" in out.getvalue()
    copy = reports_mail(install_smtp)[-1]
    assert copy["To"] == "operator@install.test"
    spring_only = page_rows(logged_in(people["staff"]).get(
        f"/reports/?by=sequence&sequence={campaign.sequences[SPRING].pk}&since={monday}&until={sunday}")
        .content.decode())
    figures = mail_figures(copy.get_body(("html",)).get_content())
    assert OTHER not in figures and figures == as_figures(spring_only)
    assert OTHER not in copy.get_body(("plain",)).get_content()
    assert csv_rows(copy)[1] == spring_only
    assert WeeklyReportWeek.objects.get().attempts == 1, "a copy is not the week's send"


def test_a_week_is_sent_once_when_run_twice_and_when_two_runs_meet(install_smtp, people):
    weekly_recipients_set(user_ids=[people["operator"].pk], actor="tester")
    today = date(2026, 3, 4)  # a Wednesday: the last complete week began on Monday 2026-02-23
    first = report_week_send(today=today)
    again = report_week_send(today=today)
    assert first.sent and not again.sent and first.week == date(2026, 2, 23)
    assert again.words == "the weekly report of the week of 2026-02-23 was already sent, to operator@install.test"
    assert len(reports_mail(install_smtp)) == 1

    # Two runs at once: the first is inside DATA (the server holds its answer) when the second comes.
    install_smtp.hold()
    today += timedelta(days=7)
    sending = Worker(lambda: report_week_send(today=today))
    sending.start()
    deadline = time.monotonic() + 10
    while len(install_smtp.arrived_ids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(install_smtp.arrived_ids()) == 2, "the first run's mail never reached DATA"
    second = report_week_send(today=today)
    assert not second.sent and "is being sent" in second.words
    install_smtp.release()
    assert sending.outcome().sent
    assert install_smtp.wait_for(2, 5) and len(reports_mail(install_smtp)) == 2

    # Two runs started together, each its own thread and connection: one mail.
    today += timedelta(days=7)
    barrier = threading.Barrier(2)

    def run():
        barrier.wait(5)
        return report_week_send(today=today)

    runs = [Worker(run), Worker(run)]
    for worker in runs:
        worker.start()
    outcomes = [worker.outcome() for worker in runs]
    assert sorted(o.sent for o in outcomes) == [False, True], [o.words for o in outcomes]
    assert len(reports_mail(install_smtp)) == 3, "each send returned after the server took its mail"
    assert list(WeeklyReportWeek.objects.order_by("week").values_list("state", "attempts")) == [
        (WeekState.SENT, 1)] * 3


def test_a_refused_send_is_recorded_in_words_and_sent_on_the_next_run(install_smtp, people, settings):
    weekly_recipients_set(user_ids=[people["admin"].pk], actor="tester")
    today = date(2026, 3, 4)
    install_smtp.behaviour.mail_reply = "550 5.7.1 <reports@install.test>: Sender address rejected"
    refused = report_week_send(today=today)
    assert not refused.sent and "the next run tries again" in refused.words
    week = WeeklyReportWeek.objects.get()
    assert week.state == WeekState.FAILED and "Sender address rejected" in week.error and "550" in week.error
    page = logged_in(people["staff"]).get("/reports/weekly/").content.decode()
    assert "Sender address rejected" in page and "tried again on the next run" in page

    # No server at the port: refused in words too, and the week stays to be sent.
    port = settings.OUTREACH_INSTALL_SMTP_PORT
    settings.OUTREACH_INSTALL_SMTP_PORT = free_port()
    unreachable = report_week_send(today=today)
    week.refresh_from_db()
    assert not unreachable.sent and week.state == WeekState.FAILED and week.attempts == 2
    assert "could not be reached" in week.error

    settings.OUTREACH_INSTALL_SMTP_PORT = port
    install_smtp.behaviour.mail_reply = None
    assert report_week_send(today=today).sent
    week.refresh_from_db()
    assert (week.state, week.attempts, week.error) == (WeekState.SENT, 3, "")
    assert len(reports_mail(install_smtp)) == 1
    assert not report_week_send(today=today).sent, "sent: not again"


def test_a_send_that_stopped_midway_is_not_sent_again_on_its_own(install_smtp, people):
    weekly_recipients_set(user_ids=[people["admin"].pk], actor="tester")
    monday = date(2026, 2, 23)
    claim = week_claim(week=monday, to=["admin@install.test"], by="a worker that died")
    assert claim is not None and week_claim(week=monday, to=[], by="another") is None
    WeeklyReportWeek.objects.filter(pk=claim.pk).update(claimed_at=claim.claimed_at - STALE - timedelta(minutes=1))
    outcome = report_week_send(today=date(2026, 3, 4))
    claim.refresh_from_db()
    assert not outcome.sent and claim.state == WeekState.UNKNOWN and "may have left" in claim.error
    assert reports_mail(install_smtp) == []
    out = io.StringIO()
    call_command("weekly_report", "--week", "2026-02-25", stdout=out)  # asked for: sent again
    claim.refresh_from_db()
    assert claim.state == WeekState.SENT and claim.by == "manage.py weekly_report" and claim.attempts == 2
    assert len(reports_mail(install_smtp)) == 1


def test_only_admins_choose_who_receives_it_and_which_sequences_it_covers(install_smtp, people, django_user_model):
    mailbox = MailboxFactory()
    spring, other = make_sequence(mailbox=mailbox, steps=1, name=SPRING), make_sequence(mailbox=mailbox, steps=1,
                                                                                         name=OTHER)
    form = {"recipients": [people["staff"].pk, people["operator"].pk], "sequences": [spring.pk]}
    for role in ("staff", "operator"):
        client = logged_in(people[role])
        page = client.get("/reports/weekly/")
        assert page.status_code == 200 and "changing them needs the admins role" in page.content.decode()
        assert b'type="submit">Save' not in page.content
        assert client.post("/reports/weekly/", form).status_code == 403
    assert not WeeklyReportRecipient.objects.exists() and not OperatorAction.objects.filter(
        action__startswith="weekly_report").exists()
    assert Client().get("/reports/weekly/").status_code == 302
    nobody = django_user_model.objects.create_user(username="nobody", email="nobody@install.test")
    assert logged_in(nobody).get("/reports/weekly/").status_code == 403

    admin = logged_in(people["admin"])
    page = admin.get("/reports/weekly/").content.decode()
    assert f"sent through 127.0.0.1:{install_smtp.port} from {FROM}" in page, "where the mail goes"
    assert "nobody@install.test" not in page, "a user whose role may not see results is not offered"
    assert admin.post("/reports/weekly/", form).status_code == 302
    assert set(WeeklyReportRecipient.objects.values_list("user__username", flat=True)) == {
        "staff-user", "operator-user"}
    log = OperatorAction.objects.get(action="weekly_report_sequences")
    assert (log.actor, log.result) == ("admin-user", {"on": [], "off": [OTHER]})
    assert list(WeeklyReportSequence.objects.values_list("sequence_id", "enabled")) == [(other.pk, False)]
    page = admin.get("/reports/weekly/").content.decode()
    assert "No weekly report sent yet" in page and "sequences turned off: Other list" in page

    # A chosen user who can no longer receive it is named with the reason, and not sent to.
    django_user_model.objects.filter(pk=people["operator"].pk).update(email="")
    page = admin.get("/reports/weekly/").content.decode()
    assert "not sent to <strong>operator-user</strong>: they have no email address" in page
    outcome = report_week_send(today=date(2026, 3, 4))
    assert outcome.sent and reports_mail(install_smtp)[-1]["To"] == "staff@install.test"
    with pytest.raises(WeeklyReportError, match="cannot go to nobody: their role may not see results"):
        weekly_recipients_set(user_ids=[nobody.pk], actor="tester")


def test_the_page_renders_at_a_phone_width_with_the_weeks_sent(install_smtp, people):
    weekly_recipients_set(user_ids=[people["admin"].pk], actor="tester")
    assert report_week_send(today=date(2026, 3, 4)).sent
    page = logged_in(people["admin"]).get("/reports/weekly/").content.decode()
    assert 'data-week="2026-02-23"' in page and "admin@install.test" in page and "1 sent" not in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert 'href="/reports/weekly/"' in logged_in(people["staff"]).get("/reports/").content.decode()


def test_the_command_shows_what_would_be_sent_and_refuses_in_words(install_smtp, people):
    out = io.StringIO()
    call_command("weekly_report", "--dry-run", stdout=out)
    shown = out.getvalue()
    monday = last_complete_week()
    assert f"week: Monday {monday}" in shown and "to: no one" in shown and "mail: sent through 127.0.0.1" in shown
    assert "attachment: report-by-sequence-from-" in shown and install_smtp.received == []
    with pytest.raises(CommandError, match="no one is chosen to receive the weekly report"):
        call_command("weekly_report")
    with pytest.raises(CommandError, match=r"--week '2026-13-01' is not a date"):
        call_command("weekly_report", "--week", "2026-13-01")
    with pytest.raises(CommandError, match="stranger@example.org: not the address of an active user"):
        call_command("weekly_report", "--to", "stranger@example.org")
    weekly_recipients_set(user_ids=[people["staff"].pk], actor="tester")
    with pytest.raises(CommandError, match="is not over yet"):
        call_command("weekly_report", "--week", str(monday + timedelta(days=7)))
    assert install_smtp.received == []


@pytest.mark.one_database("a calendar sum")
def test_the_last_complete_week_is_the_one_before_today_s():
    assert last_complete_week(date(2026, 3, 2)) == date(2026, 2, 23)  # a Monday: last week is complete
    assert last_complete_week(date(2026, 3, 1)) == date(2026, 2, 16)  # a Sunday: this week is not over
    assert last_complete_week(date(2026, 3, 4)) == date(2026, 2, 23)
