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
"""

from __future__ import annotations

import random
import time
from datetime import timedelta
from typing import Any

from django.db import connection

from mailboxes.models import Mailbox
from proving.bench.imapserver import child_env, dovecot, imap_fields
from proving.bench.procs import spawn
from proving.bench.stats import summary_ms, table
from proving.harness import data, mails
from sequences.models import Enrollment, SendJob, TimelineEvent

MODES = ("polling", "idle")


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
        "latency": summary_ms(latencies),
        "clock_offset_ms": offset,
        "poller_maxrss_mib": round(maxrss / 1024, 1),
    }


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    users = {"polling": "pollpw", "idle": "idlepw"}
    runs = {}
    with dovecot(ctx, users) as server:
        for mode in MODES:
            ctx.say(f"reply-to-stop: {mode}, {o['replies']} replies at {o['reply_rate']}/s"
                    + (f", poll every {o['poll_interval']}s" if mode == "polling" else ""))
            runs[mode] = mode_run(ctx, server, mode=mode, user=mode, password=users[mode], replies=o["replies"],
                                  interval=o["poll_interval"], rate=o["reply_rate"])
    rows = [(f"{r['mode']}" + (f" every {r['poll_interval_s']:g}s" if r["poll_interval_s"] else ""),
             f"{r['stopped']}/{r['replies']}", r["latency"]["p50_ms"], r["latency"]["p99_ms"],
             r["latency"]["max_ms"], r["latency"]["mean_ms"], r["followups_canceled"], r["poller_maxrss_mib"])
            for r in runs.values()]
    text = table(
        "reply-to-stop: IMAP APPEND -> enrollment stop committed",
        ["mode", "stopped", "p50 ms", "p99 ms", "max ms", "mean ms", "follow-ups canceled", "poller peak RSS MiB"],
        rows,
        [f"real Dovecot on loopback; the product's poller as a child process (poll_mailboxes --interval / "
         f"watch_mailboxes --inline); replies appended at {o['reply_rate']:g}/s (Poisson), one per enrollment.",
         "start: APPEND confirmed by the server (bench clock); end: enrollment_stopped event (database clock, "
         f"inside the stop's transaction). Clock offset db-bench: "
         f"{', '.join(str(r['clock_offset_ms']) for r in runs.values())} ms.",
         "polling latency is bounded below by the interval: expect about interval/2 + one pass; the product's "
         "default OUTREACH_POLL_INTERVAL is 30 s."])
    return {"runs": runs, "tables": [text]}
