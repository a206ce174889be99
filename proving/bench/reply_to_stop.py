"""Reply-to-stop: from IMAP APPEND of a reply into a real Dovecot to the enrollment's stop committed.

For each mode a fresh database holds R enrollments (step 1 sent, the
follow-up scheduled for tomorrow) on a mailbox that reads a Dovecot account.
The product's own poller runs as a child process:

- polling: `manage.py poll_mailboxes --mailbox NAME --interval I` (a pass, then sleep I)
- IDLE:    `manage.py watch_mailboxes --mailbox NAME --inline` (IDLE, then a poll in-process)

The bench APPENDs one correlated reply per enrollment (Poisson arrivals at
--reply-rate per second) and takes the time the server confirmed each APPEND
(bench clock). The stop time is the `enrollment_stopped` timeline event
(database clock, clock_timestamp() inside the stop's transaction, i.e. just
before its commit). Both clocks are this machine's; their offset is measured
and reported.

Under a send backlog (`backlog_run`): the processes `scripts/run` starts
(proving.harness.backlog), N follow-ups queued at once behind an SMTP server that
stalls DATA for --backlog-delay seconds, and --backlog-replies replies, the
first just after the first follow-up left, then one per send time on average,
each from a person picked at random among those whose follow-up is still
queued. Besides reply -> stop, it counts the follow-ups handed off (authorized)
after their person's reply reached the inbox: the goal is 0. The same run on
the layouts before the fix (one worker serving `send` first; and that worker
with a watcher that marks nothing) shows what the count measures.
"""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

from django.db import connection

from mailboxes.models import Mailbox
from proving.bench.imapserver import child_env, dovecot, imap_fields
from proving.bench.procs import log_dir, spawn, vm_hwm_kib
from proving.bench.stats import summary_ms, table
from proving.harness import backlog, data, mails
from proving.harness.smtp import Behaviour, SmtpServer
from proving.harness.stack import wait_for
from sequences.models import Enrollment, SendJob, TimelineEvent

MODES = ("polling", "idle")
# Runs under a send backlog: JSON key -> layout of proving.harness.backlog (the product first).
BACKLOGS = {"backlog": "scripts/run", "backlog_one_worker": "one worker", "backlog_before": "before"}
S = SendJob.State
LIVE = (S.SCHEDULED, S.QUEUED, S.CLAIMED, S.AUTHORIZED)


def clock_offset_ms() -> float:
    """Database clock minus this process' clock, in ms (same host: expected well under 1 ms)."""
    best = None
    for _ in range(5):
        before = time.time()
        with connection.cursor() as cursor:
            cursor.execute("SELECT extract(epoch from clock_timestamp())")
            db = float(cursor.fetchone()[0])
        after = time.time()
        if best is None or after - before < best[0]:
            best = (after - before, db - (before + after) / 2)
    return round(best[1] * 1000, 3)


def mode_run(ctx, server, *, mode: str, user: str, password: str, replies: int, interval: float,
             rate: float) -> dict[str, Any]:
    ctx.reset()
    (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag=f"r{mode}", **imap_fields(server, user))
    tag = f"r{mode}"
    jobs = data.followups_create(replies, sequences=data.sequences_create([mailbox]), tag=tag,
                                 state=SendJob.State.SCHEDULED, due_in=timedelta(days=1))
    ctx.analyze()
    enrollment_of = [j.enrollment_id for j in jobs]
    if mode == "polling":
        args = ["poll_mailboxes", "--mailbox", mailbox.name, "--interval", str(interval)]
    else:
        args = ["watch_mailboxes", "--mailbox", mailbox.name, "--inline"]
    poller = spawn(f"{mode}-poller", args, env=child_env(password))
    try:
        deadline = time.monotonic() + 90
        while not Mailbox.objects.filter(pk=mailbox.pk, last_poll_ok_at__isnull=False).exists():
            if time.monotonic() > deadline or poller.proc.poll() is not None:
                raise RuntimeError(f"{mode} poller never completed a first pass:\n{poller.log_tail()}")
            time.sleep(0.05)
        time.sleep(0.5)  # IDLE mode: the watcher is back in IDLE after its catch-up poll
        offset = clock_offset_ms()
        rng = random.Random(11)
        appended: dict[int, float] = {}
        client = server.client(user)
        try:
            for i in range(replies):
                time.sleep(rng.expovariate(rate))
                raw = mails.bench_reply(sender=f"p{i}.{tag}@prospects.test",
                                        to_message_id=data.first_message_id(tag, i))
                client.append("INBOX", raw)
                appended[enrollment_of[i]] = time.time()
        finally:
            client.logout()
        stopped = Enrollment.objects.filter(pk__in=enrollment_of, status=Enrollment.Status.STOPPED)
        deadline = time.monotonic() + 60 + interval * 3
        while stopped.count() < replies and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        maxrss = poller.stop()
    events = dict(TimelineEvent.objects.filter(kind="enrollment_stopped", enrollment_id__in=enrollment_of)
                  .values_list("enrollment_id", "at"))
    latencies = [events[e].timestamp() - t for e, t in appended.items() if e in events]
    canceled = SendJob.objects.filter(enrollment_id__in=enrollment_of, state=SendJob.State.CANCELED).count()
    return {
        "mode": mode,
        "poll_interval_s": interval if mode == "polling" else None,
        "replies": replies,
        "stopped": len(events),
        "followups_canceled": canceled,
        "followups_after_reply": len(_handed_off_after(appended)),
        "latency": summary_ms(latencies),
        "clock_offset_ms": offset,
        "poller_maxrss_mib": round(maxrss / 1024, 1),
    }


