"""Erasure and export of a person (GDPR articles 17 and 15).

Erasure, in one durable transaction: every enrollment of the person is
stopped through the one stop path (pending jobs canceled, what already left
counted), then the person's data is removed everywhere it is held — the
contact's fields and custom fields, inbound mail (raw source, bodies,
subjects, headers), timeline details, operator-log entries, the suppression
ledger's entries of the address, provider events, the admin's change log —
and what stays is a keyed hash of the normalized address in the hashed ledger
(`ErasedAddress`), which the import and the final check consult, so the
person is never imported or mailed again. The operator log records the
erasure without the address.

Per workspace. An erasure made in a workspace (its pages, `--workspace`) erases the person there: that
workspace's contact, enrollments, mail and events, and a hash in that workspace's part of the hashed ledger. The
same address as a person of another client stays that client's. One made outside any workspace (the command
without `--workspace`) erases the person in every workspace and holds the hash in the agency's part: never
imported or mailed again by anyone. Tables that belong to no workspace (the admin's change log, provider events)
have the address replaced either way.

Rows are kept where other records point at them (jobs, enrollments, events):
their personal content is blanked, and the address anywhere else in a text or
JSON column of the product's tables is replaced by "[erased]".
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.apps import apps
from django.contrib.admin.models import LogEntry
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction
from django.db.models import Q
from django.forms.models import model_to_dict

from mailboxes.models import ProviderEvent
from sequences.digests import address_digest
from sequences.ledger import ledger_dicts, send_ledger_rows
from sequences.locks import enrollments_lock
from sequences.models import Contact, Enrollment, ErasedAddress, OperatorAction, SendJob, Suppression, TimelineEvent
from sequences.selectors import normalize_email
from sequences.sending_mailbox import enrollment_mailbox
from sequences.services.common import ServiceError, operator_log
from sequences.services.stops import enrollment_stop_locked
from sequences.timeline import Event, event_record
from workspaces.scoping import scoped_workspace_id

from .data_requests import data_requests_close_erased
from .models import InboundMessage

ERASED = "[erased]"
TEXT_FIELDS = (models.CharField, models.TextField, models.JSONField)  # EmailField and SlugField are CharFields


def contact_erase(*, email: str, actor: str) -> dict[str, Any]:
    """Erase everything held about a person and keep only the keyed hash of the address; durable transaction."""
    email = normalize_email(email)
    if "@" not in email:
        raise ServiceError(f"{email!r} is not an email address")
    digest = address_digest(email)
    workspace_id = scoped_workspace_id()
    with transaction.atomic(durable=True):
        # The address may be a person in several workspaces (outside a workspace's scope): each one is erased.
        contacts = list(Contact.objects.filter(email=email).order_by("pk"))
        enrollments = enrollments_lock(Enrollment.objects.filter(contact__in=contacts)) if contacts else []
        stopped = sum(
            enrollment_stop_locked(e, reason=Enrollment.StopReason.SUPPRESSED, actor=actor, source="erasure").changed
            for e in enrollments
        )
        # In a workspace (a page, --workspace): that workspace's part; outside any: the agency's, everywhere.
        ErasedAddress._base_manager.get_or_create(digest=digest, workspace_id=workspace_id)
        ids = [e.pk for e in enrollments]
        inbound = _inbound_blank(email, ids)
        TimelineEvent.objects.filter(Q(email=email) | Q(enrollment_id__in=ids) | Q(job__enrollment_id__in=ids)).update(
            email="", data={}
        )
        # The hash holds the address from now on: the workspace's own entries go (never the agency's, which hold
        # the person in other workspaces too); outside any workspace, every part's.
        own = {"workspace_id": workspace_id} if workspace_id is not None else {}
        Suppression._base_manager.filter(value=email, **own).delete()
        data_requests_close_erased(address=email, actor=actor)  # the address itself is blanked with the rest
        ProviderEvent.objects.filter(recipient=email).update(recipient="", raw={}, effect=ERASED)
        if contacts:  # one per workspace at most: the same erased address in each
            Contact.objects.filter(pk__in=[c.pk for c in contacts]).update(
                email=f"erased-{digest[:16]}@erased.invalid",
                first_name="",
                last_name="",
                company="",
                fields={},
                timezone="UTC",
            )
        replaced = _replace_everywhere(email)
        first = contacts[0].pk if contacts else None
        result = {
            "contact": first,
            "enrollments_stopped": stopped,
            "enrollments": len(ids),
            "inbound_blanked": inbound,
            "mentions_replaced": replaced,
            "digest": digest[:12],
        }
        if len(contacts) > 1:
            result["contacts"] = [c.pk for c in contacts]
        event_record(kind=Event.CONTACT_ERASED, **result)
        # The log names the contact's row and the hash's prefix, never the address.
        operator_log(
            actor=actor or "system",
            action="contact_erase",
            target=(f"erased contact #{first}" + (f" and {len(contacts) - 1} more" if len(contacts) > 1 else ""))
            if contacts else "erased address (no contact)",
            result=result,
        )
        return result


def _inbound_blank(email: str, enrollment_ids: list[int]) -> int:
    """Blank the inbound mail from, to or about the person: raw source, subject, body, headers, addresses."""
    # The raw source is bytes: read in this process, a row at a time (erasure is rare; raw source is purged
    # after the retention period).
    mentioning = [pk for pk, raw in InboundMessage.objects.exclude(raw=b"").values_list("pk", "raw").iterator()
                  if email.encode() in bytes(raw).lower()]
    rows = InboundMessage.objects.filter(
        Q(enrollment_id__in=enrollment_ids)
        | Q(job__enrollment_id__in=enrollment_ids)
        | Q(from_address=email)
        | _names_recipient(email)
        | Q(pk__in=mentioning)
    )
    return rows.update(
        raw=b"",
        raw_truncated=False,
        subject="",
        from_address="",
        from_name="",
        headers={},
        recipients=[],
        classification_reason="",
        reply_text="",
        effect=ERASED,
        parse_error="",
    )


def _names_recipient(email: str) -> Q:
    """Inbound rows whose recipients list holds the address: its JSON text holds it as a quoted string."""
    return Q(recipients__icontains=json.dumps(email))


def _replace_everywhere(email: str) -> int:
    """Replace the address in every text and JSON column of the product's tables (and the admin log)."""
    pattern = re.compile(re.escape(email), re.IGNORECASE)
    replaced = 0
    # By label, not import: the meetings app (bookings, above this one) holds invitee addresses too.
    labels = ("sequences", "inbound", "mailboxes", "meetings")
    targets = [model for app in labels for model in apps.get_app_config(app).get_models()]
    targets.append(LogEntry)
    for model in targets:
        if model is ErasedAddress:
            continue
        for field in model._meta.concrete_fields:
            if not isinstance(field, TEXT_FIELDS):
                continue
            # icontains reads a JSON column as its text on both databases.
            for pk, value in model.objects.filter(**{f"{field.name}__icontains": email}).values_list("pk", field.name):
                if isinstance(field, models.JSONField):
                    text = json.dumps(value, cls=DjangoJSONEncoder)
                    new = json.loads(pattern.sub(ERASED, text))
                else:
                    new = pattern.sub(ERASED, value)
                replaced += model.objects.filter(pk=pk).update(**{field.name: new})
    return replaced


