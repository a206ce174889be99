"""The mailbox drills: a wrong password and an untrusted certificate, under real `rqworker send` processes.

Expected: no job fails; the mailbox is blocked after at most one AUTH attempt per worker; a probe costs
at most one more; once fixed (the right password in the workers' environment, or the CA in ca_file)
a probe unblocks it and every message goes out exactly once, each through the final check.
"""

from __future__ import annotations

import contextlib
import os
import time

from mailboxes.models import Mailbox
from proving.drills.audit import audit
from proving.drills.faults.base import Ctx, Recovery, Row, all_final, enroll_many, make_mailbox, make_sequence
from proving.harness.smtp import SmtpServer
from proving.harness.stack import wait_for
from proving.harness.tls import make_certificates
from sequences.models import SendJob, TimelineEvent
from sequences.services.mailbox_health import mailbox_probe

S = SendJob.State
SECRET_ENV = "OUTREACH_SECRET_DRILL_SMTP"
RIGHT, WRONG = "drill-right-password", "drill-wrong-password"
WORKERS = 2


def drill_mailbox(ctx: Ctx, *, n: int) -> list[Row]:
    return [_auth(ctx, n=n), _tls(ctx, n=max(n // 5, 5))]


@contextlib.contextmanager
def _environment(**values: str):
    """The probe runs in this process: give it the same environment the workers have."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _until_all_held(job_ids: list[int], mailbox: Mailbox, recovery: Recovery) -> None:
    def held() -> bool:
        recovery.supervise()
        states = set(SendJob.objects.filter(pk__in=job_ids).values_list("state", flat=True))
        return Mailbox.objects.filter(pk=mailbox.pk, blocked_at__isnull=False).exists() and states == {S.SCHEDULED}

    wait_for(held, timeout=60, what="the mailbox to be blocked with every job waiting")


def _deliver(ctx: Ctx, job_ids: list[int], **env) -> None:
    with Recovery(ctx, workers=WORKERS, name="fixed", **env) as recovery:
        wait_for(lambda: (recovery.supervise(), all_final(job_ids))[1], timeout=120,
                 what="every held job to go out after the mailbox was unblocked")


def _settle(row: Row, job_ids: list[int], server: SmtpServer, *, started: float) -> Row:
    jobs = SendJob.objects.filter(pk__in=job_ids)
    row.audit = audit(jobs, server.message_ids())
    not_sent = jobs.exclude(state=S.SUBMITTED).count()
    if not_sent:
        row.problems.append(f"{not_sent} job(s) did not go out")
    for job in jobs:
        checks = TimelineEvent.objects.filter(job=job, kind="job_authorized", data__final_check=True).count()
        if checks < 1:
            row.problems.append(f"job {job.pk} went out without a final check")
    row.seconds = time.monotonic() - started
    return row.settle()


def _auth(ctx: Ctx, *, n: int) -> Row:
    started = time.monotonic()
    row = Row("mailbox: wrong password", runs=n)
    with SmtpServer(credentials={"drill": RIGHT}) as server:
        mailbox = make_mailbox("auth", port=server.port, smtp_username="drill", smtp_password_env=SECRET_ENV)
        job_ids = enroll_many(make_sequence(mailbox), n, "auth")
        with Recovery(ctx, workers=WORKERS, name="wrong-password", **{SECRET_ENV: WRONG}) as recovery:
            _until_all_held(job_ids, mailbox, recovery)
        before_probe = server.auth_attempts
        failed = SendJob.objects.filter(pk__in=job_ids, state=S.FAILED).count()
        with _environment(**{SECRET_ENV: WRONG}):
            still = mailbox_probe(mailbox_id=mailbox.pk, actor="drill", forced=True).outcome
        probe_cost = server.auth_attempts - before_probe
        with _environment(**{SECRET_ENV: RIGHT}):
            unblocked = mailbox_probe(mailbox_id=mailbox.pk, actor="drill", forced=True)
        _deliver(ctx, job_ids, **{SECRET_ENV: RIGHT})
        if failed:
            row.problems.append(f"{failed} job(s) failed on a mailbox problem")
        if before_probe > WORKERS:
            row.problems.append(f"{before_probe} AUTH attempts before the block (at most one per worker)")
        if still != "still blocked" or probe_cost > 1:
            row.problems.append(f"a failing probe: {still}, {probe_cost} AUTH attempts")
        if unblocked.outcome != "unblocked" or unblocked.released != n:
            row.problems.append(f"the probe after the fix: {unblocked.text}")
        row.extra.update(auth_attempts_before_block=before_probe, auth_attempts_per_probe=probe_cost,
                         failed_jobs=failed, released=unblocked.released)
        row.notes.append(f"{n} due jobs, {WORKERS} workers: {before_probe} AUTH attempt(s) before the block, "
                         f"{probe_cost} per probe, {failed} failed; after the fix all sent once")
        return _settle(row, job_ids, server, started=started)


def _tls(ctx: Ctx, *, n: int) -> Row:
    started = time.monotonic()
    row = Row("mailbox: untrusted certificate", runs=n)
    certs = make_certificates(ctx.tmpdir / "tls")
    with SmtpServer(starttls=certs.server_context()) as server:
        mailbox = make_mailbox("tls", port=server.port, smtp_security="starttls")
        job_ids = enroll_many(make_sequence(mailbox), n, "tls")
        with Recovery(ctx, workers=WORKERS, name="no-ca") as recovery:
            _until_all_held(job_ids, mailbox, recovery)
        mailbox.refresh_from_db()
        if "set ca_file" not in mailbox.blocked_reason:
            row.problems.append(f"no ca_file hint in {mailbox.blocked_reason!r}")
        Mailbox.objects.filter(pk=mailbox.pk).update(ca_file=str(certs.ca_file))
        unblocked = mailbox_probe(mailbox_id=mailbox.pk, actor="drill", forced=True)
        if unblocked.outcome != "unblocked":
            row.problems.append(f"the probe after setting ca_file: {unblocked.text}")
        _deliver(ctx, job_ids)
        row.notes.append("blocked with a ca_file hint; after ca_file was set, all sent once over STARTTLS")
        return _settle(row, job_ids, server, started=started)
