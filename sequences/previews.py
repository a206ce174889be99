"""A step rendered for one contact, as the operator previews it, and the test message built from it.

Reads only: no send job exists for a preview or a test, so nothing here is
seen by the final check, the stop paths, the daily cap or the results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.utils import format_datetime, make_msgid

from django.template import Context, TemplateSyntaxError
from django.template.base import Variable, VariableDoesNotExist, VariableNode
from django.utils import timezone

from .messages import (
    FALLBACKS,
    REPLY_PREFIX,
    MissingValue,
    PrepareError,
    _plain,
    address_header,
    compile_template,
    contact_context,
    message_bytes,
    render,
)
from .models import Contact, Enrollment, SendJob, Step, StepVariant
from .variants import running_variants, variant_pick

TEST_PREFIX = "[Test] "
TEST_HEADER = "X-Outreach-Test"


@dataclass
class Preview:
    subject: str = ""
    body: str = ""
    errors: list[str] = field(default_factory=list)  # "Body: missing value for company", one per field
    fallbacks: list[str] = field(default_factory=list)  # the variables this contact lacks that have a fallback
    variant: StepVariant | None = None  # the A/B variant shown; None: the step's own text

    @property
    def ok(self) -> bool:
        return not self.errors


def _fallbacks_used(text: str, context: dict) -> list[str]:
    """The variables with a fallback filter that are undefined or empty for this contact."""
    used = []
    for node in compile_template(text).nodelist.get_nodes_by_type(VariableNode):
        expression = node.filter_expression
        var = expression.var
        if not isinstance(var, Variable) or var.lookups is None:
            continue
        if not any(func in FALLBACKS for func, _ in expression.filters):
            continue
        try:
            value = var.resolve(Context(context))
        except VariableDoesNotExist:
            value = None
        if value is None or (isinstance(value, str) and not value.strip()):
            used.append(var.var)
    return used


def _seed(step: Step, contact: Contact) -> int:
    """What a real message's spins are seeded with: the contact's enrollment in the sequence (its id), if any."""
    return Enrollment.objects.filter(sequence_id=step.sequence_id, contact=contact).values_list("pk", flat=True
                                                                                                ).first() or 0


def step_variant_for(*, step: Step, contact: Contact, asked: StepVariant | None = None) -> StepVariant | None:
    """The A/B variant of *step* that the preview shows and the test sends for *contact*; None: the step's own text.

    The one asked for, if any; else what the person gets, by the send's own rule: the variant on their job for
    the step (sent or still to be sent: chosen once, when the job was created); before that job exists, the one
    the split gives their enrollment (`variants.variant_pick`, as `scheduling.schedule_step` will); for a contact
    in no enrollment of the sequence, the first running variant.
    """
    if asked is not None:
        return asked
    enrollment_id = _seed(step, contact)
    if enrollment_id:
        job = (SendJob.objects.filter(enrollment_id=enrollment_id, step_id=step.pk)
               .exclude(state=SendJob.State.CANCELED).select_related("variant").order_by("-pk").first())
        if job is not None:
            return job.variant
        picked = variant_pick(running_variants(step.pk), enrollment_id=enrollment_id, step_id=step.pk)
    else:
        picked = next((variant_id for variant_id, _ in running_variants(step.pk)), None)
    return StepVariant.objects.filter(pk=picked).first() if picked is not None else None


def _texts(step: Step, variant: StepVariant | None) -> tuple[str, str]:
    """The subject and body templates sent: the variant's, else the step's own (`messages.step_texts`)."""
    return (variant.subject, variant.body) if variant is not None else (step.subject, step.body)


def _thread_subject(step: Step, contact: Contact) -> str:
    """The subject template a threaded follow-up without a subject of its own answers with "Re:": that of the
    message its thread starts at (the latest earlier step that is step 1 or not sent as a reply, as
    `messages.thread_of` finds it), in the variant the person got or gets there."""
    for earlier in step.sequence.steps.filter(position__lt=step.position).order_by("-position"):
        if earlier.position == 1 or not earlier.thread:
            return _texts(earlier, step_variant_for(step=earlier, contact=contact))[0]
    return ""


def step_preview(*, step: Step, contact: Contact, variant: StepVariant | None = None) -> Preview:
    """Subject and body of *step* (or of one of its A/B variants) for *contact*, each spin as that contact gets it;
    each field's error names what is missing or wrong."""
    preview = Preview()
    try:
        context = contact_context(contact, step.sequence)
    except PrepareError as exc:
        preview.errors.append(f"Contact: {exc}")
        return preview
    preview.variant = variant = step_variant_for(step=step, contact=contact, asked=variant)
    if variant is None and not step.body.strip():
        preview.errors.append(f"Step {step.position} has no text of its own and none of its A/B variants is "
                              "running: start or add a variant")
        return preview
    subject, body = _texts(step, variant)
    seed = _seed(step, contact)
    reply = not subject.strip() and step.thread and step.position > 1  # "Re: " and the thread's first subject
    if reply:
        subject = _thread_subject(step, contact)
    for label, text in (("Subject", subject), ("Body", body)):
        try:
            rendered = render(text, context, seed=seed)
            fallbacks = _fallbacks_used(text, context)
        except MissingValue as exc:
            preview.errors.append(
                f"{label}: {exc} — this contact has no value for it and the template gives "
                f'no fallback (write it as {{{{ {exc.name}|default:"…" }}}})'
            )
            continue
        except TemplateSyntaxError as exc:
            preview.errors.append(f"{label}: template error: {_plain(exc)}")
            continue
        except PrepareError as exc:  # a filter that fails on this contact's values, or an output over the bounds
            preview.errors.append(f"{label}: template error: {exc}")
            continue
        preview.fallbacks += [
            f"{name} is empty for this contact: the fallback is used"
            for name in fallbacks
            if f"{name} is empty for this contact: the fallback is used" not in preview.fallbacks
        ]
        if label == "Subject":
            preview.subject = " ".join(rendered.split())
            if reply and preview.subject:
                preview.subject = "Re: " + REPLY_PREFIX.sub("", preview.subject)  # as `messages.message_prepare`
        else:
            preview.body = rendered
    return preview


@dataclass(frozen=True)
class TestMessage:
    sender: str
    recipient: str
    message_id: str
    subject: str
    data: bytes


def test_message_build(*, step: Step, contact: Contact, to: str, variant: StepVariant | None = None) -> TestMessage:
    """The step as *contact* would get it (its preview, `variant` as there), addressed to *to*, subject "[Test] …"
    and marked in a header."""
    preview = step_preview(step=step, contact=contact, variant=variant)
    if not preview.ok:
        raise PrepareError("; ".join(preview.errors))
    mailbox = step.sequence.mailbox
    recipient = address_header("", to)
    sender = address_header(mailbox.display_name, mailbox.address)
    # Not one of the sequence's Message-IDs: a reply to a test correlates with no send job.
    message_id = make_msgid("outreach-test", domain=sender.domain)
    subject = TEST_PREFIX + preview.subject
    variant_words = f" (variant {preview.variant.name})" if preview.variant is not None else ""
    data = message_bytes([
        ("From", sender), ("To", recipient), ("Date", format_datetime(timezone.now())), ("Message-ID", message_id),
        ("Subject", subject),
        (TEST_HEADER, f"step {step.position}{variant_words} of sequence {step.sequence_id}; a test, never counted"),
    ], preview.body, email=to)
    return TestMessage(
        sender=sender.addr_spec, recipient=recipient.addr_spec, message_id=message_id, subject=subject, data=data
    )