def _handed_off_after(appended: dict[int, float]) -> list[SendJob]:
    """Follow-ups authorized (the point of no return) after their person's reply was in the inbox."""
    jobs = SendJob.objects.filter(enrollment_id__in=appended, step__position__gt=1, authorized_at__isnull=False)
    return [j for j in jobs if j.authorized_at.timestamp() > appended[j.enrollment_id]]


def backlog_run(ctx, server, sink: SmtpServer, *, key: str, user: str, password: str, followups: int, replies: int,
                delay: float) -> dict[str, Any]:
    """N follow-ups queued behind a slow SMTP server on the layout's processes; replies delivered by APPEND."""
    layout = BACKLOGS[key]
    ctx.reset()
    tag = f"b{list(BACKLOGS).index(key)}"
    (mailbox,) = data.mailboxes_create(1, smtp_port=sink.port, tag=tag, **imap_fields(server, user))
    jobs = backlog.followups_waiting(mailbox=mailbox, count=followups, tag=tag)
    enrollment_of = [j.enrollment_id for j in jobs]
    index_of = {j.pk: i for i, j in enumerate(jobs)}
    ctx.analyze()
    sink.reset(data_delay=delay)
    rng = random.Random(13)
    appended: dict[int, float] = {}
    with backlog.processes(layout, mailbox=mailbox, env=child_env(password), log_dir=log_dir()) as procs:
        for process in procs:
            ctx.register_group(process.pid)
        offset = clock_offset_ms()
        started = time.monotonic()
        backlog.release(jobs)
        wait_for(lambda: backlog.submitted(jobs) >= 1, timeout=60 + 3 * delay, what="the first follow-up to leave")
        for n in range(replies):
            if n:
                time.sleep(rng.uniform(0.5, 1.5) * delay)
            # Not handed off yet: queued, or held for replies (scheduled again) on the one-worker layout.
            waiting = list(SendJob.objects.filter(pk__in=index_of, state__in=(S.SCHEDULED, S.QUEUED)).exclude(
                enrollment_id__in=appended).values_list("pk", "enrollment_id"))
            if not waiting:
                break
            job_id, enrollment_id = rng.choice(waiting)
            appended[enrollment_id] = backlog.reply_append(server, user, tag=tag, index=index_of[job_id])
        live = SendJob.objects.filter(pk__in=index_of, state__in=LIVE)
        deadline = time.monotonic() + 120 + followups * delay * 2
        while live.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        drained = round(time.monotonic() - started, 1)
        # Before the fix the polls run after the last send: wait for them too.
        stopped = Enrollment.objects.filter(pk__in=appended, status=Enrollment.Status.STOPPED)
        deadline = time.monotonic() + 60
        while stopped.count() < len(appended) and time.monotonic() < deadline:
            time.sleep(0.1)
        watcher = next(p for p in procs if p.name == "watcher")
        maxrss = vm_hwm_kib(watcher.pid) or 0
    events = dict(TimelineEvent.objects.filter(kind="enrollment_stopped", enrollment_id__in=enrollment_of)
                  .values_list("enrollment_id", "at"))
    latencies = [events[e].timestamp() - t for e, t in appended.items() if e in events]
    late = _handed_off_after(appended)
    return {
        "mode": "backlog",
        "layout": layout,
        "poll_interval_s": None,
        "followups": followups,
        "delay_s": delay,
        "replies": len(appended),
        "stopped": len(events),
        "followups_canceled": SendJob.objects.filter(pk__in=index_of, state=S.CANCELED).count(),
        "followups_sent": sink.count,
        "followups_after_reply": len(late),
        "after_reply_authorized_s": [round(j.authorized_at.timestamp() - appended[j.enrollment_id], 3) for j in late],
        "held_for_replies": TimelineEvent.objects.filter(job_id__in=index_of, kind="job_deferred",
                                                         data__reason="reply_view").count(),
        "drained_s": drained,
        "latency": summary_ms(latencies),
        "clock_offset_ms": offset,
        "poller_maxrss_mib": round(maxrss / 1024, 1),
    }


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    users = {"polling": "pollpw", "idle": "idlepw"} | {key: f"{key}pw" for key in BACKLOGS}
    runs = {}
    with dovecot(ctx, users) as server:
        for mode in MODES:
            ctx.say(f"reply-to-stop: {mode}, {o['replies']} replies at {o['reply_rate']}/s"
                    + (f", poll every {o['poll_interval']}s" if mode == "polling" else ""))
            runs[mode] = mode_run(ctx, server, mode=mode, user=mode, password=users[mode], replies=o["replies"],
                                  interval=o["poll_interval"], rate=o["reply_rate"])
        with SmtpServer(behaviour=Behaviour()) as sink:
            for key, layout in BACKLOGS.items():
                ctx.say(f"reply-to-stop: backlog on {layout}, {o['backlog_followups']} follow-ups behind "
                        f"{o['backlog_delay']:g} s sends, {o['backlog_replies']} replies")
                runs[key] = backlog_run(ctx, server, sink, key=key, user=key, password=users[key],
                                        followups=o["backlog_followups"], replies=o["backlog_replies"],
                                        delay=o["backlog_delay"])
    rows = [(_label(r), f"{r['stopped']}/{r['replies']}", r["latency"]["p50_ms"], r["latency"]["p99_ms"],
             r["latency"]["max_ms"], r["latency"]["mean_ms"], r["followups_canceled"], r["poller_maxrss_mib"],
             r["followups_after_reply"])
            for r in runs.values()]
    b = runs["backlog"]
    held = ", ".join(f"{r['layout']} {r['held_for_replies']} / {r['drained_s']} s" for r in runs.values()
                     if r["mode"] == "backlog")
    text = table(
        "reply-to-stop: IMAP APPEND -> enrollment stop committed",
        ["mode", "stopped", "p50 ms", "p99 ms", "max ms", "mean ms", "follow-ups canceled", "poller peak RSS MiB",
         "follow-ups after reply"],
        rows,
        [f"real Dovecot on loopback; the product's poller as a child process (poll_mailboxes --interval / "
         f"watch_mailboxes --inline); replies appended at {o['reply_rate']:g}/s (Poisson), one per enrollment.",
         "start: APPEND confirmed by the server (bench clock); end: enrollment_stopped event (database clock, "
         f"inside the stop's transaction). Clock offset db-bench: "
         f"{', '.join(str(r['clock_offset_ms']) for r in runs.values())} ms.",
         "polling latency is bounded below by the interval: expect about interval/2 + one pass; the product's "
         "default OUTREACH_POLL_INTERVAL is 30 s.",
         f"backlog: the processes scripts/run starts (rqworker ingest default --with-scheduler, rqworker send, "
         f"rqcron, watch_mailboxes), {b['followups']} follow-ups queued at once behind an SMTP server stalling DATA "
         f"{b['delay_s']:g} s; each reply from a person (at random) whose follow-up no worker has taken yet, the "
         "first just after the first follow-up left. 'one worker' = one rqworker send ingest default (send "
         "served first); 'before' = that worker and a watcher that marks nothing (the stack before the reply "
         "view). Peak RSS: the watcher.",
         "follow-ups after reply: authorized after the person's reply was in the inbox (the goal is 0). Held for "
         f"replies / backlog drained in: {held}."])
    return {"runs": runs, "tables": [text]}


def _label(r: dict[str, Any]) -> str:
    if r["mode"] == "backlog":
        return f"backlog, {r['layout']}"
    return r["mode"] + (f" every {r['poll_interval_s']:g}s" if r["poll_interval_s"] else "")
