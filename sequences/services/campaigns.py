"""Building a sequence from the operator UI: create and edit it, save, move and delete its steps, send a test.

None of this changes a state: steps are content. A job renders its step when
it is prepared, so new text reaches every job not yet prepared; a job keeps
the time it was scheduled for.

Locks (`sequences.locks` order): a change of structure (deleting or moving a
step, changing the mailbox) locks every enrollment of the sequence first, as a
sequence pause does, then the sequence row, then its steps. The next step's job
is chosen and created under its enrollment's lock (`scheduling.schedule_next`),
so a step found without jobs keeps none until we commit, and the record of a
submission never meets a step deleted under it. Editing a step's text locks
only the sequence and its steps: a job renders its step when it is prepared.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection, transaction
from django.db.models import Count, Q

from mailboxes.models import Mailbox
from mailboxes.selectors import transport_for
from mailboxes.transports.base import TransportError

from ..booking_token import booking_url_problem
from ..locks import enrollments_lock, sequence_lock
from ..messages import PrepareError, step_validate
from ..models import Contact, Enrollment, SendJob, Sequence, Step
from ..previews import test_message_build
from ..selectors import sequence_name_taken, suppression_active_for
from ..states import LIVE, PASSED_HANDOFF
from .common import ServiceError, T, fields_saved, operator_log

S = SendJob.State


class StepInvalid(ServiceError):
    """A step that may not be saved; `errors` by field, as `messages.step_validate` gives them."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("; ".join(f"{k}: {', '.join(v)}" for k, v in errors.items()))
        self.errors = errors


def _log(actor: str, action: str, sequence_id: int, target: str, result: dict) -> None:
    """One operator-log row about a sequence, in the caller's transaction (or none, for a test send)."""
    operator_log(actor=actor, action=action, target=target, kind=T.SEQUENCE, target_id=sequence_id, result=result)


def sequence_name_free(name: str, *, workspace_id: int, sequence_id: int | None = None) -> str:
    """The name, stripped, when no other sequence of the workspace has it; ServiceError in words otherwise."""
    name = name.strip()
    if not name:
        raise ServiceError("A sequence needs a name.")
    if sequence_name_taken(workspace_id=workspace_id, name=name, sequence_id=sequence_id):
        raise ServiceError(f"A sequence named “{name}” already exists.")
    return name


def sequence_create(*, name: str, mailbox_id: int, actor: str) -> Sequence:
    """A new, empty sequence sending from a mailbox, as a draft (people may be enrolled; nothing is sent until
    it is launched: `stops.sequence_launch`); its own transaction."""
    with transaction.atomic():
        mailbox = Mailbox.objects.get(pk=mailbox_id)
        # In its mailbox's workspace (the request's: the mailbox was found through its scope).
        sequence = Sequence.objects.create(name=sequence_name_free(name, workspace_id=mailbox.workspace_id),
                                           mailbox=mailbox, workspace_id=mailbox.workspace_id,
                                           status=Sequence.Status.DRAFT)
        _log(actor, "sequence_create", sequence.pk, sequence.name, {"mailbox": sequence.mailbox.name,
                                                                     "status": "draft"})
    return sequence


def sequence_update(*, sequence_id: int, name: str, mailbox_id: int, actor: str) -> Sequence:
    """Rename a sequence or move it to another mailbox (only with nothing on its way); its own transaction."""
    with transaction.atomic():
        if Sequence.objects.filter(pk=sequence_id).exclude(mailbox_id=mailbox_id).exists():
            # No job may be created for it while we check that none is on its way.
            enrollments_lock(Enrollment.objects.filter(sequence_id=sequence_id))
        sequence = sequence_lock(sequence_id=sequence_id)
        name = sequence_name_free(name, workspace_id=sequence.workspace_id, sequence_id=sequence_id)
        changes = {}
        if mailbox_id != sequence.mailbox_id:
            # A job already scheduled carries a Message-ID of the old mailbox's domain and counts against its cap.
            live = SendJob.objects.filter(enrollment__sequence=sequence, state__in=LIVE).count()
            if live:
                raise ServiceError(
                    f"{live} email{'' if live == 1 else 's'} of this sequence {'is' if live == 1 else 'are'} on "
                    "the way from the current mailbox. Pause the sequence first, change the mailbox, then resume: "
                    "the next steps are then scheduled from the new one."
                )
            new = Mailbox.objects.get(pk=mailbox_id)
            changes["mailbox"] = f"{sequence.mailbox.name} → {new.name}"
            sequence.mailbox = new
        if name != sequence.name:
            changes["name"] = f"{sequence.name} → {name}"
            sequence.name = name
        if changes:
            sequence.save(update_fields=["name", "mailbox"])
            _log(actor, "sequence_edit", sequence.pk, sequence.name, changes)
    return sequence


