"""Each workspace has its own figures: its weekly report (to the users chosen in it, once per week) and its
dashboard's once-a-minute counts.

Acme and Beta each send step 1 of a campaign through the real pipeline to a real SMTP server (aiosmtpd); the
reports' rollup counts them. Acme's client user and the agency's admin receive Acme's report; Beta's operator and
the admin Beta's. Neither mail names the other workspace's sequence, and a member of Acme cannot be chosen in Beta.
A reply in Beta stops its person: Beta's dashboard shows the reply → stop time of Beta's mailbox, Acme's does not.
"""

from __future__ import annotations

from datetime import timedelta
from email import message_from_bytes, policy

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from reports.figures import week_of
from reports.models import DailyFigures, WeeklyReportWeek
from reports.rollup import rollup
from reports.weekly_send import (
    WeeklyReportError,
    eligible_users,
    report_week_send,
    weekly_recipients_set,
    weekly_reports_send,
)
from sequences.models import DashboardCounts, SendJob, Sequence
from sequences.pipeline import send_job_process
from sequences.services.sending import dispatch_due
from tests.factories import MailboxFactory, enroll, make_sequence
from tests.reports.test_weekly import FROM, install_smtp, people  # noqa: F401 - the install's mail, the users
from tests.ui.conftest import roles, users  # noqa: F401 - the UI's role fixtures
from workspaces.models import Membership, Workspace
from workspaces.scoping import _ScopedManager, workspace_scope

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two(smtp_server, redis_conn, people, django_user_model):  # noqa: F811
    """Acme and Beta, a campaign each with step 1 sent; Acme's client user, Beta's operator, the agency's admin."""
    made = {}
    for key, name in (("a", "Acme Corp"), ("b", "Beta Ltd")):
        workspace = Workspace.objects.create(name=name)
        with workspace_scope(workspace.pk):
            mailbox = MailboxFactory(name=f"{key}-box", address=f"sales@{key}-agency.test", smtp_port=smtp_server.port)
            sequence = make_sequence(mailbox=mailbox, steps=1, name=f"{name} launch")
            for i in range(2 if key == "a" else 3):
                enroll(sequence, f"p{i}@{key}-leads.test")
        made[key] = {"workspace": workspace, "sequence": sequence}
    for job_id in dispatch_due():
        assert send_job_process(job_id=job_id, worker_id="w1").state == SendJob.State.SUBMITTED
    client = django_user_model.objects.create_user(username="acme-client", email="client@acme.test",
                                                   password="correct horse battery")
    Membership.objects.create(user=client, workspace=made["a"]["workspace"], role="client")
    Membership.objects.create(user=people["operator"], workspace=made["b"]["workspace"], role="operator")
    made["client"], made["operator"], made["admin"] = client, people["operator"], people["admin"]
    rollup()
    return made


def weekly_mails(server) -> dict[str, object]:
    """The weekly reports the install sent, by their To header."""
    found = [message_from_bytes(r.data, policy=policy.default) for r in server.received if r.sender == FROM]
    return {message["To"]: message for message in found}


def chosen(two, key: str, users: list) -> None:
    with workspace_scope(two[key]["workspace"].pk):
        weekly_recipients_set(user_ids=[u.pk for u in users], actor="tester")


def test_each_workspace_s_report_goes_to_its_own_users_with_its_own_figures(two, install_smtp):  # noqa: F811
    chosen(two, "a", [two["client"], two["admin"]])
    chosen(two, "b", [two["operator"], two["admin"]])
    monday = week_of(SendJob.objects.filter(state=SendJob.State.SUBMITTED).first().submitted_at.date())

    outcomes = weekly_reports_send(today=monday + timedelta(days=7))
    sent = {o.words.split(":")[0]: o.sent for o in outcomes}
    assert sent.pop("Acme Corp") and sent.pop("Beta Ltd"), [o.words for o in outcomes]
    assert not any(sent.values()), "a workspace where nobody is chosen sends nothing"

    mails = weekly_mails(install_smtp)
    acme = mails["admin@install.test, client@acme.test"]
    beta = mails["admin@install.test, operator@install.test"]
    acme_text, beta_text = acme.get_body(("plain",)).get_content(), beta.get_body(("plain",)).get_content()
    assert "Acme Corp" in acme["Subject"] and "2 sent" in acme["Subject"], acme["Subject"]
    assert "Beta Ltd" in beta["Subject"] and "3 sent" in beta["Subject"], beta["Subject"]
    assert "Acme Corp launch" in acme_text and "Beta Ltd launch" not in acme_text
    assert "Beta Ltd launch" in beta_text and "Acme Corp launch" not in beta_text
    (csv_part,) = list(acme.iter_attachments())
    assert "Beta" not in csv_part.get_content()

    # Once per week and workspace: run again, nothing more leaves; each workspace has its week's row.
    again = weekly_reports_send(today=monday + timedelta(days=7))
    assert not any(o.sent for o in again)
    assert len(weekly_mails(install_smtp)) == 2
    assert sorted(WeeklyReportWeek.objects.values_list("workspace__name", "week", "state")) == [
        ("Acme Corp", monday, "sent"), ("Beta Ltd", monday, "sent")]


