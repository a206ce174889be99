"""Watcher: N watched IMAP folders in one watcher process, next to the one-thread-per-folder design.

For each design a fresh database holds M mailboxes (one Dovecot account each, F folders each: N = M x F)
and R enrollments whose step 1 was submitted an hour ago. The watcher runs as a child process and asks for
a poll of a folder whenever it reports new mail (`on_new` = enqueue on the `ingest` queue, as `scripts/run`
runs it: the poll reads that folder); two RQ workers poll. Designs:

- multiplexed: the product, `manage.py watch_mailboxes` (inbound.watcher: one thread, selectors, a small
  pool that opens connections)
- thread per folder: proving.variants.watch_thread_per_folder (`python -m proving.bench.watcher_child`)

Measured per design: the time until every folder's connection is open, the watcher's peak RSS (VmHWM),
its threads and CPU seconds while idle, and reply -> stop: the bench APPENDs one correlated reply per
enrollment into a random folder of that enrollment's mailbox (Poisson arrivals) and takes the time the
server confirmed the APPEND (bench clock) to the `enrollment_stopped` event (database clock). And the reply
view the watcher keeps (proving.bench.watcher_view): how far each mailbox's replies-read-through time trails
the database clock while idle (one IDLE cycle) and while replies arrive, and how many follow-ups the final
check holds on these healthy mailboxes.

`--load` (proving.bench.load) runs the designs under a background load on purpose: CPU burner processes and/or a
send backlog. A third table sets each figure of the product beside the same figure of the baseline of the same
run, and beside the target of issue #47.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from inbound.leases import POLL_ROOM
from inbound.watcher import heartbeat, openers
from proving.bench.imapserver import child_env, dovecot, imap_fields
from proving.bench.load import Load, LoadSeen, cpu_burners, parse_load, send_backlog
from proving.bench.procs import WorkerPool, spawn
from proving.bench.reply_to_stop import clock_offset_ms
from proving.bench.stats import ratio, summary_ms, table
from proving.bench.watcher_view import ViewSampler, follow_ups_checked
from proving.harness import data, mails
from sequences.models import Enrollment, SendJob, TimelineEvent

IDLE_SECONDS = 60  # one IDLE cycle (re-SELECT, UIDVALIDITY check) of every folder falls inside the replies
DESIGNS = {
    "multiplexed": ["watch_mailboxes", "--idle-seconds", str(IDLE_SECONDS)],
    "thread per folder": ["-m", "proving.bench.watcher_child", str(IDLE_SECONDS)],
}
PASSWORD = "watchpw"
# Dovecot's defaults allow 100 imap processes and 10 connections per user and address: a watcher of N
# folders holds N connections (one imap process each, client_limit 1 as Dovecot recommends) plus the polls'.
# The imap service has a process_limit of its own (1024) that default_process_limit does not raise: beyond it
# Dovecot drops new connections after their LOGIN ("process_limit (1024) reached"), as at 2,000 folders.
LIMITS = """
default_process_limit = {processes}
default_client_limit = {clients}
mail_max_userip_connections = {per_user}
service imap-login {{
  process_min_avail = 4
}}
service imap {{
  process_limit = {processes}
}}
"""


def dovecot_limits(folders: int, per_mailbox: int) -> str:
    return LIMITS.format(processes=folders + 200, clients=2 * folders + 400, per_user=per_mailbox + 20)


def folder_names(per_mailbox: int) -> list[str]:
    return ["INBOX"] + [f"Folder{j:02d}" for j in range(1, per_mailbox)]


def make_accounts(server, prefix: str, mailboxes: int, per_mailbox: int) -> list[str]:
    users = [f"{prefix}{i}" for i in range(mailboxes)]
    server.add_users(dict.fromkeys(users, PASSWORD))
    for user in users:
        with server.client(user) as client:
            for folder in folder_names(per_mailbox)[1:]:
                client.create_folder(folder)
    return users


def tcp_connections(pid: int, port: int) -> int:
    """Established TCP connections of process PID to 127.0.0.1:PORT (its sockets in /proc/net/tcp)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return 0
    count = 0
    with open("/proc/net/tcp") as table_file:
        for line in table_file.readlines()[1:]:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and inode in inodes and int(remote.split(":")[1], 16) == port:
                count += 1
    return count


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "Threads"):
                out[key] = int(value.split()[0])
    return out


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ingest_drained(timeout: float) -> float | None:
    """Seconds until the ingest queue is empty and no poll runs; None when it was not within `timeout`."""
    from django_rq import get_queue

    queue = get_queue("ingest")
    started = time.monotonic()
    while time.monotonic() < started + timeout:
        if queue.count == 0 and queue.started_job_registry.count == 0:
            return time.monotonic() - started
        time.sleep(0.2)
    return None


