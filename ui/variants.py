"""A/B variants in the step editor: add or change a variant of a step, and stop one (with its confirmation).

Thin views: `VariantForm` parses, `services.variants` decides and writes.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render

from sequences.models import Step, StepVariant
from sequences.permissions import OPERATE
from sequences.services import variants as service
from sequences.services.campaigns import StepInvalid
from sequences.services.common import ServiceError

from .access import ui_view
from .forms import StepForm


class VariantForm(forms.Form):
    name = forms.CharField(max_length=40, help_text="How the results name it: “A”, “B”, “short subject”.")
    subject = forms.CharField(required=False, max_length=998, widget=forms.TextInput(attrs={"size": 60}),
                              help_text=StepForm.base_fields["subject"].help_text)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 12, "cols": 70}), strip=False,
                           help_text=StepForm.base_fields["body"].help_text + " {% spin \"Hi|Hello|Hey\" %} "
                                     "writes one of the options, always the same one for the same person.")
    weight = forms.IntegerField(min_value=1, max_value=1000, initial=1,
                                help_text="Its share of the people against the other running variants: 1 and 1 "
                                          "split half and half, 3 and 1 three quarters and a quarter.")


def _page(request, step: Step, variant: StepVariant | None, form: VariantForm, status: int = 200):
    others = step.variants.exclude(pk=variant.pk) if variant else step.variants.all()
    return render(request, "ui/variant_form.html", {"step": step, "sequence": step.sequence, "variant": variant,
                                                    "form": form, "others": others.order_by("id")}, status=status)


def _save(request, step: Step, variant: StepVariant | None):
    form = VariantForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            saved = service.variant_save(step_id=step.pk, variant_id=variant.pk if variant else None,
                                         name=data["name"], subject=data["subject"], body=data["body"],
                                         weight=data["weight"], actor=request.user.get_username())
        except StepInvalid as exc:
            for name, problems in exc.errors.items():
                for problem in problems:
                    form.add_error(name if name in form.fields else None, problem)
        else:
            messages.success(request, f"Variant {saved.name} of step {step.position} saved.")
            return redirect("step_edit", pk=step.pk)
    return _page(request, step, variant, form, status=400)


@ui_view(OPERATE, methods=("GET", "POST"))
def variant_new(request, pk: int):
    step = get_object_or_404(Step.objects.select_related("sequence"), pk=pk)
    if request.method == "POST":
        return _save(request, step, None)
    first = not step.variants.exists()
    initial = {"name": "A" if first else chr(ord("A") + step.variants.count()), "weight": 1}
    if first:  # the step's own text is the natural variant A
        initial |= {"subject": step.subject, "body": step.body}
    return _page(request, step, None, VariantForm(initial=initial))


@ui_view(OPERATE, methods=("GET", "POST"))
def variant_edit(request, pk: int):
    variant = get_object_or_404(StepVariant.objects.select_related("step__sequence"), pk=pk)
    if request.method == "POST":
        return _save(request, variant.step, variant)
    form = VariantForm(initial={"name": variant.name, "subject": variant.subject, "body": variant.body,
                                "weight": variant.weight})
    return _page(request, variant.step, variant, form)


@ui_view(OPERATE, methods=("GET", "POST"))
def variant_stop(request, pk: int):
    variant = get_object_or_404(StepVariant.objects.select_related("step__sequence"), pk=pk)
    if request.method == "POST":
        try:
            done = service.variant_stop(variant_id=variant.pk, actor=request.user.get_username())
        except ServiceError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Variant {variant.name} of step {variant.step.position} stopped. "
                             + " ".join(done.words()))
        return redirect("sequence_detail", pk=variant.step.sequence_id)
    return render(request, "ui/variant_stop.html", {
        "variant": variant, "step": variant.step, "sequence": variant.step.sequence,
        "forecast": service.variant_stop_forecast(variant),
    })


def step_variant_rows(step: Step) -> list[dict]:
    """The step's variants as its editor lists them, with how many of their emails are waiting and sent."""
    counts = service.variant_counts(step.pk)
    return [{"variant": v, **counts.get(v.pk, {"live": 0, "sent": 0})} for v in step.variants.order_by("id")]
