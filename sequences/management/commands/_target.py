"""Shared argument handling for `pause` and `resume`."""

from __future__ import annotations

from django.core.management.base import CommandError

from mailboxes.models import Mailbox
from sequences.models import Enrollment, Sequence
from sequences.selectors import normalize_email
from workspaces.commands import one_named


def add_target_arguments(parser) -> None:
    parser.add_argument("kind", choices=["sequence", "enrollment", "mailbox"])
    parser.add_argument("name", help="sequence name, enrollment email, or mailbox name")
    parser.add_argument("--sequence", help="with `enrollment`: the sequence name")


def resolve(kind: str, name: str, sequence: str | None):
    if kind == "sequence":
        found = one_named(Sequence.objects, name, what="sequence")
    elif kind == "mailbox":
        found = Mailbox.objects.filter(name=name).first()
    else:
        if not sequence:
            raise CommandError("enrollment needs --sequence NAME")
        found = Enrollment.objects.filter(contact__email=normalize_email(name),
                                          sequence=one_named(Sequence.objects, sequence, what="sequence")).first()
    if found is None:
        raise CommandError(f"no {kind} {name!r}" + (f" in sequence {sequence!r}" if kind == "enrollment" else ""))
    return found
