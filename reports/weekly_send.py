"""The weekly report by email, sent once per week, and who receives it (reports.weekly says what it holds).

Once per week. The claim is the INSERT of the week's row (WeeklyReportWeek, unique on its Monday) in a short
transaction of its own, after the mail is made and before it is handed off: of two schedulers, a repeated RQ job
and the command, the one whose insert commits sends; the others find the row and send nothing. The mail server
is talked to with no transaction open; the outcome is written after, in a compare-and-set on the claim (its
attempt number). A refused or unreachable server is recorded in words as `failed`, and the next run claims the
week again (a compare-and-set from failed to sending: two runs that both find it failed still send once). A row
still `sending` long after any send could take (STALE) means the sender stopped mid-send: it becomes `unknown`,
and nothing sends it again on its own, since it may have left; `manage.py weekly_report --week` does when asked.

Who. Users an admin chose (WeeklyReportRecipient); the mail goes to those who are active, have an email address
and a role that may see results (the reports page's permission), in one message to all of them.

Per workspace. Each workspace has its own weekly report: its sequences' figures, to the users chosen in it, once
per week. A member of a workspace (a client user, say) can be chosen only there, with its role there; an agency
user (no membership) anywhere its groups let it see results. Everything here works in the workspace of the scope
it runs in (workspaces.scoping): a page's request, or `weekly_reports_send`, which runs each workspace in turn.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, timedelta

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from db.clock import db_clock_written, db_now
from mailboxes import install_mail
from mailboxes.install_mail import InstallMailError
from sequences.models import Sequence
from sequences.permissions import VIEW
from sequences.services.common import operator_log
from workspaces.current import each_workspace, scope_or_only, workspace_named
from workspaces.models import Membership, Workspace
from workspaces.scoping import scoped_workspace_id

from .figures import week_of
from .models import WeeklyReportRecipient, WeeklyReportSequence, WeeklyReportWeek, WeekState
from .rollup import rollup
from .weekly import last_complete_week, week_complete, weekly_message, weekly_report

BY_SCHEDULER = "the scheduler"
# The operator log's actions for a change of who receives the weekly report and of the sequences it covers.
LOG_RECIPIENTS, LOG_SEQUENCES = "weekly_report_recipients", "weekly_report_sequences"
# Longer than a send can take (the install's SMTP time-out is OUTREACH_SMTP_TIMEOUT, 30 s by default, per step).
STALE = timedelta(minutes=30)


class WeeklyReportError(Exception):
    """A weekly report request refused, in words for the page or the command."""


@dataclass(frozen=True)
class Outcome:
    week: date
    sent: bool
    words: str


# --- who receives it -----------------------------------------------------------------------------------------

def _in_scope() -> int:
    """The workspace whose weekly report is read or changed: the scope's, else the install's only one."""
    workspace_id = scoped_workspace_id()
    if workspace_id is not None:
        return workspace_id
    try:
        return workspace_named(None).pk
    except LookupError:
        raise WeeklyReportError("this install has several workspaces: each has its own weekly report, read and "
                                "sent inside its workspace (weekly_reports_send, or --workspace NAME)") from None


def refusal(user, roles: dict[int, str] | None = None) -> str:
    """Why the workspace's weekly report does not go to *user*, in words; "" when it does. *roles*: the user's
    memberships (workspace id -> role), when the caller has read them already."""
    if not user.is_active:
        return "their account is deactivated"
    if not user.email:
        return "they have no email address"
    workspace_id = _in_scope()
    if roles is None:
        roles = dict(Membership.objects.filter(user=user).values_list("workspace_id", "role"))
    if roles and workspace_id not in roles:
        return "they are not a member of this workspace"
    # Their permissions with their role here (a copy: *user* may be the request's own, with its own role).
    there = copy.copy(user)
    for cache in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        there.__dict__.pop(cache, None)
    there.workspace_role = roles.get(workspace_id)
    if not there.has_perm(VIEW):
        return "their role may not see results"
    return ""


def eligible_users() -> list:
    """The users who may be chosen in the workspace: active, with an email address, and a role there that may see
    results (a member of other workspaces only is never one)."""
    users = list(get_user_model().objects.filter(is_active=True).exclude(email="").order_by("username"))
    roles: dict[int, dict[int, str]] = {}
    for user_id, workspace_id, role in Membership.objects.filter(user__in=users).values_list(
            "user_id", "workspace_id", "role"):
        roles.setdefault(user_id, {})[workspace_id] = role
    return [user for user in users if not refusal(user, roles.get(user.pk, {}))]


def chosen_users() -> list:
    return [r.user for r in WeeklyReportRecipient.objects.select_related("user").order_by("user__username")]


def recipients() -> list[str]:
    """The addresses the weekly report goes to now (the chosen users it may go to), each once."""
    return sorted({user.email.strip().lower() for user in chosen_users() if not refusal(user)})


def weekly_recipients_set(*, user_ids: Collection[int], actor: str) -> tuple[list[str], list[str]]:
    """Make *user_ids* the chosen recipients, in one transaction with its operator-log row; (added, removed)."""
    wanted = set(user_ids)
    users = {user.pk: user for user in get_user_model().objects.filter(pk__in=wanted)}
    for pk in sorted(wanted):
        user = users.get(pk)
        if user is None:
            raise WeeklyReportError(f"there is no user #{pk}")
        if refusal(user):
            raise WeeklyReportError(f"the weekly report cannot go to {user.get_username()}: {refusal(user)}")
    with transaction.atomic():
        before = dict(WeeklyReportRecipient.objects.select_for_update().values_list("user_id", "user__username"))
        removed = sorted(name for pk, name in before.items() if pk not in wanted)
        WeeklyReportRecipient.objects.exclude(user_id__in=wanted).delete()
        added = sorted(users[pk].get_username() for pk in wanted - set(before))
        WeeklyReportRecipient.objects.bulk_create(
            [WeeklyReportRecipient(user_id=pk, chosen_by=actor) for pk in sorted(wanted - set(before))])
        if added or removed:
            operator_log(actor=actor, action=LOG_RECIPIENTS, target="the weekly report's recipients",
                         result={"added": added, "removed": removed})
    return added, removed


def weekly_sequences_set(*, enabled_ids: Collection[int], actor: str) -> tuple[list[str], list[str]]:
    """Turn the weekly report on for the sequences in *enabled_ids* and off for every other one, in one
    transaction with an operator-log row; (the names turned on, the names turned off)."""
    enabled = set(enabled_ids)
    turned_on, turned_off = [], []
    with transaction.atomic():
        off = set(WeeklyReportSequence.objects.select_for_update().filter(enabled=False)
                  .values_list("sequence_id", flat=True))
        for pk, name in Sequence.objects.order_by("name").values_list("pk", "name"):
            if pk in enabled and pk in off:
                WeeklyReportSequence.objects.filter(pk=pk).update(enabled=True, changed_by=actor,
                                                                  changed_at=db_clock_written())
                turned_on.append(name)
            elif pk not in enabled and pk not in off:
                WeeklyReportSequence.objects.update_or_create(
                    sequence_id=pk, defaults={"enabled": False, "changed_by": actor,
                                              "changed_at": db_clock_written()})
                turned_off.append(name)
        if turned_on or turned_off:
            operator_log(actor=actor, action=LOG_SEQUENCES, target="the weekly report's sequences",
                         result={"on": turned_on, "off": turned_off})
    return turned_on, turned_off


# --- once per week -------------------------------------------------------------------------------------------

def _stale_mark(week: date) -> None:
    """A claim still sending long after any send could take: the sender stopped, the outcome is unknown."""
    WeeklyReportWeek.objects.filter(week=week, state=WeekState.SENDING, claimed_at__lt=db_now() - STALE).update(
        state=WeekState.UNKNOWN, finished_at=db_clock_written(),
        error=f"the sender stopped while sending (claimed more than {STALE.seconds // 60} minutes before); the "
              "mail may have left, so it is not sent again on its own")


def week_claim(*, week: date, to: list[str], by: str, again: Collection[str] = (WeekState.FAILED,)
               ) -> WeeklyReportWeek | None:
    """Claim *week* for sending: insert its row, or move it from one of the *again* states to sending (a
    compare-and-set). None: someone else has it (sent, being sent, or of unknown outcome)."""
    try:
        with transaction.atomic():
            return WeeklyReportWeek.objects.create(week=week, state=WeekState.SENDING, recipients=to, by=by)
    except IntegrityError:
        pass
    _stale_mark(week)
    moved = WeeklyReportWeek.objects.filter(week=week, state__in=list(again)).update(
        state=WeekState.SENDING, attempts=F("attempts") + 1, claimed_at=db_clock_written(), finished_at=None,
        recipients=to, by=by, error="")
    return WeeklyReportWeek.objects.get(week=week) if moved else None


def _record(claim: WeeklyReportWeek, **fields) -> None:
    """The outcome of this claim's attempt (nothing, if another attempt has claimed the week since)."""
    WeeklyReportWeek.objects.filter(pk=claim.pk, state=WeekState.SENDING, attempts=claim.attempts).update(
        finished_at=db_clock_written(), **fields)


