"""Slow provider: reply-ingestion commit latency while every worker is stuck in a slow SMTP DATA.

The SMTP sink stalls DATA for D seconds. W workers are given more follow-ups
than they can send, so all W are always inside a send. While they are, the
bench commits replies for exactly the enrollments being sent (the race the
product exists for): each in-flight job gets one reply, at a random moment
of its send, committed either through reply ingestion
(inbound.ingest.inbound_record with a reply whose In-Reply-To names step 1)
or through enrollment_stop; the time of that call is the sample.

- guarded:   the product (authorize commits before the hand-off; no lock across SMTP)
- lock_held: proving.variants -- one transaction locks the enrollment, authorizes, talks SMTP,
             records (the design docs/architecture.md rejects)
"""

from __future__ import annotations

import queue
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django_rq import get_connection, get_queue
from rq import Queue

from inbound.ingest.record import inbound_record
from mailboxes.imap.fetch import FetchedMessage
from proving.bench.procs import WorkerPool
from proving.bench.stats import ratio, summary_ms, table
from proving.harness import data
from proving.harness.smtp import SmtpServer
from sequences.models import SendJob
from sequences.sending_mailbox import enrollment_mailbox_id
from sequences.services.stops import enrollment_stop

VARIANTS = ("guarded", "lock_held")
METHODS = ("inbound_record", "enrollment_stop")
S = SendJob.State


class Threads:
    """A few threads, each with its own warmed-up DB connection, closed at the end."""

    def __init__(self, count: int):
        self.tasks: queue.Queue = queue.Queue()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(count)]
        for t in self.threads:
            t.start()

    def _run(self) -> None:
        connection.ensure_connection()
        try:
            while (task := self.tasks.get()) is not None:
                task()
        finally:
            connection.close()

    def submit(self, fn: Callable[[], None]) -> None:
        self.tasks.put(fn)

    def close(self) -> None:
        for _ in self.threads:
            self.tasks.put(None)
        for t in self.threads:
            t.join(120)


def reply_bytes(*, sender: str, to_message_id: str, n: int) -> bytes:
    return (
        f"From: Ada Lovelace <{sender}>\r\nTo: sales@bench.outreach.test\r\nSubject: Re: Quick question\r\n"
        f"Message-ID: <reply.{n}.{time.time_ns()}@prospects.test>\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\n"
        f"In-Reply-To: {to_message_id}\r\nReferences: {to_message_id}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n\r\nThanks, but we are all set. Please take me off your list "
        "for now.\r\n\r\nOn Mon, Sam wrote:\r\n> Would a 15-minute call next week be useful?\r\n"
    ).encode()


def variant_run(ctx, sink: SmtpServer, *, variant: str, workers: int, samples: int, delay: float) -> dict[str, Any]:
    ctx.reset()
    boxes = data.mailboxes_create(4, smtp_port=sink.port)
    tag = f"s{variant[0]}"
    count = samples + 3 * workers
    jobs = data.followups_create(count, sequences=data.sequences_create(boxes), tag=tag)
    ctx.analyze()
    info = {j.pk: (i, j.enrollment_id, enrollment_mailbox_id(j.enrollment), j.enrollment.contact.email)
            for i, j in enumerate(SendJob.objects.filter(pk__in=[j.pk for j in jobs])
                                  .select_related("enrollment__sequence", "enrollment__contact").order_by("pk"))}
    sink.reset(data_delay=delay)
    latencies: dict[str, list[float]] = {m: [] for m in METHODS}
    outcomes: Counter = Counter()
    errors: list[str] = []
    lock = threading.Lock()

    def commit_reply(job_id: int, method: str) -> None:
        i, enrollment_id, mailbox_id, email = info[job_id]
        try:
            started = time.perf_counter()
            if method == "inbound_record":
                raw = reply_bytes(sender=email, to_message_id=data.first_message_id(tag, i), n=i)
                fetched = FetchedMessage(uid=i + 1, internaldate=datetime.now(UTC), raw=raw, size=len(raw), flags=())
                result = inbound_record(mailbox_id=mailbox_id, folder="INBOX", uidvalidity=1, fetched=fetched)
                found = EFFECT.search(result.effect)
                outcome = _outcome(*map(int, found.groups())) if found else result.effect[:60]
            else:
                summary = enrollment_stop(enrollment_id=enrollment_id, reason="replied", source="bench")
                outcome = _outcome(summary.canceled, summary.in_flight, summary.submitted)
            elapsed = time.perf_counter() - started
            with lock:
                latencies[method].append(elapsed)
                outcomes[f"{method}: {outcome}"] += 1
        except Exception as exc:  # noqa: BLE001 - counted, shown
            with lock:
                errors.append(f"{type(exc).__name__}: {exc}")

    threads = Threads(workers + 2)
    targeted: dict[int, tuple[float, str]] = {}
    fired: set[int] = set()
    busy: list[int] = []
    rng = random.Random(7)
    redis = get_connection("send")
    q = get_queue("send")
    with WorkerPool(workers, "send", "simple") as pool:
        pipe = redis.pipeline()
        q.enqueue_many([Queue.prepare_data("proving.bench.tasks.send_timed", (j.pk, variant), result_ttl=60,
                                           failure_ttl=3600, timeout=600) for j in jobs], pipeline=pipe)
        pipe.execute()
        started = time.perf_counter()
        deadline = time.monotonic() + 120 + (samples / workers + 3) * delay * 3
        while len(fired) < samples and time.monotonic() < deadline:
            now = time.monotonic()
            in_flight = list(SendJob.objects.filter(pk__in=info, state__in=(S.CLAIMED, S.AUTHORIZED))
                             .values_list("pk", flat=True))
            busy.append(len(in_flight))
            for pk in in_flight:
                if pk not in targeted and len(targeted) < samples:
                    # A random moment inside this job's send.
                    targeted[pk] = (now + rng.uniform(0.1, 0.8) * delay, METHODS[len(targeted) % 2])
            for pk, (fire_at, method) in targeted.items():
                if pk not in fired and fire_at <= now:
                    fired.add(pk)
                    threads.submit(lambda pk=pk, method=method: commit_reply(pk, method))
            time.sleep(0.02)
        threads.close()
        elapsed = time.perf_counter() - started
        sent = sink.count
        pool.stop()
    return {
        "variant": variant,
        "workers": workers,
        "delay_s": delay,
        "sends_completed": sent,
        "sends_per_s": round(sent / elapsed, 2),
        "mean_jobs_in_flight": round(sum(busy) / len(busy), 2) if busy else 0,
        "latency": {m: summary_ms(v) for m, v in latencies.items()},
        "all": summary_ms([x for v in latencies.values() for x in v]),
        "outcomes": dict(outcomes),
        "errors": errors[:10],
        "error_count": len(errors),
    }