def _locked_steps(sequence_id: int, *, structure: bool = False) -> tuple[Sequence, list[Step]]:
    """Lock the sequence and its steps; with *structure*, every enrollment of it before them (the lock order)."""
    if structure:
        enrollments_lock(Enrollment.objects.filter(sequence_id=sequence_id))
    sequence = sequence_lock(sequence_id=sequence_id)
    steps = list(Step.objects.select_for_update().filter(sequence=sequence).order_by("id"))
    return sequence, sorted(steps, key=lambda s: s.position)


def step_save(
    *, sequence_id: int, step_id: int | None, subject: str, body: str, wait_seconds: int, thread: bool, actor: str
) -> Step:
    """Change a step's text, wait or threading, or add one at the end; StepInvalid says what is wrong."""
    with transaction.atomic():
        sequence, steps = _locked_steps(sequence_id)
        step = next((s for s in steps if s.pk == step_id), None) if step_id else None
        if step_id and step is None:
            raise ServiceError("That step is not part of this sequence any more.")
        position = step.position if step else len(steps) + 1
        thread = thread and position > 1  # step 1 starts the thread
        errors = step_validate(subject=subject, body=body, position=position)
        if position > 1 and not thread and not subject.strip():
            errors.setdefault("subject", []).append("a step that starts a new thread needs a subject")
        if errors:
            raise StepInvalid(errors)
        values = {"subject": subject, "body": body, "wait_seconds": wait_seconds, "thread": thread}
        if step is None:
            step = Step.objects.create(sequence=sequence, position=position, **values)
            changed = sorted(values)
        else:
            changed = fields_saved(step, values)
        if changed:
            _log(
                actor,
                "step_add" if step_id is None else "step_edit",
                sequence.pk,
                f"step {position} of {sequence.name}",
                {"changed": ", ".join(changed)},
            )
    return step


def step_jobs_refusal(step: Step) -> str:
    """Why a step cannot be deleted or moved (it has send jobs, which keep their step), or '' when it can."""
    counts = SendJob.objects.filter(step=step).aggregate(
        sent=Count("id", filter=Q(state__in=PASSED_HANDOFF)),
        live=Count("id", filter=Q(state__in=LIVE)),
        total=Count("id"),
    )
    if counts["sent"]:
        n = counts["sent"]
        return (
            f"Step {step.position} cannot be deleted or moved: {n} email{'' if n == 1 else 's'} of it "
            f"{'was' if n == 1 else 'were'} already sent, and {'its' if n == 1 else 'their'} record names "
            "this step. Edit its text for the people still to get it, or pause the sequence and make a new one."
        )
    if counts["live"]:
        n = counts["live"]
        return (
            f"Step {step.position} cannot be deleted or moved: {n} {'person has' if n == 1 else 'people have'} "
            "it scheduled. Pause the sequence first (that cancels them), then change the steps."
        )
    if counts["total"]:
        return (
            f"Step {step.position} cannot be deleted or moved: canceled or failed emails of it stay in the "
            "history and name this step."
        )
    return ""


def _renumber(steps: list[Step]) -> None:
    """Give *steps* positions 1..n in list order; two passes, so that no two rows share a position meanwhile."""
    top = max([s.position for s in steps] + [len(steps)])
    for offset, step in enumerate(steps, 1):
        Step.objects.filter(pk=step.pk).update(position=top + offset)
    for position, step in enumerate(steps, 1):
        Step.objects.filter(pk=step.pk).update(position=position)
        step.position = position


def _refuse_moving(old: list[Step], new: list[Step]) -> None:
    for position, step in enumerate(new, 1):
        if step.position != position:
            refusal = step_jobs_refusal(step)
            if refusal:
                raise ServiceError(refusal)


def _first_needs_subject(steps: list[Step]) -> None:
    if steps and not steps[0].subject.strip():
        raise ServiceError("The first step needs a subject: give this step one before it becomes step 1.")


def step_delete(*, step_id: int, actor: str) -> None:
    """Delete a step nobody has reached (no send jobs); later steps move up. Its own transaction."""
    with transaction.atomic():
        step = Step.objects.get(pk=step_id)
        sequence, steps = _locked_steps(step.sequence_id, structure=True)
        step = next(s for s in steps if s.pk == step_id)
        refusal = step_jobs_refusal(step)
        if refusal:
            raise ServiceError(refusal)
        rest = [s for s in steps if s.pk != step_id]
        _refuse_moving(steps, rest)
        _first_needs_subject(rest)
        if rest and rest[0].thread:
            Step.objects.filter(pk=rest[0].pk).update(thread=False)  # step 1 starts the thread
        step.delete()
        _renumber(rest)
        _log(actor, "step_delete", sequence.pk, f"step {step.position} of {sequence.name}", {"steps_now": len(rest)})


