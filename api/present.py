"""Rows as the API shows them: the same labels and summaries as the UI (`sequences.labels`)."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet

from inbound.models import ReplyRule
from inbound.reply_rules import RuleDid, reply_rules_of, wait_words
from inbound.reply_rules_config import plain
from sequences.labels import duration_words, job_label_and_tone, stop_summary_lines, stop_summary_text
from sequences.models import Contact, Enrollment, Sequence, Suppression
from sequences.selectors import jobs_with_labels

MAX_PER_PAGE = 500


def page_of(qs: QuerySet, *, page: int, per_page: int, item) -> dict[str, Any]:
    paginator = Paginator(qs, max(1, min(per_page, MAX_PER_PAGE)))
    current = paginator.get_page(page)
    return {
        "count": paginator.count,
        "page": current.number,
        "pages": paginator.num_pages,
        "items": [item(row) for row in current.object_list],
    }


def contact_out(contact: Contact) -> dict[str, Any]:
    return {
        "id": contact.pk,
        "email": contact.email,
        "first_name": contact.first_name,
        "last_name": contact.last_name,
        "company": contact.company,
        "timezone": contact.timezone,
        "fields": contact.fields,
        "created_at": contact.created_at,
    }


def enrollment_row(enrollment: Enrollment) -> dict[str, Any]:
    return {
        "id": enrollment.pk,
        "email": enrollment.contact.email,
        "sequence_id": enrollment.sequence_id,
        "status": enrollment.status,
        "stop_reason": enrollment.stop_reason,
        "created_at": enrollment.created_at,
    }


def enrollment_out(enrollment_id: int) -> dict[str, Any]:
    enrollment = Enrollment.objects.select_related("contact", "sequence").get(pk=enrollment_id)
    jobs = []
    for job in jobs_with_labels().filter(enrollment_id=enrollment_id).order_by("id"):
        label = job_label_and_tone(job)
        jobs.append(
            {
                "id": job.pk,
                "step": job.step.position,
                "state": job.state,
                "label": label.text,
                "tone": label.tone.value,
                "scheduled_at": job.scheduled_at,
                "submitted_at": job.submitted_at,
                "message_id": job.message_id,
            }
        )
    return enrollment_row(enrollment) | {
        "sequence": enrollment.sequence.name,
        "stopped_at": enrollment.stopped_at,
        "jobs": jobs,
    }


def stop_out(summary) -> dict[str, Any]:
    return {
        "enrollments": summary.enrollments,
        "canceled": summary.canceled,
        "in_flight": summary.in_flight,
        "already_submitted": summary.submitted,
        "summary": stop_summary_lines(summary),
        "text": stop_summary_text(summary),
    }


def sequence_out(sequence_id: int) -> dict[str, Any]:
    sequence = Sequence.objects.select_related("mailbox").get(pk=sequence_id)
    steps = [
        {
            "position": s.position,
            "subject": s.subject,
            "body": s.body,
            "wait_seconds": s.wait_seconds,
            "wait": duration_words(s.wait_seconds),
            "thread": s.thread,
        }
        for s in sequence.steps.order_by("position")
    ]
    return {
        "id": sequence.pk,
        "name": sequence.name,
        "status": sequence.status,
        "mailbox": sequence.mailbox.name,
        "enrollments": sequence.enrollments.count(),
        "steps": steps,
        "reply_rules": [reply_rule_out(row) for row in reply_rules_of(sequence.pk)],
    }


def reply_rule_out(row: RuleDid) -> dict[str, Any]:
    """A reply rule as the sequence's page shows it: the rule, its words, what it did so far."""
    rule, enroll = row.rule, row.rule.action == ReplyRule.Action.ENROLL
    return {
        "position": rule.position,
        "category": rule.category,
        "action": rule.action,
        "target": plain(rule)["target"],
        "after_seconds": rule.after_seconds if enroll else None,
        "after": (wait_words(rule.after_seconds) if rule.after_seconds else "at once") if enroll else None,
        "words": row.words,
        "done": row.done,
        "not_done": row.refused,
        "failed": row.failed,
        "undone": row.undone,
        "latest_not_done": row.latest_refusal,
    }


def suppression_out(entry: Suppression) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "value": entry.value,
        "is_domain": entry.is_domain,
        "action": entry.action,
        "reason": entry.reason,
        "note": entry.note,
        "source": entry.source,
        "actor": entry.actor,
        "created_at": entry.created_at,
    }
