"""`drill blind`: a mailbox loses its reply view (the IMAP password revoked at the server) while a follow-up
comes due and a reply arrives; nothing may leave blind.

On servers of its own (a Dovecot and an SMTP capture server on free loopback ports) and a real
`manage.py rqworker send` process: a drill mailbox that reads its replies from the Dovecot INBOX
(`reply_view_max_age` MAX_AGE s) enrolls three people in a two-step sequence; step 1 leaves for each. Then
the drill revokes the mailbox's IMAP password at the server (Dovecot's passwd file rewritten), the poller's
login is refused, and one of the three replies during the outage: the reply is APPENDed to INBOX, as a
delivery would put it there. Step 2 comes due and goes through the worker's final check while the mailbox is
blind. The password comes back, an operator's "check connection" lets the poller log in at once, the poll
reads the reply, and the held follow-ups go back through the final check.

The drill runs the periodic passes itself (the dispatcher, the poller, the sweep of reply-view episodes), so
the order of events is the scenario's, not a scheduler's.

PASS: nobody got step 2 while the mailbox was blind; the replier is stopped (replied) and never got step 2;
the two others got theirs once each, after the view was fresh again. With OUTREACH_DRILL_UNCHECKED=1 the
worker runs with the final check bypassed (proving.variants.UncheckedJob) and the drill FAILs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from dataclasses import dataclass
from datetime import datetime
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import TextIO

from django.conf import settings
from django.db import connections
from django.test.utils import override_settings

from db.clock import db_now
from inbound.ingest.poll import mailbox_poll
from inbound.models import InboundMessage
from mailboxes.imap.errors import ImapError
from mailboxes.models import Mailbox
from proving.drills.race import LIVE, WORKER_DONE
from proving.harness import data, mails
from proving.harness.dovecot import Dovecot
from proving.harness.smtp import SmtpServer
from proving.harness.stack import (
    DrillError,
    PrivateRedis,
    dedicated_database,
    make_tempdir,
    start_worker,
    subprocess_env,
    wait_for,
)
from proving.variants import ENV_FLAG
from sequences.models import Enrollment, SendJob, TimelineEvent
from sequences.services.mailbox_health import mailbox_probe
from sequences.services.reply_view_episodes import EPISODE_KINDS, reply_view_episodes_sweep
from sequences.tasks import dispatch

S = SendJob.State
PEOPLE = 3
REPLIER = 1  # the second person answers during the outage
MAX_AGE = 2  # seconds: the drill mailbox's reply_view_max_age (an outage longer than it)
WAIT = 5  # seconds between step 1 and step 2: step 2 comes due during the outage
RECHECK = 1  # seconds: the worker's OUTREACH_REPLY_VIEW_RECHECK_SECONDS (a held follow-up's next final check)
USER, PASSWORD_ENV = "drill", "OUTREACH_SECRET_DRILL_BLIND_IMAP"
TIMEOUT = 90.0
JOB_EVENTS = ("job_claimed", "job_deferred", "job_authorized", "job_submitted", "job_canceled")


@dataclass
class Moments:
    """What the drill did, on the database clock (SQLite: this process's clock)."""

    revoked: datetime | None = None
    refused: datetime | None = None
    refused_error: str = ""
    replied: datetime | None = None
    waited: datetime | None = None  # the poller's next pass during the outage
    waited_error: str = ""
    restored: datetime | None = None
    read_again: datetime | None = None


def run(*, out: TextIO, keep: bool = False, schema: str = "migrate") -> bool:
    """Run the drill in a database and a Redis of its own; print the timeline; True on PASS."""
    unchecked = os.environ.get(ENV_FLAG) == "1"
    tmpdir = make_tempdir("outreach-drill-blind-")
    password = f"drill-{secrets.token_hex(8)}"
    with contextlib.ExitStack() as cleanup:
        if not keep:
            cleanup.callback(shutil.rmtree, tmpdir, ignore_errors=True)
        redis = PrivateRedis(tmpdir).start()
        cleanup.callback(redis.stop)
        database = dedicated_database(tmpdir=tmpdir)
        if not keep:
            cleanup.callback(database.drop)
        imap = cleanup.enter_context(Dovecot({USER: password}))
        captured = tmpdir / "captured"
        captured.mkdir()
        smtp = cleanup.enter_context(SmtpServer(keep_messages=False, capture_dir=captured))
        cleanup.enter_context(_env(PASSWORD_ENV, password))  # the poller in this process reads it
        queues = {name: dict(cfg, URL=redis.url) for name, cfg in settings.RQ_QUEUES.items()}

        out.write("drill blind: the IMAP password revoked at the server while a follow-up comes due and a reply "
                  "arrives\n")
        out.write(f"  database  {database.label}\n")
        out.write(f"  redis     {redis.label}\n")
        out.write(f"  smtp      capture server 127.0.0.1:{smtp.port} started by the drill\n")
        out.write(f"  imap      Dovecot 127.0.0.1:{imap.port} started by the drill (user {USER!r}, INBOX)\n")
        if unchecked:
            out.write(f"  !! {ENV_FLAG}=1: the drill's worker runs with the final check BYPASSED "
                      "(proving.variants.send_job_authorize_unchecked); this run is expected to FAIL\n")
        if keep:
            out.write(f"  --keep: temp dir {tmpdir} and the database are left in place\n")
        out.flush()

        env = subprocess_env(database=database, redis_url=redis.url,
                             OUTREACH_REPLY_VIEW_RECHECK_SECONDS=str(RECHECK))
        extra = ("--job-class", "proving.variants.UncheckedJob") if unchecked else ()
        worker = start_worker("worker-blind", env=env, log_dir=tmpdir, extra_args=extra)
        cleanup.callback(worker.kill)
        with database.active(), override_settings(RQ_QUEUES=queues, REDIS_URL=redis.url):
            took = database.migrate(schema=schema)
            out.write(f"  migrated the drill database in {took:.1f}s\n")
            try:
                passed = _scenario(imap=imap, password=password, smtp_port=smtp.port, captured=captured,
                                   worker=worker, out=out)
            except DrillError as exc:
                raise DrillError(f"{exc}\nworker log (last lines):\n{worker.log_tail()}") from exc
            finally:
                worker.stop()
                connections["default"].close()
    out.write(f"drill blind: {'PASS' if passed else 'FAIL'}\n")
    return passed


@contextlib.contextmanager
def _env(name: str, value: str):
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _scenario(*, imap: Dovecot, password: str, smtp_port: int, captured: Path, worker, out: TextIO) -> bool:
    tag = secrets.token_hex(3)
    mailbox = data.mailbox_create(
        name=f"drill-blind-{tag}", address=f"drill@{tag}.drill.invalid", display_name="Outreach drill",
        smtp_port=smtp_port, daily_cap=100000, imap_host=imap.host, imap_port=imap.port, imap_username=USER,
        imap_password_env=PASSWORD_ENV, imap_folders=["INBOX"], reply_view_max_age=MAX_AGE,
        follow_ups_without_reply_view=False)
    out.write(f"  mailbox   {mailbox.name}: reply_view_max_age {MAX_AGE} s, password from {PASSWORD_ENV}; "
              f"worker `manage.py rqworker send` pid {worker.pid}\n\n")
    out.flush()
    moments = Moments()
    _poll(mailbox, expect_ok=True)  # the mailbox connects: its first poll sets where reading starts
    sequence = data.sequence_create(mailbox=mailbox, name=f"drill blind {tag}", waits=(0, WAIT),
                                    subject="Drill {{ first_name }}",
                                    body="Blind drill step {position}. This address does not exist (drill.invalid).")
    people = [data.enroll(sequence, f"p{i + 1}.{tag}@drill.invalid", first_name=f"P{i + 1}", company="Drill",
                          actor="drill") for i in range(PEOPLE)]
    step1 = [p.jobs.get(step__position=1) for p in people]
    dispatch()
    wait_for(lambda: _count(step1, S.SUBMITTED) == PEOPLE, timeout=TIMEOUT, what="step 1 to leave for each person",
             interval=0.1)

    # The outage: the password is revoked at the server; the poller's login is refused.
    imap.add_users({USER: f"revoked-{secrets.token_hex(4)}"})  # rewrites Dovecot's passwd file
    moments.revoked = db_now()
    moments.refused_error = _poll(mailbox, expect_ok=False)
    moments.refused = db_now()
    # One of them answers during the outage: the reply reaches the INBOX, unread by us.
    replier = people[REPLIER]
    imap.append(USER, "INBOX", mails.drill_reply(to_message_id=step1[REPLIER].message_id,
                                                 sender=replier.contact.email, to=mailbox.address,
                                                 subject="Re: Drill"))
    moments.replied = db_now()

    # Step 2 comes due while the mailbox is blind; every follow-up goes through the worker's final check.
    step2 = [SendJob.objects.get(enrollment=p, step__position=2) for p in people]
    due = max(j.scheduled_at for j in step2)
    wait_for(lambda: db_now() >= due, timeout=TIMEOUT, what="step 2 to come due", interval=0.1)
    moments.waited_error = _poll(mailbox, expect_ok=False)  # the poller again: no login before the next interval
    moments.waited = db_now()
    reply_view_episodes_sweep()
    before = TimelineEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    dispatch()
    wait_for(lambda: all(_worker_done(j.pk, before) for j in step2), timeout=TIMEOUT,
             what="the worker's final check of each step 2 while blind", interval=0.1)
    blind_received = _received(captured)

    # The operator puts the password back and checks the connection: the next poll logs in at once.
    imap.add_users({USER: password})
    moments.restored = db_now()
    mailbox_probe(mailbox_id=mailbox.pk, actor="drill", forced=True)
    _poll(mailbox, expect_ok=True)
    moments.read_again = db_now()
    reply_view_episodes_sweep()
    # The held follow-ups go back through the final check.
    # The view stays fresh only while the mailbox is read (reply_view_max_age is 2 s here): the drill reads on, as
    # the watcher and the poller do in production, so a loaded machine cannot leave every final check stale.
    wait_for(lambda: _settled(step2, mailbox), timeout=TIMEOUT, what="each step 2 to be sent or canceled",
             interval=0.2)
    received = _received(captured)

    for job in step1 + step2:
        job.refresh_from_db()
    problems = _judge(people=people, step1=step1, step2=step2, moments=moments, blind_received=blind_received,
                      received=received)
    _print_timeline(out, mailbox=mailbox, people=people, step1=step1, step2=step2, moments=moments,
                    received=received, problems=problems)
    return not problems


def _poll(mailbox: Mailbox, *, expect_ok: bool) -> str:
    """One poll of the mailbox, as the poller's job runs it; returns its error in words ('' when it read)."""
    try:
        error = mailbox_poll(mailbox_id=mailbox.pk).error
    except ImapError as exc:
        error = str(exc)
    if expect_ok and error:
        raise DrillError(f"the poll of {mailbox.name} failed: {error}")
    if not expect_ok and not error:
        raise DrillError(f"the poll of {mailbox.name} read the folder with the password revoked")
    return error


def _count(jobs: list[SendJob], state: str) -> int:
    return SendJob.objects.filter(pk__in=[j.pk for j in jobs], state=state).count()


def _worker_done(job_id: int, after_id: int) -> bool:
    return TimelineEvent.objects.filter(job_id=job_id, kind__in=WORKER_DONE, id__gt=after_id).exclude(
        worker_id="").exists()


def _settled(jobs: list[SendJob], mailbox: Mailbox | None = None) -> bool:
    """No follow-up is live any more; meanwhile the dispatcher's pass, as the scheduler runs it, and (`mailbox`) a
    poll that keeps its reply view read, as the watcher does, then the scheduler's sweep of blind episodes (a poll
    slower than the view's max age leaves the view stale when it ends, so one sweep right after it may not end the
    episode)."""
    if mailbox is not None:
        _poll(mailbox, expect_ok=True)
        reply_view_episodes_sweep()
    dispatch()
    return not SendJob.objects.filter(pk__in=[j.pk for j in jobs], state__in=LIVE).exists()


def _received(directory: Path) -> list[str]:
    parser = BytesHeaderParser()
    return [str(parser.parsebytes(p.read_bytes()).get("Message-ID", "")).strip()
            for p in sorted(directory.glob("*"))]


def _judge(*, people: list[Enrollment], step1: list[SendJob], step2: list[SendJob], moments: Moments,
           blind_received: list[str], received: list[str]) -> list[str]:
    problems = []
    for i, (enrollment, first, second) in enumerate(zip(people, step1, step2, strict=True)):
        who = f"person {i + 1} ({enrollment.contact.email})"
        enrollment.refresh_from_db()
        if received.count(first.message_id) != 1:
            problems.append(f"{who}: step 1 received {received.count(first.message_id)} times, expected once")
        if second.message_id in blind_received:
            problems.append(f"{who}: step 2 reached the SMTP server while the mailbox could not read its replies")
        if second.authorized_at is not None and second.authorized_at < moments.read_again:
            problems.append(f"{who}: step 2 authorized at {_t(second.authorized_at)}, before the mailbox read its "
                            f"replies again ({_t(moments.read_again)})")
        if i == REPLIER:
            if (enrollment.status, enrollment.stop_reason) != ("stopped", "replied"):
                problems.append(f"{who}: the reply did not stop the person ({enrollment.status})")
            if second.authorized_at is not None or second.message_id in received:
                problems.append(f"{who}: got step 2 after replying")
        elif second.state != S.SUBMITTED or received.count(second.message_id) != 1:
            problems.append(f"{who}: step 2 ended {second.state}, received {received.count(second.message_id)} "
                            "times; expected sent once")
    return problems


def _t(moment: datetime | None) -> str:
    return f"{moment:%H:%M:%S.%f}" if moment else "—"


def _print_timeline(out: TextIO, *, mailbox: Mailbox, people: list[Enrollment], step1: list[SendJob],
                    step2: list[SendJob], moments: Moments, received: list[str], problems: list[str]) -> None:
    person = {e.pk: i + 1 for i, e in enumerate(people)}
    number = {j.pk: person[j.enrollment_id] for j in step2}
    rows: list[tuple[datetime, str]] = [
        (moments.revoked, "IMAP password revoked at the server (Dovecot passwd file rewritten)"),
        (moments.refused, f"poll: {moments.refused_error}"),
        (moments.replied, f"reply of person {REPLIER + 1} in INBOX (APPEND confirmed), not read yet"),
        (moments.waited, f"poll: {moments.waited_error}"),
        (moments.restored, "IMAP password restored at the server; operator's check connection"),
        (moments.read_again, "poll: INBOX read"),
    ]
    for event in TimelineEvent.objects.filter(job__in=number, kind__in=JOB_EVENTS):
        data = event.data
        if event.kind == "job_deferred":
            detail = f"held: {data.get('detail') or data.get('reason', '')}"
        elif event.kind == "job_authorized":
            seconds = data.get("replies_read_seconds_before")
            detail = ("authorized, replies read up to "
                      f"{seconds:.1f} s before" if seconds is not None else "authorized, no reply view read")
            if data.get("final_check") is False:
                detail = "authorized with the final check BYPASSED"
        elif event.kind == "job_canceled":
            detail = f"canceled ({data.get('reason', '')})"
        else:
            detail = event.kind.removeprefix("job_")
        rows.append((event.at, f"person {number[event.job_id]} step 2: {detail}"))
    for inbound in InboundMessage.objects.filter(enrollment__in=person):
        rows.append((inbound.committed_at, f"reply of person {person[inbound.enrollment_id]} committed "
                                           f"(inbound #{inbound.pk}, {inbound.correlation_rule})"))
    for event in TimelineEvent.objects.filter(enrollment__in=person, kind="enrollment_stopped"):
        rows.append((event.at, f"person {person[event.enrollment_id]} stopped ({event.data.get('reason', '')})"))
    for event in TimelineEvent.objects.filter(kind__in=EPISODE_KINDS, data__mailbox_id=mailbox.pk):
        rows.append((event.at, f"{event.kind} (outbound webhook mailbox.{event.kind.removeprefix('mailbox_')})"))
    day = moments.revoked
    clock = "database clock" if connections["default"].vendor == "postgresql" else "each process's clock (SQLite)"
    out.write(f"  timeline ({clock}, {day:%Y-%m-%d} UTC):\n")
    for moment, what in sorted((r for r in rows if r[0] is not None), key=lambda r: r[0]):
        out.write(f"    {_t(moment)}  {what}\n")
    out.write("  outcome:\n")
    for i, (enrollment, first, second) in enumerate(zip(people, step1, step2, strict=True)):
        enrollment.refresh_from_db()
        mark = "replied" if i == REPLIER else "       "
        out.write(f"    person {i + 1} {mark}  {enrollment.status:<9} step 1 x{received.count(first.message_id)}  "
                  f"step 2 {second.state} x{received.count(second.message_id)}\n")
    for problem in problems:
        out.write(f"  FAIL  {problem}\n")
    if not problems:
        out.write("  PASS  nobody got step 2 while the mailbox could not read its replies; the replier was stopped "
                  f"and never got it; the {PEOPLE - 1} others got theirs once, after the view was fresh\n")
    out.write("\n")
    out.flush()