def _taken_words(week: date) -> str:
    row = WeeklyReportWeek.objects.filter(week=week).first()
    if row is None:
        return f"the weekly report of the week of {week} was not claimed"
    if row.state == WeekState.SENT:
        return f"the weekly report of the week of {week} was already sent, to {', '.join(row.recipients)}"
    if row.state == WeekState.SENDING:
        return f"the weekly report of the week of {week} is being sent ({row.by})"
    return f"the weekly report of the week of {week}: {row.get_state_display()}"


def weekly_reports_send(*, week: date | None = None, today: date | None = None, by: str = BY_SCHEDULER,
                        resend_unknown: bool = False, workspaces: list[Workspace] | None = None) -> list[Outcome]:
    """Each workspace's weekly report (report_week_send), one workspace after the other, each in its own scope."""
    several = Workspace.objects.count() > 1
    outcomes = []
    for workspace in each_workspace(workspaces):
        outcome = report_week_send(week=week, today=today, by=by, resend_unknown=resend_unknown)
        outcomes.append(Outcome(outcome.week, outcome.sent, f"{workspace.name}: {outcome.words}") if several else
                        outcome)
    return outcomes


def report_week_send(*, week: date | None = None, today: date | None = None, by: str = BY_SCHEDULER,
                     resend_unknown: bool = False) -> Outcome:
    """Send the scope's workspace's weekly report of *week* (default: the last complete week) to its chosen
    recipients, once: claim (its own short transaction), hand off (no transaction open), record (another). A week
    not over is refused. Outside any scope: the install's only workspace's (refused where there are several)."""
    try:
        scope = scope_or_only()
    except LookupError as error:
        raise WeeklyReportError(str(error)) from None
    with scope:
        return _week_send(week=week, today=today, by=by, resend_unknown=resend_unknown)


