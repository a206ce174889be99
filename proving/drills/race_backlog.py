"""`drill race --order imap-backlog`: replies delivered through a real IMAP folder while follow-ups queue behind
a slow send, on the processes `scripts/run` starts.

The drill starts a Dovecot and an SMTP capture server of its own (DATA stalled `DELAY` seconds: a slow
provider), a mailbox that sends through the one and reads its replies from the other, and the product's
processes (proving.harness.backlog: `rqworker ingest default --with-scheduler`, `rqworker send`, `rqcron
outreach.cron`, `watch_mailboxes`) on the drill's database and Redis. FOLLOW_UPS people were mailed step 1;
their follow-ups are queued at once. Just after the first follow-up has left, REPLIERS of the people whose
follow-ups are still queued answer: each reply is APPENDed to the mailbox's INBOX, as a delivery would put
it there. Nothing is committed by the drill itself: the watcher hears the mail, the `ingest` worker polls,
the `send` worker's final check decides.

PASS: every replier is stopped (replied), none of their follow-ups was authorized after the reply reached
the inbox or reached the SMTP server, and every other follow-up left once. With OUTREACH_DRILL_UNCHECKED=1
the drill runs the stack as it was before the reply view (one worker serving `send` first, a watcher that
marks nothing): the repliers get their follow-ups and the drill FAILs.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import TextIO

from django.db.models import F, Value
from django.db.models.functions import Concat

from inbound.models import InboundMessage
from proving.harness import backlog, data, mails
from proving.harness.dovecot import Dovecot
from proving.harness.smtp import Behaviour, SmtpServer
from proving.harness.stack import Database, DrillError, subprocess_env, wait_for
from sequences.models import Contact, Enrollment, SendJob, TimelineEvent

ORDER = "imap-backlog"
S = SendJob.State
FOLLOW_UPS = 6
REPLIERS = (2, 4)  # queue positions of the people who answer: still queued when they do
DELAY = 3.0  # seconds the capture server stalls each DATA
USER, PASSWORD_ENV = "drill", "OUTREACH_SECRET_DRILL_IMAP"
TIMEOUT = 120.0
JOB_EVENTS = ("job_claimed", "job_deferred", "job_authorized", "job_submitted", "job_canceled", "authorize_noop")


@dataclass
class Outcome:
    passed: bool
    problems: list[str]


def run_order(*, database: Database, redis_url: str, tmpdir: Path, out: TextIO, unchecked: bool) -> Outcome:
    """The order, in the drill's database (active) and Redis; prints the evidence; PASS when no problem."""
    layout = "before" if unchecked else "scripts/run"
    password = f"drill-{time.time_ns()}"
    with contextlib.ExitStack() as stack:
        imap = stack.enter_context(Dovecot({USER: password}))
        captured = tmpdir / "captured-backlog"
        captured.mkdir()
        smtp = stack.enter_context(SmtpServer(behaviour=Behaviour(data_delay=DELAY), keep_messages=False,
                                              capture_dir=captured))
        tag = f"ib{time.time_ns() % 10**6}"
        mailbox = data.mailbox_create(
            name=f"drill-backlog-{tag}", address=f"drill@{tag}.drill.invalid", display_name="Outreach drill",
            smtp_port=smtp.port, daily_cap=100000, imap_host=imap.host, imap_port=imap.port, imap_username=USER,
            imap_password_env=PASSWORD_ENV, imap_folders=["INBOX"])
        jobs = backlog.followups_waiting(mailbox=mailbox, count=FOLLOW_UPS, tag=tag)
        # Addresses under drill.invalid, as every drill's: nothing here is anyone's mailbox.
        Contact.objects.filter(enrollments__jobs__in=jobs).update(email=Concat(F("email"), Value(".drill.invalid")))
        env = subprocess_env(database=database, redis_url=redis_url, **{PASSWORD_ENV: password})
        out.write(f"[{ORDER}] {FOLLOW_UPS} follow-ups queued behind an SMTP capture server stalling DATA {DELAY:g} s "
                  f"(127.0.0.1:{smtp.port}); replies APPENDed to INBOX of Dovecot 127.0.0.1:{imap.port}\n")
        if unchecked:
            out.write("  !! OUTREACH_DRILL_UNCHECKED=1: the stack before the reply view (one worker serving send "
                      "first, a watcher that marks nothing); this order is expected to FAIL\n")
        replied: dict[int, float] = {}
        with backlog.processes(layout, mailbox=mailbox, env=env, log_dir=tmpdir, timeout=TIMEOUT) as procs:
            out.write("  processes, as scripts/run starts them:\n")
            for process in procs:
                out.write(f"    pid {process.pid:<7} {_command(process.proc.args[2:])}\n")
            out.flush()
            backlog.release(jobs)
            wait_for(lambda: backlog.submitted(jobs) >= 1, timeout=TIMEOUT, what="the first follow-up to leave")
            for i in REPLIERS:
                if SendJob.objects.filter(pk=jobs[i].pk, state=S.QUEUED).exists():
                    replied[i] = _reply(imap, password, mailbox_address=mailbox.address, tag=tag, index=i)
            if not replied:
                raise DrillError("every replier's follow-up was taken before the replies: the machine is too slow "
                                 "for this order")
            wait_for(lambda: not SendJob.objects.filter(pk__in=[j.pk for j in jobs], state__in=(
                S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)).exists(), timeout=TIMEOUT + FOLLOW_UPS * DELAY * 4,
                what="every follow-up to be sent or canceled")
        received = _received(captured)
        problems = _judge(jobs, replied, received)
        _print_timeline(out, jobs, replied, received, problems)
    return Outcome(not problems, problems)