def step_move(*, step_id: int, offset: int, actor: str) -> None:
    """Swap a step with its neighbour (offset -1: up, +1: down); both must have no send jobs."""
    with transaction.atomic():
        step = Step.objects.get(pk=step_id)
        sequence, steps = _locked_steps(step.sequence_id, structure=True)
        index = next(i for i, s in enumerate(steps) if s.pk == step_id)
        other = index + offset
        if offset not in (-1, 1) or not 0 <= other < len(steps):
            raise ServiceError("That step has no neighbour in that direction.")
        new = list(steps)
        new[index], new[other] = new[other], new[index]
        _refuse_moving(steps, new)
        _first_needs_subject(new)
        was = steps[index].position
        _renumber(new)
        Step.objects.filter(pk=new[0].pk).update(thread=False)
        _log(
            actor,
            "step_move",
            sequence.pk,
            f"step {was} of {sequence.name}",
            {"now": f"step {new.index(steps[index]) + 1}"},
        )


def step_send_test(*, step_id: int, contact_id: int, to: str, actor: str, variant_id: int | None = None) -> str:
    """Send the step as *contact* would get it to *to* ("[Test] …"), through the mailbox's own transport: the
    variant its preview shows (`previews.step_variant_for`: `variant_id`, else the one the person gets).

    No send job exists for it: the final check, the stop paths, the daily cap, the charts and the results never
    see it. The operator log records it. No transaction is open during the hand-off. Returns the server's reply.
    """
    step = Step.objects.select_related("sequence__mailbox").get(pk=step_id)
    contact = Contact.objects.get(pk=contact_id)
    variant = step.variants.filter(pk=variant_id).first() if variant_id is not None else None
    if variant_id is not None and variant is None:
        raise ServiceError(f"Step {step.position} has no such A/B variant (any more): preview it again.")
    mailbox = step.sequence.mailbox
    if not to:
        raise ServiceError("Your account has no email address to send the test to; an admin can add one.")
    if (entry := suppression_active_for(to)) is not None:
        # A test is mail like any other to the address it goes to: a suppressed one gets none.
        raise ServiceError(f"The test was not sent: {to} is on the suppression list ({entry.reason}); "
                           "lift it first, or send the test to another address.")
    if mailbox.paused:
        raise ServiceError(f"The mailbox {mailbox.name} is paused: nothing leaves it, tests included.")
    if mailbox.blocked_at is not None:
        raise ServiceError(
            f"The mailbox {mailbox.name} cannot send right now (blocked): {mailbox.blocked_reason} "
            "— check its connection on the mailboxes page."
        )
    try:
        message = test_message_build(step=step, contact=contact, to=to, variant=variant)
    except PrepareError as exc:
        raise ServiceError(f"The test was not sent: {exc}") from None
    target = f"step {step.position} of {step.sequence.name} as {contact.email} would get it, to {to}"
    assert not connection.in_atomic_block, "never hold a transaction across the transport"
    try:
        submission = transport_for(mailbox).send(
            sender=message.sender, recipient=message.recipient, message=message.data
        )
    except TransportError as exc:
        _log(actor, "send_test", step.sequence_id, target, {"sent": False, "error": str(exc)[:500]})
        raise ServiceError(f"The mail server refused the test: {exc}") from None
    _log(actor, "send_test", step.sequence_id, target, {"sent": True, "server reply": submission.reply[:500]})
    return submission.reply


def sequence_setting_set(*, sequence_id: int, field: str, value: str, actor: str,
                         logged: Callable[[str], str]) -> bool:
    """Set one setting of the sequence under its lock; True when it changed, then one operator-log row with
    `logged(before)` as what changed. The caller has checked the value."""
    with transaction.atomic():
        sequence = sequence_lock(sequence_id=sequence_id)
        before = getattr(sequence, field)
        if before == value:
            return False
        setattr(sequence, field, value)
        sequence.save(update_fields=[field])
        operator_log(actor=actor, action="sequence_edit", target=sequence.name, kind=T.SEQUENCE,
                     target_id=sequence.pk, result={field: logged(before)})
    return True


def sequence_unsubscribe_style_set(*, sequence_id: int, style: str, actor: str) -> bool:
    """Set how the sequence's emails offer to unsubscribe; True when it changed (then one operator-log row)."""
    if style not in Sequence.UnsubscribeStyle.values:
        styles = ", ".join(Sequence.UnsubscribeStyle.values)
        raise ServiceError(f"Unknown unsubscribe style {style!r}: one of {styles}.")
    return sequence_setting_set(sequence_id=sequence_id, field="unsubscribe_style", value=style, actor=actor,
                                logged=lambda before: f"{before} → {style}")


def sequence_booking_url_set(*, sequence_id: int, url: str, actor: str) -> bool:
    """Set the scheduling page `{{ booking_link }}` links to ("" removes it); True when it changed (then one
    operator-log row). Applies to every email not yet prepared."""
    url = url.strip()
    if problem := booking_url_problem(url):
        raise ServiceError(f"Booking URL {problem}.")
    return sequence_setting_set(sequence_id=sequence_id, field="booking_url", value=url, actor=actor,
                                logged=lambda before: f"{before or '(none)'} → {url or '(none)'}")