def _week_send(*, week: date | None, today: date | None, by: str, resend_unknown: bool) -> Outcome:
    monday = week_of(week) if week is not None else last_complete_week(today)
    if not week_complete(monday, today):
        raise WeeklyReportError(f"the week of {monday} is not over yet: only a complete week is sent to the "
                                "recipients (--to sends a copy of the figures so far)")
    to = recipients()
    if not to:
        return Outcome(monday, False, "no one is chosen to receive the weekly report (Reports › Weekly report by "
                                      "email): nothing sent")
    again = (WeekState.FAILED, WeekState.UNKNOWN) if resend_unknown else (WeekState.FAILED,)
    _stale_mark(monday)
    if WeeklyReportWeek.objects.filter(week=monday).exclude(state__in=again).exists():
        return Outcome(monday, False, _taken_words(monday))  # the common case, hourly: no rollup, no mail made
    rollup()  # the figures up to the minute (the scheduler's run may be a minute old)
    built = weekly_report(week=monday, today=today)
    message = weekly_message(built, to=to)
    if connection.in_atomic_block:  # the claim must be committed before the hand-off, and no lock held over it
        raise RuntimeError("the weekly report is claimed and handed off outside any transaction")
    claim = week_claim(week=monday, to=to, by=by, again=again)
    if claim is None:
        return Outcome(monday, False, _taken_words(monday))
    try:
        install_mail.send(message)
    except InstallMailError as error:
        _record(claim, state=WeekState.FAILED, error=str(error), summary=built.summary)
        return Outcome(monday, False, f"the weekly report of the week of {monday} was not sent ({error}); the next "
                                      "run tries again")
    _record(claim, state=WeekState.SENT, error="", summary=built.summary)
    return Outcome(monday, True, f"the weekly report of the week of {monday} ({built.summary}) was sent to "
                                 f"{', '.join(to)}, {install_mail.where()}")


def report_copy_send(*, week: date, to: list[str]) -> Outcome:
    """A copy of one week's report (complete or so far) to named users, not recorded against the week."""
    allowed = {user.email.strip().lower() for user in eligible_users()}
    wrong = [address for address in to if address.strip().lower() not in allowed]
    if wrong:
        raise WeeklyReportError(f"{', '.join(wrong)}: not the address of an active user whose role may see "
                                "results; the weekly report goes to the install's users only")
    rollup()
    built = weekly_report(week=week)
    install_mail.send(weekly_message(built, to=to))
    return Outcome(built.week, True, f"a copy of the weekly report of the week of {built.week} ({built.summary}) "
                                     f"was sent to {', '.join(to)}, {install_mail.where()}")
