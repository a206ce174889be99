"""The mailbox form's connection check, run by a worker: the page waits on it, no web worker waits on a server.

The form (ui.mailboxes) hands over what it would save: the settings, the secrets typed on it (sealed)
and where each secret was entered for (mailboxes.bound). The job builds the same unsaved mailbox, checks every
step of sending and reading, records the check in the operator log with the servers it connected to, and, when
asked to save (and the check passed, or "save anyway"), saves it. Its result, kept in Redis for ten minutes (with
its arguments, whose secrets are sealed), is the check as JSON and the id of the mailbox it saved; the page reads it
back with `form_check_result`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Any

import django_rq
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from mailboxes.checks import ConnectionCheck, connection_check, imap_login_check
from mailboxes.domain_auth import DomainAuth, Verdict
from mailboxes.models import Mailbox

from .services.domain_auth import mailbox_domain_auth_check, mailbox_domain_auth_record
from .services.imap_login import imap_login_checked
from .services.mailbox_health import mailbox_probe
from .services.mailbox_setup import mailbox_form_checked, mailbox_save

TASK = "sequences.mailbox_checks.mailbox_form_check"
CHECK_NOW_TASK = "sequences.mailbox_checks.mailbox_check_now"
RESULT_SECONDS = 600  # how long a check's result (and its sealed arguments) waits for its page


def form_check_enqueue(*, mailbox_id: int | None, fields: dict[str, Any], sealed: dict[str, str], actor: str,
                       action: str) -> str:
    """Queue the check (and the save it may lead to); the job's id, for the page that waits on it."""
    payload = {"mailbox_id": mailbox_id, "actor": actor, "action": action, "sealed": sealed,
               "fields": {name: value.isoformat() if isinstance(value, time) else value
                          for name, value in fields.items()}}
    # Queued now, not at a commit: no transaction is open here, and the page goes on to wait on it.
    queue = django_rq.get_queue("default", commit_mode="auto")
    return queue.enqueue(TASK, payload, result_ttl=RESULT_SECONDS, failure_ttl=RESULT_SECONDS, job_timeout=300).id


def check_now_enqueue(*, mailbox_id: int, actor: str) -> str:
    """Queue an operator's "Check connection" of a stored mailbox (its probe and its domain's records)."""
    queue = django_rq.get_queue("default", commit_mode="auto")
    return queue.enqueue(CHECK_NOW_TASK, mailbox_id, actor, result_ttl=RESULT_SECONDS, failure_ttl=RESULT_SECONDS,
                         job_timeout=300).id


def mailbox_check_now(mailbox_id: int, actor: str) -> dict[str, Any]:
    """The RQ job: try every step of sending (no message is sent; a blocked mailbox whose check passes is
    unblocked) and of reading (the IMAP login: a refusal shows as refused credentials at once, an accepted login
    lifts that), and read the domain's records; what the list page shows."""
    result = mailbox_probe(mailbox_id=mailbox_id, actor=actor, forced=True)
    mailbox = Mailbox.objects.get(pk=mailbox_id)
    reading: list = []
    if mailbox.has_imap:
        reading, _, login = imap_login_check(mailbox)
        imap_login_checked(mailbox_id=mailbox_id, login=login)
    domain = mailbox_domain_auth_check(mailbox_id=mailbox_id, actor=actor)
    failed = next((s for s in reading if not s.ok), None)
    text = result.text + (f"; IMAP {failed.step} failed: {failed.detail}" if failed else "")
    return {"mailbox": mailbox.name, "text": text,
            "steps": [{"step": s.step, "ok": s.ok, "detail": s.detail} for s in result.steps]
            + [{"step": f"IMAP {s.step}", "ok": s.ok, "detail": s.detail} for s in reading] + domain_steps(domain)}


def domain_steps(domain: DomainAuth | None) -> list[dict]:
    """The domain's records as check steps ("could not check" is not a failure)."""
    return [{"step": f"DNS {c.record}", "ok": c.verdict != Verdict.FAIL, "detail": c.words}
            for c in (domain.checks if domain else ())]