# inbound.ingest._describe: "stopped (replied): 1 enrollments, 0 jobs canceled (never sent), 1 in flight and 1 ..."
EFFECT = re.compile(r"(\d+) jobs canceled .*?(\d+) in flight and (\d+) already submitted")


def _outcome(canceled: int, in_flight: int, submitted: int) -> str:
    """What the stop found of the follow-up being sent (step 1 is always already submitted)."""
    if canceled:
        return "follow-up canceled before SMTP"
    if in_flight:
        return "follow-up in flight (authorized)"
    if submitted >= 2:
        return "follow-up already submitted"
    return "other"


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    runs = {}
    with SmtpServer(keep_messages=False) as sink:
        for variant in VARIANTS:
            ctx.say(f"slow-provider: {variant}, {o['slow_workers']} workers, DATA delayed {o['delay']}s, "
                    f"{o['samples']} replies")
            runs[variant] = variant_run(ctx, sink, variant=variant, workers=o["slow_workers"], samples=o["samples"],
                                        delay=o["delay"])
    g, lk = runs["guarded"], runs["lock_held"]
    rows = []
    for key, label in (("inbound_record", "reply ingested (inbound_record)"),
                       ("enrollment_stop", "stop (enrollment_stop)"), ("all", "all")):
        gs = g["latency"][key] if key != "all" else g["all"]
        ls = lk["latency"][key] if key != "all" else lk["all"]
        rows.append((label, gs["n"], gs["p50_ms"], gs["p99_ms"], ls["n"], ls["p50_ms"], ls["p99_ms"],
                     ratio(ls["p50_ms"], gs["p50_ms"], 1), ratio(ls["p99_ms"], gs["p99_ms"], 1)))
    text = table(
        f"slow-provider: reply commit latency while {o['slow_workers']} workers sit in a {o['delay']:g}s SMTP DATA",
        ["commit", "n (design)", "design p50 ms", "design p99 ms", "n (lock held)", "lock-held p50 ms",
         "lock-held p99 ms", "ratio p50", "ratio p99"],
        rows,
        ["design = the product (authorize commits before SMTP); lock held = one transaction holds the enrollment "
         "lock across SMTP (proving/variants.py, the design the product rejects).",
         f"each reply targets an enrollment whose follow-up is in the middle of its send, at a random moment "
         f"(10-80% of the delay); committed from {o['slow_workers'] + 2} threads of the bench process.",
         f"mean jobs in flight: design {g['mean_jobs_in_flight']}, lock held {lk['mean_jobs_in_flight']} "
         f"(of {o['slow_workers']} workers); sends/s: design {g['sends_per_s']}, lock held {lk['sends_per_s']}.",
         f"outcomes, design: {g['outcomes']}; lock held: {lk['outcomes']}; errors: "
         f"{g['error_count'] + lk['error_count']}"])
    return {"runs": runs, "ratio_p50": rows[-1][7], "ratio_p99": rows[-1][8], "tables": [text]}