# --- export (article 15) ----------------------------------------------------------------------


def contact_export(*, email: str) -> dict[str, Any]:
    """Everything held about a person, as JSON-ready data (reads only)."""
    email = normalize_email(email)
    contact = Contact.objects.filter(email=email).first()
    if contact is None:
        raise ServiceError(f"no contact {email}")
    enrollments = list(Enrollment.objects.filter(contact=contact).select_related("mailbox", "sequence__mailbox"))
    ids = [e.pk for e in enrollments]
    jobs = SendJob.objects.filter(enrollment_id__in=ids).select_related("step").order_by("id")
    events = TimelineEvent.objects.filter(Q(email=email) | Q(enrollment_id__in=ids)).order_by("at", "id")
    inbound = InboundMessage.objects.filter(
        Q(enrollment_id__in=ids) | Q(from_address=email) | _names_recipient(email)
    ).order_by("id")
    mentions = re.escape(email)
    return _plain(
        {
            "address": email,
            "contact": model_to_dict(contact) | {"created_at": contact.created_at},
            "enrollments": [
                {
                    "id": e.pk,
                    "sequence": e.sequence.name,
                    "mailbox": enrollment_mailbox(e).name,
                    "status": e.status,
                    "stop_reason": e.stop_reason,
                    "stopped_at": e.stopped_at,
                    "created_at": e.created_at,
                }
                for e in enrollments
            ],
            "messages": [
                {
                    "id": j.pk,
                    "enrollment": j.enrollment_id,
                    "step": j.step.position,
                    "state": j.state,
                    "scheduled_at": j.scheduled_at,
                    "submitted_at": j.submitted_at,
                    "message_id": j.message_id,
                    "server_reply": j.smtp_reply,
                    "error": j.error,
                }
                for j in jobs
            ],
            "timeline": [
                {"at": e.at, "kind": e.kind, "enrollment": e.enrollment_id, "job": e.job_id, "data": e.data}
                for e in events
            ],
            # Every message that was due, and what left or what held it back (sequences.ledger).
            "send_ledger": list(ledger_dicts(send_ledger_rows(contact_id=contact.pk))),
            "inbound": [
                {
                    "id": m.pk,
                    "mailbox": m.mailbox.name,
                    "received": m.internaldate,
                    "kind": m.kind,
                    "from": m.from_address,
                    "from_name": m.from_name,
                    "subject": m.subject,
                    "headers": m.headers,
                    "text": m.reply_text,
                    "effect": m.effect,
                    "raw": bytes(m.raw).decode("utf-8", "replace"),
                }
                for m in inbound.select_related("mailbox")
            ],
            "suppressions": [
                {
                    "value": s.value,
                    "action": s.action,
                    "reason": s.reason,
                    "note": s.note,
                    "source": s.source,
                    "at": s.created_at,
                }
                for s in Suppression.objects.filter(value=email).order_by("id")
            ],
            "provider_events": [
                {"provider": p.provider, "type": p.event_type, "at": p.occurred_at, "effect": p.effect}
                for p in ProviderEvent.objects.filter(recipient=email).order_by("id")
            ],
            "operator_log": [
                {"at": a.at, "actor": a.actor, "action": a.action, "target": a.target, "result": a.result}
                for a in OperatorAction.objects.filter(target__iregex=mentions).order_by("at", "id")
            ],
        }
    )


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """Dates and other values as JSON text would carry them."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))