def _command(argv: list[str]) -> str:
    """`manage.py` and its arguments as an operator reads them (without the drill's worker names)."""
    if "--name" in argv:
        argv = argv[:argv.index("--name")]
    return "manage.py " + " ".join(argv)


def _reply(imap: Dovecot, password: str, *, mailbox_address: str, tag: str, index: int) -> float:
    """Person `index` answers step 1: the reply delivered into INBOX (IMAP APPEND). The time it was there."""
    email = Contact.objects.get(email__startswith=f"p{index}.{tag}@").email
    raw = mails.drill_reply(to_message_id=data.first_message_id(tag, index), sender=email, to=mailbox_address,
                            subject="Re: Quick question, Ada")
    imap.append(USER, "INBOX", raw)
    return time.time()


def _received(directory: Path) -> list[str]:
    parser = BytesHeaderParser()
    return [str(parser.parsebytes(p.read_bytes()).get("Message-ID", "")).strip() for p in sorted(directory.glob("*"))]


def _judge(jobs: list[SendJob], replied: dict[int, float], received: list[str]) -> list[str]:
    problems = []
    for i, job in enumerate(jobs):
        job.refresh_from_db()
        enrollment = Enrollment.objects.select_related("contact").get(pk=job.enrollment_id)
        who = f"follow-up {i + 1} ({enrollment.contact.email})"
        if i in replied:
            if (enrollment.status, enrollment.stop_reason) != ("stopped", "replied"):
                problems.append(f"{who}: the reply did not stop the person ({enrollment.status})")
            if job.authorized_at is not None and job.authorized_at.timestamp() > replied[i]:
                problems.append(f"{who}: authorized at {_t(job.authorized_at)}, "
                                f"{job.authorized_at.timestamp() - replied[i]:.1f} s AFTER the reply was in the inbox")
            if job.message_id in received:
                problems.append(f"{who}: the SMTP server received it after the person replied")
        elif job.state != S.SUBMITTED or received.count(job.message_id) != 1:
            problems.append(f"{who}: ended {job.state}, received {received.count(job.message_id)} times; "
                            "expected sent once")
    return problems


def _t(moment: datetime) -> str:
    return f"{moment:%H:%M:%S.%f}"


def _print_timeline(out: TextIO, jobs: list[SendJob], replied: dict[int, float], received: list[str],
                    problems: list[str]) -> None:
    number = {j.pk: i + 1 for i, j in enumerate(jobs)}
    enrollment_number = {j.enrollment_id: i + 1 for i, j in enumerate(jobs)}
    rows: list[tuple[datetime, str]] = []
    for i, at in replied.items():
        rows.append((datetime.fromtimestamp(at, UTC), f"reply of person {i + 1} in INBOX (APPEND confirmed)"))
    for event in TimelineEvent.objects.filter(job__in=number, kind__in=JOB_EVENTS):
        detail = event.data.get("reason") or event.data.get("smtp_reply") or ""
        rows.append((event.at, f"follow-up {number[event.job_id]}: {event.kind.removeprefix('job_')} {detail}"))
    for inbound in InboundMessage.objects.filter(enrollment__in=enrollment_number):
        rows.append((inbound.committed_at, f"reply of person {enrollment_number[inbound.enrollment_id]} committed "
                                           f"(inbound #{inbound.pk}, {inbound.correlation_rule})"))
    for event in TimelineEvent.objects.filter(enrollment__in=enrollment_number, kind="enrollment_stopped"):
        rows.append((event.at, f"person {enrollment_number[event.enrollment_id]} stopped "
                               f"({event.data.get('reason', '')})"))
    out.write(f"  timeline (UTC; replies on the drill's clock, the rest on the database's; {rows[0][0]:%Y-%m-%d}):\n")
    for moment, what in sorted(rows):
        out.write(f"    {_t(moment)}  {what.strip()}\n")
    for i, job in enumerate(jobs):
        mark = "replied" if i in replied else "       "
        out.write(f"    follow-up {i + 1} {mark}  {job.state:<9} SMTP received x{received.count(job.message_id)}\n")
    for problem in problems:
        out.write(f"  FAIL  {problem}\n")
    if not problems:
        out.write(f"  PASS  {len(replied)} replies read through IMAP stopped their people before any of their "
                  f"follow-ups left; the {len(jobs) - len(replied)} others left once each\n")
    out.write("\n")
    out.flush()
