"""`drill race`: the two race fixtures (docs/architecture.md) against a real worker process.

reply-first: the worker (OUTREACH_PAUSE_AT=claimed) pauses after claiming
step 2; a reply to step 1 is committed through inbound.ingest.inbound_record
(the path a fetched IMAP message takes); the worker is released -> its final
check refuses, step 2 is canceled and the SMTP server receives nothing more.

send-first: the worker (OUTREACH_PAUSE_AT=authorized) pauses after the final
check authorized step 2; the same reply commits; the worker is released ->
step 2 leaves exactly once, is labelled "Already submitted ... cannot recall",
and nothing later of that enrollment is live.

Step 1 is sent first through the same worker (released at once), so the
reply correlates by In-Reply-To to a message that really left.

imap-backlog (proving.drills.race_backlog): no paused worker and no reply
committed by the drill: follow-ups queue behind a slow SMTP server while
replies are delivered into a real Dovecot INBOX, on the processes
`scripts/run` starts. It runs on servers of its own (`--mailbox` applies to
the two fixtures above).

Where it runs: a database it creates (`--database` names it), and a
redis-server of its own on a free loopback port, or the Redis index given
with `--redis-url` (proving.harness.stack.RedisIndex: only the drill's own
keys are added and removed there). It never writes to any other Redis index.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import TextIO

from django.conf import settings
from django.db import DatabaseError, connections
from django.test.utils import override_settings

from inbound.ingest.record import inbound_record
from inbound.models import InboundMessage
from mailboxes.models import Mailbox
from mailboxes.selectors import transport_for
from mailboxes.transports.smtp import SmtpTransport
from proving.drills import race_backlog
from proving.harness import data, mails
from proving.harness.smtp import SmtpServer
from proving.harness.stack import (
    Database,
    DrillError,
    PrivateRedis,
    Process,
    RedisIndex,
    dedicated_database,
    make_tempdir,
    start_worker,
    subprocess_env,
    wait_for,
)
from proving.variants import ENV_FLAG
from sequences.labels import job_label
from sequences.models import SendJob, TimelineEvent
from sequences.tasks import dispatch

S = SendJob.State
ORDERS = ("reply-first", "send-first")
# The orders `--order all` runs: the two fixtures, then the reply through IMAP during a send backlog.
ALL_ORDERS = (*ORDERS, race_backlog.ORDER)
CHECKPOINT = {"reply-first": "claimed", "send-first": "authorized"}
LIVE = (S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)
# Events the worker writes when it is done with a job (whatever it decided).
WORKER_DONE = ("authorize_noop", "job_submitted", "job_failed", "job_unknown", "job_retry_scheduled",
               "job_deferred", "job_canceled")
STEP_TIMEOUT = 90.0  # seconds: covers a cold worker start on a busy machine
# A named mailbox is copied into the drill database whole (its SMTP or OAuth2 login, TLS, ca_file and whatever
# transport setting it gains later: the worker builds its transport with mailboxes.selectors.transport_for, as
# for any send), except these: its row id, its workspace (the drill's database has its own), its state (the copy
# starts unpaused and healthy) and the reading side (the drill commits the reply itself; it polls no folder).
NOT_COPIED = frozenset({
    "id", "created_at", "workspace", "version", "paused", "blocked_at", "blocked_reason", "blocked_probes",
    "next_probe_at",
    "connect_failures", "guardrail_paused_at", "guardrail_reason", "guardrail_silenced_until",
    "imap_host", "imap_port", "imap_username", "imap_password_env", "imap_security", "imap_folders",
    "last_poll_at", "last_poll_ok_at", "last_poll_error", "poll_failures",
    "reply_view_max_age", "follow_ups_without_reply_view",
})
# The copy's cap: the drill's few sends never wait for the mailbox's day.
DRILL_CAP = 100000


@dataclass
class SmtpTarget:
    host: str
    port: int
    label: str
    capture_dir: Path | None = None  # the drill's own capture server: its log can be read
    fields: dict = field(default_factory=dict)  # the Mailbox row to create in the drill database

    def mailbox_create(self) -> Mailbox:
        if self.capture_dir is None:
            # The copy reads no folder (the drill commits the reply itself), so its follow-ups go without a
            # reply view: the final check's other rules are what the drill shows.
            return Mailbox.objects.create(**(self.fields | {"follow_ups_without_reply_view": True}))
        return data.mailbox_create(**self.fields)

    def received(self) -> list[str] | None:
        """Message-IDs the capture server received, in order (None: an external server we cannot read)."""
        if self.capture_dir is None:
            return None
        parser = BytesHeaderParser()
        ids = []
        for path in sorted(self.capture_dir.glob("*.eml")):
            ids.append(str(parser.parsebytes(path.read_bytes()).get("Message-ID", "")).strip())
        return ids


@dataclass
class Verdict:
    order: str
    passed: bool
    problems: list[str]


def _target_from_mailbox(name: str) -> SmtpTarget:
    """Read the named mailbox from the configured database; refuse unless it is a drill target."""
    try:
        mailbox = Mailbox.objects.filter(name=name).first()
    except DatabaseError as exc:
        raise DrillError(f"cannot read mailbox {name!r} from the configured database: {exc}".strip()) from exc
    if mailbox is None:
        raise DrillError(f"no mailbox named {name!r}")
    if not mailbox.is_drill_target:
        raise DrillError(f"mailbox {name!r} is not marked as a drill target (is_drill_target; "
                         "`drill_target = true` in the mailbox TOML): the drill refuses to send through it")
    if mailbox.transport_kind != "smtp":
        raise DrillError(f"mailbox {name!r} sends through {mailbox.transport_kind}; the race drill drives SMTP only")
    copied = {f.attname: getattr(mailbox, f.attname) for f in Mailbox._meta.concrete_fields
              if f.name not in NOT_COPIED}
    copied.update(daily_cap=DRILL_CAP, is_drill_target=True)
    return SmtpTarget(mailbox.smtp_host, mailbox.smtp_port,
                      f"mailbox {name!r}: {mailbox.smtp_host}:{mailbox.smtp_port} (its own server; "
                      "its received log is not readable by the drill)", fields=copied)


def _start_capture(tmpdir: Path, cleanup: contextlib.ExitStack) -> SmtpTarget:
    """The capture server of `manage.py capture_smtp` on a free loopback port, in this process."""
    directory = tmpdir / "captured"
    directory.mkdir()
    log = open(tmpdir / "capture.log", "w")  # noqa: SIM115 - closed by the exit stack
    cleanup.callback(log.close)
    server = SmtpServer(keep_messages=False, capture_dir=directory, log=log).start()
    cleanup.callback(server.stop)
    port = server.port
    fields = {"name": f"drill-capture-{secrets.token_hex(3)}", "address": "drill@drill.invalid",
              "display_name": "Outreach drill", "smtp_port": port, "daily_cap": DRILL_CAP}
    return SmtpTarget("127.0.0.1", port, f"capture server 127.0.0.1:{port} started by the drill", directory, fields)


def run(*, orders: tuple[str, ...], mailbox_name: str | None, out: TextIO, keep: bool = False,
        schema: str = "migrate", redis_url: str | None = None, database_name: str | None = None) -> bool:
    """Run the fixtures; print the evidence; True when every order passed.

    `redis_url`: a Redis index to run in (default: a redis-server of the drill's own); `database_name`: the
    database to create (default: a generated name).
    """
    unchecked = os.environ.get(ENV_FLAG) == "1"
    if mailbox_name:
        target = _target_from_mailbox(mailbox_name)  # before anything is created
    tmpdir = make_tempdir("outreach-drill-")
    verdicts: list[Verdict] = []
    with contextlib.ExitStack() as cleanup:
        if not keep:
            cleanup.callback(shutil.rmtree, tmpdir, ignore_errors=True)
        if redis_url:
            redis: PrivateRedis | RedisIndex = RedisIndex(redis_url, queues=tuple(settings.RQ_QUEUES)).start()
        else:
            redis = PrivateRedis(tmpdir).start()
        cleanup.callback(redis.stop)
        database = dedicated_database(tmpdir=tmpdir, name=database_name)
        if not keep:
            cleanup.callback(database.drop)
        if not mailbox_name:
            target = _start_capture(tmpdir, cleanup)
        queues = {name: dict(cfg, URL=redis.url) for name, cfg in settings.RQ_QUEUES.items()}

        out.write(f"drill race: {', '.join(orders)}\n")
        out.write(f"  database  {database.label}\n")
        out.write(f"  redis     {redis.label}\n")
        out.write(f"  smtp      {target.label}\n")
        if unchecked:
            out.write(f"  !! {ENV_FLAG}=1: the drill's worker runs with the final check BYPASSED "
                      "(proving.variants.send_job_authorize_unchecked); this run is expected to FAIL\n")
        if keep:
            out.write(f"  --keep: temp dir {tmpdir} and the database are left in place\n")
        out.flush()

        # Each fixture's worker starts once the set-up is done, never beside its writes: on SQLite the worker's
        # system check opens a write transaction (BEGIN IMMEDIATE), which a stream of short writes can keep waiting
        # past its busy timeout on a loaded machine; the check then fails and the worker exits.
        with database.active(), override_settings(RQ_QUEUES=queues, REDIS_URL=redis.url):
            took = database.migrate(schema=schema)
            out.write(f"  migrated the drill database in {took:.1f}s\n")
            mailbox = target.mailbox_create()
            out.write(f"  transport {_describe_transport(mailbox)}\n\n")
            for order in orders:
                if order == race_backlog.ORDER:
                    if mailbox_name:
                        out.write(f"[{order}] runs on the drill's own SMTP and IMAP servers, not {mailbox_name!r}\n")
                    # Its own SMTP and IMAP servers, and the processes scripts/run starts (not a paused worker).
                    outcome = race_backlog.run_order(database=database, redis_url=redis.url, tmpdir=tmpdir, out=out,
                                                     unchecked=unchecked)
                    verdicts.append(Verdict(order, outcome.passed, outcome.problems))
                    continue
                worker = _worker(order, database, redis.url, tmpdir, unchecked, cleanup)
                try:
                    verdicts.append(_run_order(order, mailbox=mailbox, target=target, worker=worker,
                                               pause_dir=tmpdir / f"pause-{order}", out=out))
                except DrillError as exc:
                    # The temp dir (and the worker's log) goes away with the cleanup: show the log now.
                    raise DrillError(f"{order}: {exc}\nworker log (last lines):\n{worker.log_tail()}") from exc
                finally:
                    worker.stop()
            connections["default"].close()
    passed = all(v.passed for v in verdicts) and len(verdicts) == len(orders)
    out.write(f"drill race: {'PASS' if passed else 'FAIL'} "
              f"({', '.join(f'{v.order} {'PASS' if v.passed else 'FAIL'}' for v in verdicts)})\n")
    return passed


def _describe_transport(mailbox: Mailbox) -> str:
    """What the worker's transport_for builds from the drill's mailbox row, in words (no secret)."""
    transport = transport_for(mailbox)
    if not isinstance(transport, SmtpTransport):
        return f"{type(transport).__name__} (mailboxes.selectors.transport_for)"
    c = transport.config
    login = ("OAuth2" if c.oauth2 else f"password from {c.password_env or '(none)'}") if c.username else "none"
    return (f"SMTP {c.host}:{c.port} security {c.security}, CA {c.ca_file or 'the system store'}, "
            f"login {login}{f' as {c.username}' if c.username else ''} (mailboxes.selectors.transport_for)")


def _worker(order: str, database: Database, redis_url: str, tmpdir: Path, unchecked: bool,
            cleanup: contextlib.ExitStack) -> Process:
    env = subprocess_env(database=database, redis_url=redis_url, OUTREACH_PAUSE_AT=CHECKPOINT[order],
                         OUTREACH_PAUSE_DIR=str(tmpdir / f"pause-{order}"))
    extra = ("--job-class", "proving.variants.UncheckedJob") if unchecked else ()
    worker = start_worker(f"worker-{order}", env=env, log_dir=tmpdir, extra_args=extra)
    cleanup.callback(worker.kill)
    return worker


def _marker(pause_dir: Path, job_id: int, checkpoint: str) -> Path:
    return pause_dir / f"{job_id}.{checkpoint}.paused"


def _await_pause(worker: Process, pause_dir: Path, job_id: int, checkpoint: str) -> int:
    """Wait for the worker's .paused marker; returns the pid that wrote it (the process running the job)."""
    marker = _marker(pause_dir, job_id, checkpoint)

    def paused() -> bool:
        if not worker.alive():
            raise DrillError(f"the worker exited (code {worker.proc.returncode}):\n{worker.log_tail()}")
        return marker.exists() and marker.stat().st_size > 0

    wait_for(paused, timeout=STEP_TIMEOUT, what=f"job {job_id} to pause at {checkpoint!r} "
             f"(worker log: {worker.log_path})")
    return int(marker.read_text() or 0)


def _release(pause_dir: Path, job_id: int, checkpoint: str) -> None:
    (pause_dir / f"{job_id}.{checkpoint}.release").touch()


def _worker_done(job_id: int, after_id: int) -> TimelineEvent | None:
    return (TimelineEvent.objects.filter(job_id=job_id, kind__in=WORKER_DONE, id__gt=after_id)
            .exclude(worker_id="").order_by("id").first())


def _make_enrollment(order: str, mailbox: Mailbox):
    token = secrets.token_hex(3)
    sequence = data.sequence_create(mailbox=mailbox, name=f"drill {order} {token}", waits=(0, 0, 0),
                                    subject="Drill {{ first_name }}",
                                    body="Race drill step {position}. This address does not exist (drill.invalid).")
    return data.enroll(sequence, f"{order}-{token}@drill.invalid", first_name="Drill", company="Drill", actor="drill")


def _run_order(order: str, *, mailbox: Mailbox, target: SmtpTarget, worker: Process, pause_dir: Path,
               out: TextIO) -> Verdict:
    checkpoint = CHECKPOINT[order]
    enrollment = _make_enrollment(order, mailbox)
    step1 = enrollment.jobs.get()

    # Step 1 goes out normally (the worker pauses at the checkpoint for it too: release at once).
    dispatch()
    _await_pause(worker, pause_dir, step1.pk, checkpoint)
    _release(pause_dir, step1.pk, checkpoint)
    wait_for(lambda: SendJob.objects.filter(pk=step1.pk, state=S.SUBMITTED).exists(), timeout=STEP_TIMEOUT,
             what=f"step 1 (job {step1.pk}) to be submitted")
    step1.refresh_from_db()
    step2 = SendJob.objects.get(enrollment=enrollment, step__position=2)

    # The race: the worker holds step 2 at the checkpoint while the reply commits.
    dispatch()
    horse = _await_pause(worker, pause_dir, step2.pk, checkpoint)
    before = TimelineEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    raw = mails.drill_reply(to_message_id=step1.message_id, sender=enrollment.contact.email, to=mailbox.address)
    ingested = inbound_record(mailbox_id=mailbox.pk, folder="drill", uidvalidity=1,
                              fetched=mails.fetched(raw, uid=step2.pk))
    _release(pause_dir, step2.pk, checkpoint)
    done = wait_for(lambda: _worker_done(step2.pk, before), timeout=STEP_TIMEOUT,
                    what=f"the worker to finish job {step2.pk} after its release")
    dispatch()  # a dispatcher pass after the stop: nothing of this enrollment may be queued again

    step2.refresh_from_db()
    inbound = InboundMessage.objects.get(pk=ingested.inbound_id)
    stop = TimelineEvent.objects.filter(enrollment=enrollment, kind="enrollment_stopped").order_by("at").first()
    jobs = list(SendJob.objects.filter(enrollment=enrollment).select_related(
        "step", "enrollment__mailbox", "enrollment__sequence__mailbox", "enrollment__contact"))
    received = target.received()
    problems = _judge(order, step1=step1, step2=step2, jobs=jobs, stop=stop, received=received)
    _print_evidence(out, order=order, checkpoint=checkpoint, worker=worker, horse=horse, enrollment=enrollment,
                    step1=step1, step2=step2, inbound=inbound, stop=stop, done=done, received=received,
                    problems=problems)
    return Verdict(order, not problems, problems)


def _judge(order: str, *, step1: SendJob, step2: SendJob, jobs: list[SendJob], stop: TimelineEvent | None,
           received: list[str] | None) -> list[str]:
    problems = []
    if stop is None:
        return ["the reply did not stop the enrollment (no enrollment_stopped event)"]
    late = TimelineEvent.objects.filter(job__in=[j.pk for j in jobs], kind="job_authorized", at__gt=stop.at)
    for event in late:
        problems.append(f"job {event.job_id} was authorized at {event.at:%H:%M:%S.%f} AFTER the stop "
                        f"committed at {stop.at:%H:%M:%S.%f}")
    live = [j for j in jobs if j.state in LIVE]
    if live:
        problems.append("jobs still live after the stop: " + ", ".join(f"{j.pk} ({j.state})" for j in live))
    if order == "reply-first":
        if (step2.state, step2.cancel_reason) != (S.CANCELED, "replied"):
            problems.append(f"step 2 ended {step2.state}, expected canceled (replied)")
        if received is not None:
            if step2.message_id in received:
                problems.append(f"the SMTP server received step 2 ({step2.message_id}) after the reply committed")
            if received.count(step1.message_id) != 1:
                problems.append(f"step 1 received {received.count(step1.message_id)} times, expected once")
    else:
        if step2.authorized_at is None or step2.authorized_at >= stop.at:
            problems.append("step 2 was not authorized before the stop: the fixture did not set up send-first")
        if step2.state != S.SUBMITTED:
            problems.append(f"step 2 ended {step2.state}, expected submitted (it was past the hand-off)")
        label = job_label(step2)
        if not (label.startswith("Already submitted at ") and label.endswith("cannot recall")):
            problems.append(f"step 2 is labelled {label!r}, expected 'Already submitted at T — cannot recall'")
        if received is not None and received.count(step2.message_id) != 1:
            problems.append(f"step 2 received {received.count(step2.message_id)} times, expected exactly once")
    if received is not None:
        ours = {j.message_id for j in jobs}
        dup = {m for m in received if m in ours and received.count(m) > 1}
        if dup:
            problems.append(f"received more than once: {', '.join(sorted(dup))}")
    return problems


def _t(moment) -> str:
    return f"{moment:%H:%M:%S.%f}" if moment else "—"


def _print_evidence(out: TextIO, *, order, checkpoint, worker, horse, enrollment, step1, step2, inbound, stop, done,
                    received, problems) -> None:
    events = {e.kind: e for e in TimelineEvent.objects.filter(job=step2).order_by("id")}
    claim = events.get("job_claimed")
    final = next((e for e in TimelineEvent.objects.filter(job=step2, kind__in=(
        "job_authorized", "authorize_noop", "job_canceled", "job_deferred")).order_by("id")
        if e.kind != "job_canceled" or e.data.get("final_check")), None)
    day = claim.at if claim else step2.scheduled_at
    out.write(f"[{order}] worker `manage.py rqworker send` pid {worker.pid} (job run by pid {horse}), "
              f"OUTREACH_PAUSE_AT={checkpoint}\n")
    out.write(f"  enrollment {enrollment.pk}: {enrollment.contact.email} in {enrollment.sequence.name!r}\n")
    out.write(f"  step 1: job {step1.pk} {step1.message_id} submitted {_t(step1.submitted_at)}\n")
    out.write(f"  step 2: job {step2.pk} {step2.message_id} (the raced job)\n")
    clock = "database clock" if connections["default"].vendor == "postgresql" else "each process's clock (SQLite)"
    out.write(f"  evidence, {clock}, {day:%Y-%m-%d} UTC:\n")
    rows = [
        (claim.at if claim else None, "claimed", f"by {claim.worker_id}" if claim else "never"),
        (final.at if final else None, "final check",
         _describe_final(final) if final else "none recorded"),
        (inbound.committed_at, "reply committed",
         f"inbound #{inbound.pk} {inbound.kind}, {inbound.correlation_rule} {step1.message_id}; "
         f"INTERNALDATE {_t(inbound.internaldate)}"),
        (stop.at if stop else None, "stop committed", inbound.effect),
        (step2.authorized_at, "authorized", "point of no return" if step2.authorized_at else "never"),
        (step2.submitted_at, "submitted", step2.smtp_reply if step2.submitted_at else "never"),
        (step2.canceled_at, "canceled", step2.cancel_reason if step2.canceled_at else "never"),
        (done.at, "worker done", f"{done.kind} {done.data.get('state', '')}".strip()),
    ]
    happened = sorted((r for r in rows if r[0] is not None), key=lambda r: r[0])
    for moment, what, detail in happened + [r for r in rows if r[0] is None]:
        out.write(f"    {_t(moment):>15}  {what:<16} {detail}\n")
    out.write(f"    cancel reason    {step2.cancel_reason or '—'}\n")
    if received is None:
        out.write(f"    SMTP received    n/a (the mailbox's own server): look for {step2.message_id} in its log\n")
    else:
        ours = [m for m in received if m in (step1.message_id, step2.message_id)]
        out.write(f"    SMTP received    {len(ours)} message(s) of this enrollment: step 1 x"
                  f"{received.count(step1.message_id)}, step 2 x{received.count(step2.message_id)}\n")
    labelled = SendJob.objects.select_related("enrollment__mailbox", "enrollment__sequence__mailbox").get(pk=step2.pk)
    out.write(f"    label            {job_label(labelled)}\n")
    if problems:
        for problem in problems:
            out.write(f"  FAIL  {problem}\n")
    elif order == "reply-first":
        out.write("  PASS  the stop committed while the worker held the claim; its final check refused; "
                  "nothing more left\n")
    else:
        out.write("  PASS  authorized before the stop: sent once, labelled cannot recall; nothing later is live\n")
    out.write("\n")
    out.flush()


def _describe_final(event: TimelineEvent) -> str:
    if event.kind == "authorize_noop":
        return f"refused: job was {event.data.get('state')} (v{event.version_seen}), expected claimed " \
               f"v{event.data.get('expected_version')}"
    if event.kind == "job_authorized":
        if event.data.get("final_check") is False:
            return "BYPASSED: authorized with no final check (send_job_authorize_unchecked)"
        return "passed: authorized (one transaction, enrollment row locked)"
    return f"{event.kind} {event.data.get('reason', '')}".strip()