def design_run(
    ctx, server, *, design: str, prefix: str, folders: int, per_mailbox: int, replies: int, rate: float,
    load: Load | None = None
) -> dict[str, Any]:
    load = load or Load()
    ctx.reset()
    count = max(1, folders // per_mailbox)
    users = make_accounts(server, prefix, count, per_mailbox)
    boxes = [
        data.mailbox_create(
            name=f"{prefix}-{i}",
            address=f"{user}@{prefix}.outreach.test",
            smtp_port=2,
            display_name="Sam",
            daily_cap=10**9,
            **(imap_fields(server, user) | {"imap_folders": folder_names(per_mailbox)}),
        )
        for i, user in enumerate(users)
    ]
    jobs = data.followups_create(
        replies,
        sequences=data.sequences_create(boxes),
        tag=prefix,
        state=SendJob.State.SCHEDULED,
        due_in=timedelta(days=1),
    )
    ctx.analyze()
    enrollment_of = [j.enrollment_id for j in jobs]
    sampler = ViewSampler(boxes)
    # The idle samples span one IDLE cycle of every folder (each re-check advances its read-through time).
    idle_window = 5.0 if ctx.quick else IDLE_SECONDS + 5.0
    # Every folder of an account is watched here: the server's limit (Dovecot's, raised above) is named to the
    # watchers as the folders plus the connections they leave to the polls.
    env = child_env(PASSWORD) | {"OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT": str(per_mailbox + POLL_ROOM)}
    os.environ["OUTREACH_SECRET_BENCH_IMAP"] = PASSWORD  # the pollers (RQ workers) log in as well
    seen = LoadSeen()
    with WorkerPool(2, "ingest", "fork") as workers, send_backlog(load.send, tag=prefix) as sends:
        started = time.monotonic()
        watcher = spawn(f"watcher-{prefix}", DESIGNS[design], env=env)
        try:
            deadline = started + 120 + folders * 0.2
            base_rss = None  # the process before its connections: what does not grow with the folders
            while (open_now := tcp_connections(watcher.proc.pid, server.port)) < count * per_mailbox:
                if time.monotonic() > deadline or watcher.proc.poll() is not None:
                    raise RuntimeError(
                        f"{design}: {open_now} of {count * per_mailbox} folders connected:\n{watcher.log_tail()}"
                    )
                if not open_now:
                    base_rss = proc_status(watcher.proc.pid).get("VmRSS", base_rss)  # the last look before any
                time.sleep(0.1)
            connect_s = time.monotonic() - started
            seen.sample()
            drained_s = ingest_drained(600)  # the catch-up poll each opened folder asks for
            time.sleep(1.0)
            idle_cpu0, idle_t0 = cpu_seconds(watcher.proc.pid), time.monotonic()
            sampler.wait(5.0, "idle")
            idle_cpu = (cpu_seconds(watcher.proc.pid) - idle_cpu0) / (time.monotonic() - idle_t0)
            steady = proc_status(watcher.proc.pid)
            seen.sample()
            sampler.wait(idle_window - 5.0, "idle")
            seen.sample()
            # One follow-up per mailbox through the final check, nobody having replied yet.
            checked = follow_ups_checked(jobs[:count])
            offset = clock_offset_ms()
            rng = random.Random(23)
            appended: dict[int, float] = {}
            # (mailbox pk, folder, APPEND sent, enrollment): push -> poll
            sent_at: list[tuple[int, str, float, int]] = []
            for i in range(replies):
                sampler.wait(rng.expovariate(rate), "replies")
                user = users[i % count]  # followups_create puts enrollment i on mailbox i % count
                folder = rng.choice(folder_names(per_mailbox))
                raw = mails.bench_reply(
                    sender=f"p{i}.{prefix}@prospects.test", to_message_id=data.first_message_id(prefix, i)
                )
                with server.client(user) as client:
                    sent_at.append((boxes[i % count].pk, folder, time.time(), enrollment_of[i]))
                    client.append(folder, raw)
                appended[enrollment_of[i]] = time.time()
            stopped = Enrollment.objects.filter(pk__in=enrollment_of, status=Enrollment.Status.STOPPED)
            wait_until = time.monotonic() + 60
            while stopped.count() < replies and time.monotonic() < wait_until:
                sampler.wait(0.1, "replies")
            final = proc_status(watcher.proc.pid)
            seen.sample()
            sent = sends.report() if sends is not None else None
            if stopped.count() < replies:  # say why, next to the figures
                for child in (*workers.workers, watcher):
                    ctx.say(f"{child.name}, last lines: {child.log_tail(5)}")
        finally:
            peak = watcher.stop()
    events = dict(
        TimelineEvent.objects.filter(kind="enrollment_stopped", enrollment_id__in=enrollment_of).values_list(
            "enrollment_id", "at"
        )
    )
    latencies = [events[e].timestamp() - t for e, t in appended.items() if e in events]
    pushes = push_latencies(sent_at, events)
    peak_mib = max(peak, final["VmHWM"]) / 1024
    base_mib = None if base_rss is None else base_rss / 1024  # None: connected before the first look
    return {
        "design": design,
        "folders": count * per_mailbox,
        "mailboxes": count,
        "folders_per_mailbox": per_mailbox,
        "connect_all_s": round(connect_s, 2),
        "openers": openers() if design == "multiplexed" else None,
        "catch_up_drained": drained_s is not None,
        "catch_up_drained_s": None if drained_s is None else round(drained_s, 1),
        "watcher_peak_rss_mib": round(peak_mib, 1),
        # What the process holds before its first connection, and the rest scaled to 1,000 folders.
        "watcher_base_rss_mib": None if base_mib is None else round(base_mib, 1),
        "watcher_peak_rss_mib_per_1000_folders": None if base_mib is None else round(
            base_mib + (peak_mib - base_mib) * 1000 / (count * per_mailbox), 1),
        "watcher_rss_idle_mib": round(steady["VmRSS"] / 1024, 1),
        "watcher_threads": steady["Threads"],
        "watcher_idle_cpu_pct": round(idle_cpu * 100, 2),
        "replies": replies,
        "stopped": len(events),
        "latency": summary_ms(latencies),
        "push_to_enqueue": summary_ms(pushes.to_enqueue),
        "poll_queue_wait": summary_ms(pushes.queue_wait),
        "poll_run": summary_ms(pushes.run),
        "long_waits_by_polls_running": pushes.long_waits,
        "polls_skipped": pushes.skipped,
        "pushes_merged": pushes.merged,
        "clock_offset_ms": offset,
        "read_through_lag_idle": sampler.report("idle")["lag"],
        "read_through_lag_replies": sampler.report("replies")["lag"],
        "reply_views_idle": sampler.report("idle")["views"],
        "reply_views_replies": sampler.report("replies")["views"],
        "idle_window_s": idle_window,
        "final_check_healthy": checked,
        "follow_ups_held_healthy": checked["held"],
        "heartbeat_s": heartbeat() if design == "multiplexed" else None,
        "load": {"asked": load.words(), "loadavg_1m": seen.report(), "sends": sent},
    }


@dataclass
class Pushes:
    """Per reply (APPEND sent), the first poll of its folder (or of every folder of its mailbox) the watcher
    enqueued after it and before the enrollment was stopped: from the APPEND to its enqueue (the watcher's own
    share of reply -> stop), its wait in the ingest queue, and its run in a poller (RQ's enqueued_at, started_at,
    ended_at)."""

    to_enqueue: list[float] = field(default_factory=list)
    queue_wait: list[float] = field(default_factory=list)
    run: list[float] = field(default_factory=list)
    skipped: int = 0  # polls skipped because another poll of the same mailbox was running (inbound.tasks.poll_lock)
    # pushes that enqueued nothing before the stop: merged into a poll asked for before and not begun, or left to
    # the running poll's next pass (`inbound.watcher.enqueue_poll_merged`)
    merged: int = 0
    # Waits in the queue over LONG_WAIT s, by the most polls (of any mailbox) running at once meanwhile: as many as
    # there are pollers is a queue; fewer is a poller slow to take the job (a busy machine).
    long_waits: dict[int, int] = field(default_factory=dict)


LONG_WAIT = 0.5


def push_latencies(sent: list[tuple[int, str, float, int]], stopped: dict[int, Any]) -> Pushes:
    """Pushes for the replies `sent` ((mailbox pk, folder, APPEND sent, enrollment)) of the enrollments stopped
    at the times `stopped` gives."""
    from django_rq import get_queue
    from rq.job import Job

    queue = get_queue("ingest")
    ids = [
        *queue.finished_job_registry.get_job_ids(),
        *queue.started_job_registry.get_job_ids(),
        *queue.failed_job_registry.get_job_ids(),
        *queue.job_ids,
    ]
    # (mailbox, folder; None: every folder) -> [(enqueued, started, ended)], each a timestamp or None
    polls: dict[tuple[int, str | None], list[tuple[float, float | None, float | None]]] = {}
    running: list[tuple[float, float]] = []  # every poll's (started, ended)
    out = Pushes()
    for job in Job.fetch_many(ids, connection=queue.connection):
        if job is not None and isinstance(job.return_value(), dict) and "skipped" in job.return_value():
            out.skipped += 1
        if job is not None and job.enqueued_at is not None and job.args:
            folder = job.args[1] if len(job.args) > 1 else None
            times = _timestamp(job.enqueued_at), _timestamp(job.started_at), _timestamp(job.ended_at)
            polls.setdefault((int(job.args[0]), folder), []).append(times)
            if times[1] is not None:
                running.append((times[1], times[2] or float("inf")))
    for mailbox, folder, at, enrollment in sent:
        until = stopped[enrollment].timestamp() if enrollment in stopped else float("inf")
        later = [p for p in (*polls.get((mailbox, folder), []), *polls.get((mailbox, None), []))
                 if at <= p[0] <= until]
        if later:
            enqueued, started, ended = min(later)
            out.to_enqueue.append(enqueued - at)
            if started is not None:
                out.queue_wait.append(started - enqueued)
                if started - enqueued > LONG_WAIT:
                    most = _most_at_once([(max(a, enqueued), min(b, started)) for a, b in running
                                          if a < started and b > enqueued])
                    out.long_waits[most] = out.long_waits.get(most, 0) + 1
                if ended is not None:
                    out.run.append(ended - started)
        elif enrollment in stopped:
            out.merged += 1
    return out


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most of the (start, end) spans that overlap at one instant."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def _timestamp(at: datetime | None) -> float | None:
    """RQ's times are UTC, naive in older releases."""
    return None if at is None else (at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp()


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    folders, per_mailbox = o["folders"], min(o["folders_per_mailbox"], o["folders"])
    load = parse_load(o.get("load"))
    runs = {}
    with dovecot(ctx, {}, dovecot_limits(folders, per_mailbox)) as server, cpu_burners(load.cpu):
        for index, design in enumerate(DESIGNS):
            ctx.say(
                f"watcher: {design}, {folders} folders ({per_mailbox} per mailbox), {o['replies']} replies "
                f"at {o['watch_reply_rate']}/s, background load: {load.words()}"
            )
            runs[design] = design_run(
                ctx,
                server,
                design=design,
                prefix=f"w{index}",
                folders=folders,
                per_mailbox=per_mailbox,
                replies=o["replies"],
                rate=o["watch_reply_rate"],
                load=load,
            )
    base = runs["thread per folder"]
    rows = [
        (
            r["design"],
            r["folders"],
            r["connect_all_s"],
            r["watcher_peak_rss_mib"],
            ratio(r["watcher_peak_rss_mib"], base["watcher_peak_rss_mib"]),
            r["watcher_threads"],
            r["watcher_idle_cpu_pct"],
            r["push_to_enqueue"]["p50_ms"],
            r["push_to_enqueue"]["p99_ms"],
            f"{r['stopped']}/{r['replies']}",
            r["latency"]["p50_ms"],
            r["latency"]["p99_ms"],
            r["latency"]["max_ms"],
            ratio(r["latency"]["p99_ms"], base["latency"]["p99_ms"]),
        )
        for r in runs.values()
    ]
    text = table(
        f"watcher: {folders} watched folders in one process, reply -> stop",
        [
            "design",
            "folders",
            "all connected s",
            "peak RSS MiB",
            "RSS vs baseline",
            "threads",
            "idle CPU %",
            "push p50 ms",
            "push p99 ms",
            "stopped",
            "stop p50 ms",
            "stop p99 ms",
            "stop max ms",
            "stop p99 vs baseline",
        ],
        rows,
        [
            f"real Dovecot on loopback (one imap process per connection, raised process and connection limits); "
            f"{per_mailbox} folders per mailbox, one Dovecot account per mailbox; the watcher enqueues a poll of "
            "the mailbox on the ingest queue, two of the product's RQ workers poll "
            "(outreach.worker: the classifier loaded at its start, each poll run in the worker process, as scripts/run "
            "runs it).",
            "baseline: the one-thread-per-folder design (proving/variants.py) on the same folders in the same run.",
            f"reply -> stop: APPEND into a random folder of the enrollment's mailbox (bench clock) -> "
            f"enrollment_stopped (database clock); replies at {o['watch_reply_rate']:g}/s (Poisson). "
            "Clock offset db-bench: "
            f"{', '.join(str(r['clock_offset_ms']) for r in runs.values())} ms.",
            "push: APPEND sent -> the watcher enqueued a poll of that folder (RQ enqueued_at) before the stop, the "
            "watcher's own share; stop adds the pollers (a push polls the folder it was heard in). Pushes merged "
            "into a poll already asked for (no poll enqueued before the stop): "
            f"{', '.join(str(r['pushes_merged']) for r in runs.values())}.",
            "the pollers' share, p50 / p99 ms: the poll's wait in the ingest queue "
            + ", ".join(f"{design} {p50_p99(r['poll_queue_wait'])}" for design, r in runs.items())
            + "; its run " + ", ".join(f"{design} {p50_p99(r['poll_run'])}" for design, r in runs.items())
            + f"; waits over {LONG_WAIT:g} s by the most polls running meanwhile (2 pollers) "
            + ", ".join(f"{design} {r['long_waits_by_polls_running'] or '-'}" for design, r in runs.items()) + ".",
            "peak RSS is the watcher process' VmHWM; idle CPU over 5 s with every folder in IDLE.",
            f"IDLE cycle {IDLE_SECONDS} s for both designs, so every folder is re-selected while replies arrive.",
        ],
    )
    view_rows = [
        (
            r["design"],
            r["folders"],
            _seconds(r["read_through_lag_idle"]["p50_ms"]),
            _seconds(r["read_through_lag_idle"]["p99_ms"]),
            _seconds(r["read_through_lag_replies"]["p50_ms"]),
            _seconds(r["read_through_lag_replies"]["p99_ms"]),
            _share(r["reply_views_replies"], "unread"),
            _share(r["reply_views_idle"], "stale", "never_read") + " / "
            + _share(r["reply_views_replies"], "stale", "never_read"),
            f"{r['follow_ups_held_healthy']}/{r['final_check_healthy']['checked']}",
            _seconds(r["final_check_healthy"]["view_age_at_check"]["p50_ms"]),
        )
        for r in runs.values()
    ]
    view_text = table(
        f"watcher: {folders} watched folders, the reply view the final check reads",
        [
            "design",
            "folders",
            "idle lag p50 s",
            "idle lag p99 s",
            "replies lag p50 s",
            "replies lag p99 s",
            "unread while replies",
            "stale idle / replies",
            "follow-ups held",
            "view age at check p50 s",
        ],
        view_rows,
        [
            "lag: the database clock minus each mailbox's replies-read-through time (the oldest of its reply "
            f"folders'), every mailbox sampled every 0.5 s; idle: {runs['multiplexed']['idle_window_s']:g} s with "
            "no new mail (one IDLE cycle of every folder); replies: while the replies above arrive.",
            "unread: samples in which a folder of the mailbox had mail the watcher heard of and no poll had read "
            "yet (its follow-ups wait seconds for the poll); stale: older than reply_view_max_age (600 s) or "
            "never read (follow-ups held); 0 expected.",
            "follow-ups held: one follow-up per mailbox through the real final check after the idle window, "
            "nobody having replied: held for the reply view / checked (0 expected on healthy mailboxes); view "
            "age: replies_read_seconds_before of their authorizations.",
            "the baseline watcher advances no read-through time: its lag is the time since the catch-up polls.",
        ],
    )
    return {"runs": runs, "tables": [text, view_text, beside_baseline(runs, folders, load)]}


def beside_baseline(runs: dict[str, dict[str, Any]], folders: int, load: Load) -> str:
    """Each figure of the product, the same figure of the baseline of the same run, their ratio and the target."""
    product, base = runs["multiplexed"], runs["thread per folder"]

    def pair(get) -> tuple[Any, Any]:
        return get(product), get(base)

    figures = [
        ("all connected s", pair(lambda r: r["connect_all_s"]), "-"),
        ("catch-up drained s after all connected", pair(lambda r: r["catch_up_drained_s"]), "<= 60"),
        ("push p50 / p99 ms", pair(lambda r: p50_p99(r["push_to_enqueue"])), "-"),
        ("reply -> stop p50 / p99 ms", pair(lambda r: p50_p99(r["latency"])), "p99 <= 2,000 and <= 1.5 x baseline"),
        ("read-through lag idle p50 / p99 s", pair(lambda r: p50_p99(r["read_through_lag_idle"], 1000)), "p99 <= 10"),
        ("read-through lag replies p50 / p99 s", pair(lambda r: p50_p99(r["read_through_lag_replies"], 1000)),
         "p99 <= 10"),
        ("follow-ups held (healthy)", pair(lambda r: f"{r['follow_ups_held_healthy']}/"
                                                     f"{r['final_check_healthy']['checked']}"), "0"),
        ("peak RSS MiB", pair(lambda r: r["watcher_peak_rss_mib"]), "-"),
        ("peak RSS MiB per 1,000 folders", pair(lambda r: r["watcher_peak_rss_mib_per_1000_folders"]), "<= 117"),
        ("threads", pair(lambda r: r["watcher_threads"]), "-"),
        ("idle CPU %", pair(lambda r: r["watcher_idle_cpu_pct"]), "-"),
        ("load average (1 min) min-max", pair(lambda r: "{min}-{max}".format(**r["load"]["loadavg_1m"])), "-"),
    ]
    rows = [(name, p, b, _ratio(p, b), target) for name, (p, b), target in figures]
    p99 = (product["latency"]["p99_ms"], base["latency"]["p99_ms"])
    return table(
        f"watcher: {folders} folders, the product beside its baseline of the same run",
        ["figure", "product (multiplexed)", "baseline (thread per folder)", "product / baseline", "target (#47)"],
        rows,
        [
            f"background load: {load.words()}; heartbeat every {product['heartbeat_s']:g} s.",
            f"reply -> stop p99 {_fmt(p99[0])} ms against the baseline's {_fmt(p99[1])} ms: "
            f"{_fmt(ratio(*p99))} x.",
            "per 1,000 folders: the process at its last look before its first connection (product: "
            f"{_fmt(product['watcher_base_rss_mib'])} MiB, Django and the apps it imports) plus "
            "what its connections added, scaled to 1,000 (at 1,000 folders: the peak itself); - when it had "
            "connected at the first look.",
            "the baseline advances no read-through time: its lag is the time since its catch-up polls.",
        ],
    )


def p50_p99(summary: dict[str, Any], scale: float = 1.0) -> str:
    """A summary's "p50 / p99", in milliseconds (scale 1000: seconds); "-" when it has none."""
    p50, p99 = summary["p50_ms"], summary["p99_ms"]
    if p50 is None:
        return "-"
    return f"{_fmt(p50 / scale)} / {_fmt(p99 / scale)}"


def _fmt(value: Any) -> str:
    from proving.bench.stats import fmt

    return fmt(value)


def _ratio(product: Any, base: Any) -> float | str | None:
    """product / baseline of a figure, or of each half of a "p50 / p99" pair."""
    if isinstance(product, str) and isinstance(base, str) and " / " in product and " / " in base:
        halves = [ratio(_number(a), _number(b)) for a, b in zip(product.split(" / "), base.split(" / "), strict=True)]
        return " / ".join(_fmt(h) for h in halves)
    if isinstance(product, int | float) and isinstance(base, int | float):
        return ratio(product, base)
    return None


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else round(ms / 1000, 2)


def _share(views: dict[str, int], *kinds: str) -> str:
    total = sum(views.values())
    return f"{sum(views.get(k, 0) for k in kinds)}/{total}"
