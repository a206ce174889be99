"""manage.py weekly_report: the weekly report by email, shown or sent now.

    manage.py weekly_report --dry-run                       # what the scheduler would send, to whom, where
    manage.py weekly_report                                 # send the last complete week now (once per week)
    manage.py weekly_report --week 2026-01-05               # that week (any day of it), once per week
    manage.py weekly_report --to admin@demo.outreach.test   # a copy to a user, not recorded against the week
    manage.py weekly_report --workspace Acme --dry-run      # one workspace's (default: each workspace's in turn)

Without --to it is the scheduler's send (reports.weekly_send): the chosen recipients, once per week; a week
whose outcome is unknown (the sender stopped mid-send) is sent again only this way. Each workspace has its own
weekly report; a copy (--to) names the workspace where there are several.
"""

from __future__ import annotations

from datetime import date

from django.core.management.base import BaseCommand, CommandError

from mailboxes import install_mail
from mailboxes.install_mail import InstallMailError
from workspaces.commands import workspace_argument
from workspaces.current import each_workspace, workspace_named
from workspaces.models import Workspace
from workspaces.scoping import workspace_scope

from ...figures import week_of
from ...models import WeeklyReportWeek
from ...rollup import rollup
from ...weekly import last_complete_week, weekly_message, weekly_report
from ...weekly_send import WeeklyReportError, recipients, report_copy_send, weekly_reports_send


def _week(value: str | None) -> date:
    if value is None:
        return last_complete_week()
    try:
        return week_of(date.fromisoformat(value))
    except ValueError:
        raise CommandError(f"--week {value!r} is not a date: write it as YYYY-MM-DD, e.g. 2026-01-05") from None


class Command(BaseCommand):
    help = "Show (--dry-run) or send the weekly report by email: the week's figures per sequence, a CSV attached."

    def add_arguments(self, parser):
        parser.add_argument("--week", metavar="YYYY-MM-DD",
                            help="any day of the week to report (Monday to Sunday); default: the last complete week")
        parser.add_argument("--to", metavar="EMAIL", nargs="+",
                            help="send a copy to these users' addresses instead of the chosen recipients (not "
                                 "recorded: the week is still sent to them as usual)")
        parser.add_argument("--dry-run", action="store_true", help="print what would be sent, send nothing")
        workspace_argument(parser)

    def handle(self, *args, **options):
        week = _week(options["week"])
        to = [address.strip() for address in options["to"] or [] if address.strip()]
        everything = list(Workspace.objects.order_by("name"))
        try:
            chosen = ([workspace_named(options["workspace"])] if options["workspace"] or to
                      else everything or [workspace_named(None)])
        except LookupError as error:
            raise CommandError(f"{error}{' (a copy is of one workspace)' if to else ''}") from None
        if options["dry_run"]:
            for workspace in each_workspace(chosen):
                self._show(week, to, workspace.name if len(everything) > 1 else "")
            return
        try:
            if to:
                with workspace_scope(chosen[0].pk, with_unowned=len(everything) <= 1):
                    outcomes = [report_copy_send(week=week, to=to)]
            else:
                outcomes = weekly_reports_send(week=week, by="manage.py weekly_report", resend_unknown=True,
                                               workspaces=chosen)
        except (WeeklyReportError, InstallMailError) as error:
            raise CommandError(str(error)) from None
        for outcome in outcomes:
            self.stdout.write(outcome.words)
        if not all(outcome.sent for outcome in outcomes):
            raise CommandError("; ".join(outcome.words for outcome in outcomes if not outcome.sent))

    def _show(self, week: date, to: list[str], workspace: str) -> None:
        rollup()
        built = weekly_report(week=week)
        if workspace:
            self.stdout.write(f"workspace: {workspace}")
        to = to or recipients()
        message = weekly_message(built, to=to)
        row = WeeklyReportWeek.objects.filter(week=built.week).first()
        self.stdout.write(f"week: {built.words}{'' if built.complete else ' (not over: the figures so far)'}")
        self.stdout.write(f"to: {', '.join(to) if to else 'no one (choose recipients on /reports/weekly/)'}")
        self.stdout.write(f"mail: {install_mail.where()}")
        self.stdout.write(f"already: {row.get_state_display()} ({row.by})" if row else "already: not sent yet")
        self.stdout.write(f"subject: {message.subject}")
        self.stdout.write("attachment: " + ", ".join(a.filename for a in message.attachments))
        self.stdout.write("")
        self.stdout.write(message.text)
