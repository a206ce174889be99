"""One-shot measured processes: `python -m proving.bench.child KIND ...`; the last line printed is JSON.

The child reports its own peak RSS (VmHWM) in that JSON. Kinds that measure a
baseline (imapfetch, writeloop, smtploop) import no Django at all.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kib() -> int:
    return _status_kib("VmRSS")


def cpu_s() -> float:
    """This process's CPU seconds so far (user + system)."""
    times = os.times()
    return times.user + times.system


def _wait_until(start_at: float) -> None:
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)


def imapfetch(args) -> dict:
    """The ceiling of ingestion: log in, list, fetch every message with the poller's items, keep nothing."""
    from imapclient import IMAPClient

    items = [b"BODY.PEEK[]", b"INTERNALDATE", b"RFC822.SIZE", b"FLAGS"]  # mailboxes.imap.fetch.FETCH_ITEMS
    rss_start = rss_kib()
    started, cpu_started = time.perf_counter(), cpu_s()
    client = IMAPClient(args.host, port=args.port, ssl=False, timeout=60)
    client.login(args.user, args.password)
    client.select_folder("INBOX", readonly=True)
    uids = sorted(client.search("ALL"))
    count = size = 0
    for i in range(0, len(uids), args.batch):
        for _uid, item in client.fetch(uids[i:i + args.batch], items).items():
            count += 1
            size += len(item[b"BODY[]"])
    client.logout()
    return {"messages": count, "bytes": size, "seconds": time.perf_counter() - started, "rss_start_kib": rss_start,
            "cpu_s": cpu_s() - cpu_started}


def parsefetch(args) -> dict:
    """The bare fetch plus the poller's parse and classify of every message (inbound.ingest.parse): no DB writes."""
    _django()
    from imapclient import IMAPClient

    from inbound.ingest.parse import parse

    rss_start = rss_kib()
    started = time.perf_counter()
    client = IMAPClient(args.host, port=args.port, ssl=False, timeout=60)
    client.login(args.user, args.password)
    client.select_folder("INBOX", readonly=True)
    uids = sorted(client.search("ALL"))[: args.limit or None]
    count = 0
    for i in range(0, len(uids), args.batch):
        for _uid, item in client.fetch(uids[i:i + args.batch], [b"BODY.PEEK[]", b"INTERNALDATE", b"RFC822.SIZE",
                                                                b"FLAGS"]).items():
            parse(bytes(item[b"BODY[]"]))
            count += 1
    client.logout()
    return {"messages": count, "seconds": time.perf_counter() - started, "rss_start_kib": rss_start}


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "outreach.settings")
    import django

    django.setup()


def ingest(args) -> dict:
    """One pass of the product's poller (inbound.ingest.mailbox_poll) over the whole backlog.

    The recording of each message that may act (inbound.ingest.batch.inbound_record: classify, correlate,
    record with its effects) is wrapped with timers, in this process only: acting_seconds and
    acting_cpu_seconds (this process's CPU in that work; the rest of it was the database's).
    """
    _django()
    from inbound.ingest import batch
    from inbound.ingest.poll import mailbox_poll

    acting = {"acting_seconds": 0.0, "acting_cpu_seconds": 0.0}
    record = batch.inbound_record

    def timed_record(**kwargs):
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            return record(**kwargs)
        finally:
            acting["acting_seconds"] += time.perf_counter() - started
            acting["acting_cpu_seconds"] += time.process_time() - cpu_started

    batch.inbound_record = timed_record
    rss_start = rss_kib()
    started, cpu_started = time.perf_counter(), cpu_s()
    result = mailbox_poll(mailbox_id=args.mailbox_id, batch_size=args.batch)
    return {"messages": result.fetched, "folders": result.folders, "error": result.error,
            "stats": result.stats | acting, "seconds": time.perf_counter() - started, "rss_start_kib": rss_start,
            "cpu_s": cpu_s() - cpu_started}


def dispatch(args) -> dict:
    """Passes of the product's dispatcher (sequences.tasks.dispatch: sweep, select due, enqueue).

    Two of the functions it calls are wrapped with timers (in this process only) to show where a
    pass spends its time: dispatch_due (select + queued transitions) and tasks.enqueue_sends.
    """
    _django()
    from sequences import tasks
    from sequences.services.sending import dispatch_due

    spent = {"dispatch_due": 0.0, "enqueue": 0.0}

    def timed(name, fn):
        def wrapper(*a, **kw):
            started = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] += time.perf_counter() - started
        return wrapper

    dispatch_due = timed("dispatch_due", dispatch_due)
    tasks.enqueue_sends = timed("enqueue", tasks.enqueue_sends)
    rss_start = rss_kib()
    passes = []
    for _ in range(args.passes):
        spent.update(dispatch_due=0.0, enqueue=0.0)
        started = time.perf_counter()
        counts = tasks.dispatch()
        passes.append({"seconds": time.perf_counter() - started, "dispatch_due_s": spent["dispatch_due"],
                       "enqueue_s": spent["enqueue"], **counts})
        if not counts["queued"]:
            break
    return {"passes": passes, "rss_start_kib": rss_start}


def writeloop(args) -> dict:
    """Pseudo-sends of 3 short write transactions (UPDATE one row + INSERT one row) with psycopg."""
    import psycopg

    conn = psycopg.connect(os.environ["OUTREACH_BENCH_DATABASE_URL"].replace("postgres://", "postgresql://", 1),
                           autocommit=False)
    row = args.index % 64
    done = 0
    durations = []  # of each transaction, BEGIN to COMMIT, in seconds
    _wait_until(args.start_at)
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        for _ in range(3):
            started = time.perf_counter()
            with conn.transaction():
                conn.execute("UPDATE bench_counter SET n = n + 1 WHERE id = %s", (row,))
                conn.execute("INSERT INTO bench_log (at, w) VALUES (clock_timestamp(), %s)", (args.index,))
            durations.append(time.perf_counter() - started)
        done += 1
    conn.close()
    return {"done": done, "transaction_s": durations}


def smtploop(args) -> dict:
    """Bare smtplib submissions, one connection per message (as mailboxes.transports.SmtpTransport)."""
    import smtplib

    message = b"From: a@bench.test\r\nTo: b@bench.test\r\nSubject: x\r\n\r\n" + b"Hello.\r\n" * 80
    done = 0
    _wait_until(args.start_at)
    deadline = time.time() + args.seconds
    while time.time() < deadline:
        client = smtplib.SMTP("127.0.0.1", args.port, timeout=30)
        client.sendmail("a@bench.test", ["b@bench.test"], message)
        client.quit()
        done += 1
    return {"done": done}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="proving.bench.child")
    parser.add_argument("kind", choices=["imapfetch", "parsefetch", "ingest", "dispatch", "writeloop", "smtploop"])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--mailbox-id", type=int)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="parsefetch: only the first N messages")
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("bench children talk to loopback only")
    result = globals()[args.kind](args)
    result["hwm_kib"] = _status_kib("VmHWM")  # this process' peak RSS
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