def unsaved_mailbox(mailbox: Mailbox | None, values: dict[str, Any]) -> Mailbox:
    """An unsaved mailbox: the stored one (if any) with these column values; its stored secrets stay bound where
    they were entered (mailboxes.bound)."""
    unsaved = copy.copy(mailbox) if mailbox is not None else Mailbox()
    for name, value in values.items():
        setattr(unsaved, name, value)
    return unsaved


def mailbox_form_check(payload: dict[str, Any]) -> dict[str, Any]:
    """The RQ job: check, record, and save when asked to and allowed; no transaction is open across the check."""
    fields = {name: Mailbox._meta.get_field(name).to_python(value) for name, value in payload["fields"].items()}
    mailbox_id, actor, action = payload["mailbox_id"], payload["actor"], payload["action"]
    stored = Mailbox.objects.get(pk=mailbox_id) if mailbox_id is not None else None
    unsaved = unsaved_mailbox(stored, {**fields, **payload["sealed"]})
    result = connection_check(unsaved)
    if stored is not None and logs_in_as_stored(stored, unsaved):
        imap_login_checked(mailbox_id=stored.pk, login=result.imap_login)  # what the server says of the stored ones
    if not (action == "save_anyway" or (action == "save" and result.passed)):
        mailbox_form_checked(mailbox_id=mailbox_id, name=fields["name"], actor=actor, check=result.text,
                             passed=result.passed, connected=result.where)
        return {"check": result.as_dict(), "saved": None}
    was_blocked = mailbox_id is not None and Mailbox.objects.filter(pk=mailbox_id, blocked_at__isnull=False).exists()
    pk = mailbox_save(mailbox_id=mailbox_id, fields=fields, sealed=payload["sealed"], actor=actor, check=result.text,
                      check_passed=result.passed, connected=result.where)
    if result.domain is not None:
        # On the mailbox (and its timeline); the operator log's entry is the save's own.
        mailbox_domain_auth_record(mailbox_id=pk, report=result.domain)
    if result.passed and was_blocked:
        mailbox_probe(mailbox_id=pk, actor=actor, forced=True)  # its held messages go through the final check
    return {"check": result.as_dict(), "saved": pk}


# What an IMAP login is made of besides the secret's columns: a check of other values says nothing of the stored ones.
LOGIN_FIELDS = ("imap_host", "imap_port", "imap_security", "imap_username", "imap_password_env",
                "imap_password_sealed", "auth", "ca_file")


def logs_in_as_stored(stored: Mailbox, unsaved: Mailbox) -> bool:
    """Whether a check of `unsaved` logs in to IMAP as the stored mailbox does (the same server, account and
    secret), so the server's answer is about the stored credentials."""
    fields = LOGIN_FIELDS + tuple(f.name for f in Mailbox._meta.concrete_fields if f.name.startswith("oauth2_"))
    return stored.has_imap and all(getattr(stored, name) == getattr(unsaved, name) for name in fields)


@dataclass(frozen=True)
class FormCheck:
    state: str  # waiting (queued or running) | failed (the job raised) | gone (expired, or Redis lost it) | done
    check: ConnectionCheck | None = None
    saved: int | None = None  # the mailbox the job saved
    waited: float = 0.0  # seconds since it was queued


def job_state(job_id: str) -> tuple[str, Any, float]:
    """(state, the job's result when done, seconds since it was queued) of a check a page waits on: waiting (queued
    or running), failed (the job raised or was stopped), gone (expired, or Redis lost it) or done."""
    try:
        job = Job.fetch(job_id, connection=django_rq.get_connection("default"))
    except NoSuchJobError:
        return "gone", None, 0.0
    status = job.get_status()
    if status == JobStatus.FINISHED:
        return "done", job.return_value(), 0.0
    if status in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        return "failed", None, 0.0
    queued = job.enqueued_at.replace(tzinfo=UTC) if job.enqueued_at else datetime.now(UTC)
    return "waiting", None, (datetime.now(UTC) - queued).total_seconds()


def form_check_result(job_id: str) -> FormCheck:
    """Where the form's check stands."""
    state, value, waited = job_state(job_id)
    if state != "done":
        return FormCheck(state, waited=waited)
    return FormCheck("done", ConnectionCheck.from_dict(value["check"]), value["saved"])
