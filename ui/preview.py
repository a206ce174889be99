"""Preview a step for one contact with the strict templates, and send it as a test to oneself."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from sequences.models import Contact, Step
from sequences.permissions import OPERATE, VIEW
from sequences.previews import TEST_PREFIX, step_preview
from sequences.services import campaigns
from sequences.services.common import ServiceError
from sequences.storable import row_id

from .access import ui_view
from .forms import PreviewForm

SUGGESTED = 20  # contacts of the sequence offered in the picker


def _contact(step: Step, email: str) -> Contact | None:
    """The contact asked for, else the sequence's most recent one, else any."""
    if email:
        return Contact.objects.filter(email=email.strip().lower()).first()
    return (
        Contact.objects.filter(enrollments__sequence=step.sequence_id).order_by("-enrollments__id").first()
        or Contact.objects.order_by("id").first()
    )


@ui_view(VIEW)
def step_preview_page(request, pk: int):
    step = get_object_or_404(Step.objects.select_related("sequence__mailbox"), pk=pk)
    form = PreviewForm(request.GET or None)
    email = form.cleaned_data["contact"] if form.is_valid() else ""
    contact = _contact(step, email)
    variants = list(step.variants.order_by("id"))
    asked_variant = request.GET.get("variant", "")
    variant = next((v for v in variants if str(v.pk) == asked_variant), None)
    suggested = (
        Contact.objects.filter(enrollments__sequence=step.sequence_id)
        .order_by("-enrollments__id")
        .values_list("email", flat=True)[:SUGGESTED]
    )
    return render(
        request,
        "ui/sequence_step_preview.html",
        {
            "step": step,
            "sequence": step.sequence,
            "form": form,
            "contact": contact,
            "asked": email,
            "shown": email or (contact.email if contact else ""),
            "preview": step_preview(step=step, contact=contact, variant=variant) if contact else None,
            "variants": variants,
            "variant": variant,
            "suggested": suggested,
            "can_operate": request.user.has_perm(OPERATE),
            "test_prefix": TEST_PREFIX.strip(),
            "send_to": request.user.email,
        },
    )


@ui_view(OPERATE, methods=("POST",))
def step_send_test(request, pk: int):
    get_object_or_404(Step, pk=pk)
    contact_id = row_id(request.POST.get("contact"))
    contact = Contact.objects.filter(pk=contact_id).first() if contact_id is not None else None
    if contact is None:
        messages.error(request, "Choose the contact to send the test as first.")
        return redirect("step_preview", pk=pk)
    # The variant the preview showed (the page sends it back): the test is what the operator saw.
    asked = request.POST.get("variant", "")
    variant_id = row_id(asked) if asked else None
    if asked and variant_id is None:
        messages.error(request, "That is not a variant of the step: preview it again.")
        return redirect("step_preview", pk=pk)
    try:
        reply = campaigns.step_send_test(
            step_id=pk, contact_id=contact.pk, to=request.user.email, actor=request.user.get_username(),
            variant_id=variant_id,
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Test sent to {request.user.email} (subject starts with {TEST_PREFIX.strip()}); "
            f"the server answered: {reply}. It is not counted anywhere.",
        )
    query = {"contact": contact.email} | ({"variant": variant_id} if variant_id is not None else {})
    return redirect(f"{reverse('step_preview', args=[pk])}?{urlencode(query)}")
