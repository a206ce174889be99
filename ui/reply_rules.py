"""A sequence's reply rules on its page: what each category of reply does next, and what each rule did
(inbound.reply_rules); operators add and remove them here or with `[[sequence.on_reply]]` in TOML."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render

from inbound.kinds import LABELS, Category
from inbound.models import ReplyRule
from inbound.reply_rules import RuleDid, reply_rules_of
from inbound.reply_rules_config import reply_rule_add, reply_rule_remove
from sequences.config.durations import parse_duration
from sequences.models import Sequence
from sequences.permissions import OPERATE, VIEW
from sequences.services.common import ServiceError

from .access import ui_view

A = ReplyRule.Action


def rule_rows(sequence: Sequence) -> list[RuleDid]:
    """Each rule in words with what it did: done, not done (and why, the latest), failed, undone."""
    return reply_rules_of(sequence.pk)


class RuleForm(forms.Form):
    category = forms.ChoiceField(label="When a reply is", choices=[(c.value, LABELS[c]) for c in Category])
    action = forms.ChoiceField(label="then", choices=A.choices, widget=forms.RadioSelect, initial=A.ENROLL)
    enroll_in = forms.ModelChoiceField(label="Sequence", queryset=Sequence.objects.none(), required=False)
    after = forms.CharField(label="First step after", initial="90d", required=False,
                            help_text="e.g. 90d, 12 weeks, 0s for at once")
    user = forms.ModelChoiceField(label="User", queryset=get_user_model().objects.none(), required=False,
                                  help_text="Assign: the conversation is theirs unless somebody has it. Email: a "
                                            "notice from the install with a link (the reply's text stays here).")

    def __init__(self, *args, sequence: Sequence, **kwargs):
        super().__init__(*args, **kwargs)
        self.sequence = sequence
        self.fields["enroll_in"].queryset = Sequence.objects.exclude(pk=sequence.pk).order_by("name")
        self.fields["user"].queryset = get_user_model().objects.filter(is_active=True).order_by("username")

    def clean(self):
        data = super().clean()
        action = data.get("action")
        if action == A.ENROLL:
            if not data.get("enroll_in"):
                self.add_error("enroll_in", "Choose the sequence to enroll the person in.")
            try:
                data["after_seconds"] = parse_duration((data.get("after") or "0s").strip())
            except ValueError as exc:
                self.add_error("after", str(exc))
        elif action and not data.get("user"):
            self.add_error("user", "Choose the user.")
        return data

    def rule(self) -> dict:
        data = self.cleaned_data
        if data["action"] == A.ENROLL:
            return {"category": data["category"], "action": A.ENROLL.value, "target": data["enroll_in"].name,
                    "after_seconds": data["after_seconds"]}
        return {"category": data["category"], "action": data["action"], "target": data["user"].get_username(),
                "after_seconds": 0}


def _actor(request) -> str:
    return request.user.get_username()


@ui_view(VIEW, methods=("GET", "POST"))
def reply_rules_edit(request, pk: int):
    sequence = get_object_or_404(Sequence, pk=pk)
    can_operate = request.user.has_perm(OPERATE)
    form = RuleForm(sequence=sequence)
    status = 200
    if request.method == "POST":
        if not can_operate:
            raise PermissionDenied("Your role may look at the rules, not change them.")
        form = RuleForm(request.POST, sequence=sequence)
        if form.is_valid():
            try:
                lines = reply_rule_add(sequence_id=sequence.pk, rule=form.rule(), actor=_actor(request))
            except ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, "Rule added: " + "; ".join(line.removeprefix("on_reply: added ")
                                                                   for line in lines))
                return redirect("reply_rules_edit", pk=sequence.pk)
        status = 400
    return render(request, "ui/reply_rules.html", {"sequence": sequence, "rows": rule_rows(sequence), "form": form,
                                                   "can_operate": can_operate}, status=status)


@ui_view(OPERATE, methods=("POST",))
def reply_rule_delete(request, pk: int, position: int):
    sequence = get_object_or_404(Sequence, pk=pk)
    try:
        reply_rule_remove(sequence_id=sequence.pk, position=position, actor=_actor(request))
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Rule {position} removed.")
    return redirect("reply_rules_edit", pk=sequence.pk)