def test_with_the_figures_filter_removed_acme_s_mail_shows_beta_s_sequence(two, install_smtp, monkeypatch):  # noqa: F811
    """The control: the check above can see a leak. With the rollup's and the sequences' managers unfiltered,
    Acme's report shows Beta's sequence; and outside any workspace, an install of several refuses to send one."""
    chosen(two, "a", [two["client"]])
    monday = week_of(SendJob.objects.filter(state=SendJob.State.SUBMITTED).first().submitted_at.date())
    with pytest.raises(WeeklyReportError, match="several workspaces"):
        report_week_send(today=monday + timedelta(days=7))
    for manager in (DailyFigures.objects, Sequence.objects):
        monkeypatch.setattr(type(manager), "get_queryset", lambda self: super(_ScopedManager, self).get_queryset())
    weekly_reports_send(today=monday + timedelta(days=7), workspaces=[two["a"]["workspace"]])
    (mail,) = weekly_mails(install_smtp).values()
    assert "Beta Ltd launch" in mail.get_body(("plain",)).get_content()


def test_a_member_of_one_workspace_is_never_a_recipient_in_another(two):
    with workspace_scope(two["b"]["workspace"].pk):
        assert two["client"] not in eligible_users()
        assert two["admin"] in eligible_users() and two["operator"] in eligible_users()
        with pytest.raises(WeeklyReportError, match="not a member of this workspace"):
            weekly_recipients_set(user_ids=[two["client"].pk], actor="tester")
    with workspace_scope(two["a"]["workspace"].pk):
        assert two["client"] in eligible_users(), "a client may see results: it may receive its workspace's"
        assert two["operator"] not in eligible_users()


def test_the_command_sends_each_workspace_s_or_the_one_named_and_a_copy_names_one(two, install_smtp):  # noqa: F811
    chosen(two, "a", [two["client"]])
    chosen(two, "b", [two["operator"]])
    with pytest.raises(CommandError, match="several workspaces"):
        call_command("weekly_report", "--to", "admin@install.test", "--dry-run")
    call_command("weekly_report", "--workspace", "Beta Ltd", "--to", "admin@install.test")
    (copy,) = weekly_mails(install_smtp).values()
    assert "Beta Ltd" in copy["Subject"] and copy["To"] == "admin@install.test"
    with pytest.raises(CommandError, match="no workspace named"):
        call_command("weekly_report", "--workspace", "Gamma", "--dry-run")


def test_each_workspace_s_dashboard_counts_its_own_people_and_mailboxes(two):
    from django.test import Client

    from inbound.ingest.record import inbound_record
    from proving.harness import mails
    from ui import dashboard_counts

    beta_job = SendJob.objects.filter(enrollment__sequence=two["b"]["sequence"]).order_by("pk").first()
    raw = mails.reply(to_message_id=beta_job.message_id, sender=beta_job.enrollment.contact.email,
                      to="sales@b-agency.test", body="Thanks, let's talk next week.")
    inbound_record(mailbox_id=two["b"]["sequence"].mailbox_id, folder="INBOX", uidvalidity=1,
                   fetched=mails.fetched(raw, uid=1))
    assert dashboard_counts.count_task().endswith(f"({Workspace.objects.count()} workspaces)")

    def dashboard_of(user) -> str:
        client = Client()
        client.force_login(user)
        return client.get("/").content.decode()

    acme, beta = dashboard_of(two["client"]), dashboard_of(two["operator"])
    assert "b-box" in beta and "b-box" not in acme, "reply → stop is Beta's mailbox's, on Beta's dashboard only"
    counts = {w: DashboardCounts.objects.get(workspace=two[k]["workspace"]).numbers["enrollments"]
              for k, w in (("a", "acme"), ("b", "beta"))}
    assert counts == {"acme": {"completed": 2}, "beta": {"completed": 2, "stopped": 1}}, counts


def test_the_agency_compares_its_workspaces_on_the_reports_page_and_a_member_cannot(two, capsys):
    """By workspace: every workspace's row for a user who works across the install (the page, its CSV, the
    command); a member of one workspace has no such grouping (a URL asking for it is refused in words)."""
    import csv
    import io

    from django.test import Client

    from tests.reports.test_reports import page_rows

    agency = Client()
    agency.force_login(two["admin"])
    page = agency.get("/reports/?by=workspace")
    assert page.status_code == 200
    sent = {row[0]: row[1] for row in page_rows(page.content.decode())}
    assert sent == {"Acme Corp": "2", "Beta Ltd": "3", "Total": "5"}, sent
    exported = agency.get("/reports/export.csv?by=workspace")
    rows = list(csv.reader(io.StringIO(exported.content.decode())))
    assert [row[:2] for row in rows] == [["Workspace", "Sent"], ["Acme Corp", "2"], ["Beta Ltd", "3"], ["Total", "5"]]

    member = Client()
    member.force_login(two["client"])
    refused = member.get("/reports/?by=workspace")
    assert "Select a valid choice" in refused.content.decode()
    assert "Beta Ltd" not in refused.content.decode()
    assert ">Workspace</a>" not in member.get("/reports/").content.decode()

    call_command("report", "--by", "workspace")
    out = capsys.readouterr().out
    assert "Acme Corp" in out and "Beta Ltd" in out
    call_command("report", "--by", "workspace", "--workspace", "Beta Ltd")
    out = capsys.readouterr().out
    assert "Beta Ltd" in out and "Acme Corp" not in out
