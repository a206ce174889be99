"""The weekly report's page (/reports/weekly/): who receives it, which sequences it covers, where the mail goes and
the weeks sent with their outcome. Anyone who may see the reports reads it; only admins change it
(reports.models.MANAGE_WEEKLY). What the mail holds and when it goes: reports.weekly, reports.weekly_send.
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render

from mailboxes import install_mail
from reports.models import MANAGE_WEEKLY, WeeklyReportSequence, WeeklyReportWeek
from reports.weekly import last_complete_week
from reports.weekly_send import (
    WeeklyReportError,
    chosen_users,
    eligible_users,
    refusal,
    weekly_recipients_set,
    weekly_sequences_set,
)
from sequences.models import Sequence
from sequences.permissions import VIEW
from sequences.storable import row_id

from .access import ui_view

WEEKS_SHOWN = 12
REFUSED = "Choosing who receives the weekly report, and which sequences it covers, needs the admins role."


class StorableChoices(forms.ModelMultipleChoiceField):
    """A ticked id no row could have (past a bigint, not a number) is refused in words, never looked up."""

    def _check_values(self, value):
        for pk in value:
            if row_id(pk) is None:
                raise forms.ValidationError(self.error_messages["invalid_pk_value"], code="invalid_pk_value",
                                            params={"pk": str(pk)[:40]})
        return super()._check_values(value)


class UserChoice(StorableChoices):
    def label_from_instance(self, user) -> str:
        groups = ", ".join(g.name for g in user.groups.all()) or ("superuser" if user.is_superuser else "")
        return f"{user.get_username()} — {user.email}" + (f" ({groups})" if groups else "")


class WeeklyForm(forms.Form):
    recipients = UserChoice(queryset=get_user_model().objects.none(), required=False,
                            widget=forms.CheckboxSelectMultiple, label="Who receives it")
    sequences = StorableChoices(queryset=Sequence.objects.none(), required=False,
                                               widget=forms.CheckboxSelectMultiple, label="Sequences in the report")

    def __init__(self, *args, can_change: bool, **kwargs):
        super().__init__(*args, **kwargs)
        eligible = [user.pk for user in eligible_users()]
        model = get_user_model()
        self.fields["recipients"].queryset = model.objects.filter(pk__in=eligible).order_by(
            model.USERNAME_FIELD).prefetch_related("groups")
        self.fields["sequences"].queryset = Sequence.objects.order_by("name")  # the request's workspace's
        for field in self.fields.values():
            field.disabled = not can_change


def _initial() -> dict:
    off = set(WeeklyReportSequence.objects.filter(enabled=False).values_list("sequence_id", flat=True))
    return {"recipients": [user.pk for user in chosen_users()],
            "sequences": [pk for pk in Sequence.objects.values_list("pk", flat=True) if pk not in off]}


def _saved(request, form: WeeklyForm) -> None:
    actor = request.user.get_username()
    added, removed = weekly_recipients_set(user_ids=[u.pk for u in form.cleaned_data["recipients"]], actor=actor)
    on, off = weekly_sequences_set(enabled_ids=[s.pk for s in form.cleaned_data["sequences"]], actor=actor)
    said = [f"{words}: {', '.join(names)}" for words, names in
            (("now receiving it", added), ("no longer receiving it", removed), ("sequences turned on", on),
             ("sequences turned off", off)) if names]
    messages.success(request, "Weekly report saved — " + ("; ".join(said) if said else "nothing changed") + ".")


@ui_view(VIEW, methods=("GET", "POST"))
def weekly_report_page(request):
    can_change = request.user.has_perm(MANAGE_WEEKLY)
    if request.method == "POST":
        if not can_change:
            raise PermissionDenied(REFUSED)
        form = WeeklyForm(request.POST, can_change=True)
        if form.is_valid():
            try:
                _saved(request, form)
            except WeeklyReportError as error:
                form.add_error(None, str(error))
            else:
                return redirect("report_weekly")
    else:
        form = WeeklyForm(initial=_initial(), can_change=can_change)
    chosen = chosen_users()
    not_sent_to = [(user, refusal(user)) for user in chosen if refusal(user)]
    due = last_complete_week()
    context = {
        "form": form, "can_change": can_change, "where": install_mail.where(), "not_sent_to": not_sent_to,
        "due": due, "due_sunday": due + timedelta(days=6), "due_row": WeeklyReportWeek.objects.filter(week=due).first(),
        "time_zone": settings.TIME_ZONE, "to": len(chosen) > len(not_sent_to),
        "weeks": WeeklyReportWeek.objects.all()[:WEEKS_SHOWN], "states": WeeklyReportWeek.State,
    }
    return render(request, "ui/weekly_report.html", context)
