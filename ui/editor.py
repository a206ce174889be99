"""The sequence editor: create and edit a sequence and its steps, reorder and delete steps, export as TOML.

Thin views: the form parses, a service in `campaigns` decides and
writes. Every form on a sequence that people are already in says, before it
is saved, what will happen to them (`edit_impact`).
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count, Exists, OuterRef, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify

from sequences.config.export import sequence_export_toml
from sequences.labels import duration_words
from sequences.models import Enrollment, SendJob, Sequence, Step
from sequences.permissions import OPERATE, VIEW
from sequences.services import campaigns
from sequences.services.campaigns import (
    StepInvalid,
    sequence_booking_url_set,
    sequence_create,
    sequence_unsubscribe_style_set,
    sequence_update,
    step_jobs_refusal,
    step_save,
)
from sequences.services.common import ServiceError
from sequences.services.crossed_note import sequence_crossed_note_set
from sequences.services.enrollments import people_lacking
from sequences.services.variants import variant_running_names

from .access import ui_view
from .forms import SequenceForm, StepForm
from .variants import step_variant_rows

E = Enrollment.Status
S = SendJob.State


def _actor(request) -> str:
    return request.user.get_username()


def _people(n: int) -> str:
    return f"{n} {'person' if n == 1 else 'people'}"


def edit_impact(sequence: Sequence, step: Step | None = None) -> list[str]:
    """What saving this step (or a new one at the end, when *step* is None) does to the people in the sequence."""
    counts = dict(sequence.enrollments.values_list("status").annotate(n=Count("id")))
    active, paused, completed = counts.get(E.ACTIVE, 0), counts.get(E.PAUSED, 0), counts.get(E.COMPLETED, 0)
    if not sum(counts.values()):
        return ["Nobody is in this sequence yet: everyone enrolled later gets the steps as they are then."]
    lines = [
        f"{_people(active)} {'is' if active == 1 else 'are'} active in this sequence"
        + (f", {paused} paused" if paused else "")
        + (f", {completed} finished it" if completed else "")
        + "."
    ]
    n_steps = sequence.steps.count()
    if step is None:
        position = n_steps + 1
        if n_steps:
            lines.append(
                f"A new step {position} will be scheduled for those who finish step {n_steps}: the "
                f"{_people(active)} still active" + (" (and the paused ones, if resumed)" if paused else "") + "."
            )
        if completed:
            lines.append(f"The {_people(completed)} who already finished the sequence will not get it.")
        return lines
    jobs = SendJob.objects.filter(step=step).aggregate(
        waiting=Count("id", filter=Q(state__in=(S.SCHEDULED, S.QUEUED))),
        preparing=Count("id", filter=Q(state__in=(S.CLAIMED, S.AUTHORIZED))),
        sent=Count("id", filter=Q(state__in=(S.SUBMITTED, S.ACCEPTED))),
    )
    waiting, preparing, sent = jobs["waiting"], jobs["preparing"], jobs["sent"]
    if waiting:
        lines.append(
            f"{waiting} {'has' if waiting == 1 else 'have'} a step-{step.position} email scheduled: it "
            "will use the new text. A changed wait applies to emails scheduled from now on; the ones "
            "already scheduled keep their time."
        )
    if preparing:
        lines.append(
            f"{preparing} step-{step.position} email{'' if preparing == 1 else 's'} "
            f"{'is' if preparing == 1 else 'are'} being prepared or handed off right now: "
            f"{'it keeps' if preparing == 1 else 'they keep'} the text already rendered."
        )
    if sent:
        lines.append(
            f"{sent} step-{step.position} email{'' if sent == 1 else 's'} already went out: sent mail cannot change."
        )
    if not (waiting or preparing):
        lines.append(
            f"Nobody has a step-{step.position} email scheduled right now: the people still to reach "
            "it will get the new text."
        )
    return lines


def _sequence_form_page(request, form, sequence=None, status=200):
    return render(request, "ui/sequence_form.html", {"form": form, "sequence": sequence}, status=status)


@ui_view(OPERATE, methods=("GET", "POST"))
def sequence_new(request):
    form = SequenceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            sequence = sequence_create(
                name=form.cleaned_data["name"], mailbox_id=form.cleaned_data["mailbox"].pk, actor=_actor(request)
            )
            if form.cleaned_data["unsubscribe_style"]:  # a form posted without it leaves it as it is
                sequence_unsubscribe_style_set(sequence_id=sequence.pk, style=form.cleaned_data["unsubscribe_style"],
                                               actor=_actor(request))
            if "booking_url" in request.POST:  # a form posted without it leaves it as it is
                sequence_booking_url_set(sequence_id=sequence.pk, url=form.cleaned_data["booking_url"],
                                         actor=_actor(request))
            if form.cleaned_data["crossed_note"]:  # empty, or a form posted without it: left as it is
                sequence_crossed_note_set(sequence_id=sequence.pk, text=form.cleaned_data["crossed_note"],
                                          actor=_actor(request))
        except ServiceError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Created “{sequence.name}”. Add its first step.")
            return redirect("step_new", pk=sequence.pk)
    return _sequence_form_page(request, form, status=200 if request.method == "GET" else 400)


@ui_view(OPERATE, methods=("GET", "POST"))
def sequence_edit(request, pk: int):
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    initial = {"name": sequence.name, "mailbox": sequence.mailbox, "unsubscribe_style": sequence.unsubscribe_style,
               "booking_url": sequence.booking_url, "crossed_note": sequence.crossed_note}
    form = SequenceForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            sequence_update(
                sequence_id=pk,
                name=form.cleaned_data["name"],
                mailbox_id=form.cleaned_data["mailbox"].pk,
                actor=_actor(request),
            )
            if form.cleaned_data["unsubscribe_style"]:  # a form posted without it leaves it as it is
                sequence_unsubscribe_style_set(sequence_id=pk, style=form.cleaned_data["unsubscribe_style"],
                                               actor=_actor(request))
            if "booking_url" in request.POST:  # a form posted without it leaves it as it is
                sequence_booking_url_set(sequence_id=pk, url=form.cleaned_data["booking_url"], actor=_actor(request))
            if form.cleaned_data["crossed_note"]:  # empty, or a form posted without it: left as it is
                sequence_crossed_note_set(sequence_id=pk, text=form.cleaned_data["crossed_note"], actor=_actor(request))
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Saved.")
            return redirect("sequence_detail", pk=pk)
    return _sequence_form_page(request, form, sequence, status=200 if request.method == "GET" else 400)


def _step_form(step: Step | None, *args, **kwargs) -> StepForm:
    """The step form. While a variant of the step runs, every job of the step is given a variant and nothing of
    the step's own text is sent (`services.scheduling.schedule_next`), so its own body is not asked for; it is
    sent only to people who reach the step after every variant is stopped (`messages.step_texts`)."""
    form = StepForm(*args, **kwargs)
    if step is not None and variant_running_names(step.pk):
        form.fields["body"].required = False
    return form


def _step_page(request, sequence: Sequence, step: Step | None, form: StepForm, status: int = 200, lacking=""):
    position = step.position if step else sequence.steps.count() + 1
    variant_rows = step_variant_rows(step) if step else []
    running = [r["variant"] for r in variant_rows if r["variant"].stopped_at is None]
    return render(
        request,
        "ui/sequence_step_form.html",
        {
            "sequence": sequence,
            "step": step,
            "form": form,
            "position": position,
            "impact": edit_impact(sequence, step),
            "refusal": step_jobs_refusal(step) if step else "",
            "variant_rows": variant_rows,
            # The step's own text is folded away while it is not what the step sends.
            "running_variants": running,
            "stopped_variants": [r["variant"] for r in variant_rows if r["variant"].stopped_at is not None],
            "own_text_fields": ("subject", "body") if running else (),
            "lacking": lacking,
        },
        status=status,
    )


def _step_save(request, sequence: Sequence, step: Step | None, form: StepForm):
    """POST of the step form: save through the service, or show the form again with its errors."""
    if form.is_valid():
        data = form.cleaned_data
        lacking = _lacking_words(sequence, step, data)
        if lacking and not request.POST.get("save_anyway"):
            return _step_page(request, sequence, step, form, status=400, lacking=lacking)
        try:
            saved = step_save(
                sequence_id=sequence.pk,
                step_id=step.pk if step else None,
                subject=data["subject"],
                body=data["body"],
                wait_seconds=data["wait"],
                thread=data["thread"],
                actor=_actor(request),
            )
        except StepInvalid as exc:
            for name, problems in exc.errors.items():
                for problem in problems:
                    form.add_error(name if name in form.fields else None, problem)
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            wait = duration_words(saved.wait_seconds)
            messages.success(request, f"Step {saved.position} saved (wait before sending: {wait}).")
            return redirect("sequence_detail", pk=sequence.pk)
    return _step_page(request, sequence, step, form, status=400)


def _lacking_words(sequence: Sequence, step: Step | None, data: dict) -> str:
    """Before a changed text is saved: how many people still to get the step lack a value it uses without a
    fallback ('' when nobody does, or the text did not change)."""
    if step is not None and (step.subject, step.body) == (data["subject"], data["body"]):
        return ""
    position = step.position if step else sequence.steps.count() + 1
    lacking, total, words = people_lacking(sequence=sequence, position=position, subject=data["subject"],
                                           body=data["body"])
    if not lacking:
        return ""
    return (f"{lacking} of the {_people(total)} still to get step {position} "
            f"{'lacks' if lacking == 1 else 'lack'} a value this text uses without a fallback (first: {words}): "
            f"their step-{position} email would not be sent. Give it a fallback "
            "({{ company|default:\"your team\" }}), or save anyway.")


@ui_view(OPERATE, methods=("GET", "POST"))
def step_new(request, pk: int):
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    if request.method == "POST":
        return _step_save(request, sequence, None, StepForm(request.POST))
    first = not sequence.steps.exists()
    return _step_page(
        request, sequence, None, StepForm(initial={"thread": not first, "wait": "0" if first else "3 days"})
    )


@ui_view(OPERATE, methods=("GET", "POST"))
def step_edit(request, pk: int):
    step = get_object_or_404(Step.objects.select_related("sequence__mailbox"), pk=pk)
    if request.method == "POST":
        return _step_save(request, step.sequence, step, _step_form(step, request.POST))
    form = _step_form(
        step,
        initial={
            "subject": step.subject,
            "body": step.body,
            "thread": step.thread,
            "wait": duration_words(step.wait_seconds) if step.wait_seconds else "0",
        }
    )
    return _step_page(request, step.sequence, step, form)


@ui_view(OPERATE, methods=("POST",))
def step_delete(request, pk: int):
    step = get_object_or_404(Step, pk=pk)
    try:
        campaigns.step_delete(step_id=pk, actor=_actor(request))
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Step {step.position} deleted; the steps after it moved up.")
    return redirect("sequence_detail", pk=step.sequence_id)


@ui_view(OPERATE, methods=("POST",))
def step_move(request, pk: int):
    step = get_object_or_404(Step, pk=pk)
    offset = {"up": -1, "down": 1}.get(request.POST.get("direction", ""), 0)
    try:
        campaigns.step_move(step_id=pk, offset=offset, actor=_actor(request))
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Step {step.position} moved {request.POST['direction']}.")
    return redirect("sequence_detail", pk=step.sequence_id)


@ui_view(VIEW)
def sequence_export(request, pk: int):
    """The sequence and its mailbox as TOML for `manage.py load_sequences` (secrets only by env var name)."""
    sequence = get_object_or_404(Sequence.objects.select_related("mailbox"), pk=pk)
    response = HttpResponse(sequence_export_toml(sequence), content_type="application/toml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slugify(sequence.name) or "sequence"}.toml"'
    return response


def _wait_words(step: Step) -> str:
    if step.position == 1:
        return "as soon as the sending window allows"
    if not step.wait_seconds:
        return f"right after step {step.position - 1}"
    return f"{duration_words(step.wait_seconds)} after step {step.position - 1}"


def step_rows(sequence: Sequence) -> list[dict]:
    """The steps as the sequence page lists them: wait in words, threading in words, whether it may be changed."""
    steps = list(sequence.steps.annotate(has_jobs=Exists(SendJob.objects.filter(step=OuterRef("pk"))))
                 .order_by("position"))
    rows = []
    for index, step in enumerate(steps):
        if step.position == 1:
            threading = "starts the thread"
        else:
            threading = "reply in the same thread" if step.thread else "new thread"
        rows.append(
            {
                "step": step,
                "wait": _wait_words(step),
                "threading": threading,
                "locked": step.has_jobs,
                "can_up": index > 0 and not step.has_jobs and not steps[index - 1].has_jobs,
                "can_down": index + 1 < len(steps) and not step.has_jobs and not steps[index + 1].has_jobs,
            }
        )
    return rows
