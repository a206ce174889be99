"""Watcher shards: the same N watched IMAP folders over 1, 2, 4 ... real `watch_mailboxes` processes.

For each process count P, on an emptied database: N folders over N ÷ F Dovecot accounts (one mailbox each),
R + N ÷ F enrollments whose step 1 was submitted an hour ago, two `rqworker ingest` processes and P
`manage.py watch_mailboxes` processes started together. They share the folders through watch leases in the
database (inbound.leases). Measured per P:

- all watched: from the start of the processes until every folder's lease is held by one of them, none holds
  more than its share (N ÷ P rounded up), and each holds exactly one IMAP connection per lease it holds (its
  sockets to the server, /proc), all of it holding for STABLE_SECONDS;
- the churn: changes of holder of the leases (their `term`) until then and during a take-over, and the most
  leases seen expired while the process holding them still ran (a late lease round), by phase;
- connections held in total once sharded, and the most seen at any sample while replies arrive and during a
  take-over (more than N: a folder watched twice);
- reply -> stop while sharded: one correlated reply per enrollment APPENDed into a random folder of its
  mailbox (Poisson arrivals), the server's confirmation (bench clock) to `enrollment_stopped` (database clock),
  as `bench watcher` measures it;
- take-over (P > 1): one process is SIGKILLed (it gives nothing up); the time until every lease it held is held
  by a survivor, and until the survivors again hold one connection per folder. Replies APPENDed into the
  killed process's folders right after the kill: their reply -> stop.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from datetime import timedelta
from typing import Any

from django.db.models import Sum

from db.clock import db_now
from inbound.leases import POLL_ROOM
from inbound.models import WatchLease
from proving.bench.imapserver import child_env, dovecot, imap_fields
from proving.bench.procs import Spawned, WorkerPool, spawn
from proving.bench.reply_to_stop import clock_offset_ms
from proving.bench.stats import summary_ms, table
from proving.bench.watcher import (
    IDLE_SECONDS,
    LONG_WAIT,
    PASSWORD,
    dovecot_limits,
    folder_names,
    ingest_drained,
    make_accounts,
    p50_p99,
    push_latencies,
)
from proving.harness import data, mails
from sequences.models import Enrollment, SendJob, TimelineEvent

STABLE_SECONDS = 2.0
SAMPLE_SECONDS = 0.5
AFTER_KILL_REPLIES = 10  # at most; one per mailbox of the killed process


def connections_by_pid(pids: list[int], port: int) -> dict[int, int]:
    """Established TCP connections of each process to 127.0.0.1:PORT (one read of /proc/net/tcp for all)."""
    owner: dict[str, int] = {}
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                owner[target[8:-1]] = pid
    counts = dict.fromkeys(pids, 0)
    with open("/proc/net/tcp") as table_file:
        for line in table_file.readlines()[1:]:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and inode in owner and int(remote.split(":")[1], 16) == port:
                counts[owner[inode]] += 1
    return counts


def leases_by_pid() -> tuple[dict[int, list[tuple[int, str]]], Counter]:
    """The live watch leases (not expired on the database clock) by the pid in their holder (host:pid:space.random),
    and how many expired leases each pid still holds (a renewal that came late: another process may take them)."""
    live: dict[int, list[tuple[int, str]]] = {}
    expired: Counter = Counter()
    now = db_now()
    for holder, mailbox_id, folder, until in WatchLease.objects.exclude(holder="").values_list(
            "holder", "mailbox_id", "folder", "expires_at"):
        pid = int(holder.split(":")[-2])
        if until is not None and until > now:
            live.setdefault(pid, []).append((mailbox_id, folder))
        else:
            expired[pid] += 1
    return live, expired


def lease_takes() -> int:
    """Changes of holder of every watch lease so far (their `term`): one per folder is the least a start takes."""
    return WatchLease.objects.aggregate(n=Sum("term"))["n"] or 0


class Shards:
    """The watcher processes of one run, seen from the database (leases) and from the kernel (sockets)."""

    def __init__(self, watchers: list[Spawned], port: int, folders: int):
        self.watchers = watchers
        self.port = port
        self.folders = folders
        self.max_connections = 0  # the most connections seen in one sample since it was last reset
        self.phase = "start"  # then "sharded", "take-over"
        self.late: Counter = Counter()  # by phase: the most leases seen expired while their process still ran

    def alive(self) -> list[Spawned]:
        return [w for w in self.watchers if w.proc.poll() is None]

    def look(self) -> tuple[dict[int, int], dict[int, list[tuple[int, str]]]]:
        """(connections, leases) by pid of the live watchers; every look counts toward max_connections."""
        pids = [w.proc.pid for w in self.alive()]
        connections = connections_by_pid(pids, self.port)
        leases, expired = leases_by_pid()
        self.max_connections = max(self.max_connections, sum(connections.values()))
        self.late[self.phase] = max(self.late[self.phase], sum(expired[pid] for pid in connections))
        return connections, leases

    def sharded(self) -> bool:
        """Every folder leased to a live watcher, none above its share, one connection per lease held."""
        connections, leases = self.look()
        share = -(-self.folders // max(len(connections), 1))
        held = {pid: len(leases.get(pid, [])) for pid in connections}
        return (sum(held.values()) == self.folders == sum(len(v) for v in leases.values())
                and max(held.values(), default=0) <= share and connections == held)

    def wait_sharded(self, timeout: float) -> float | None:
        """Seconds until sharded() first held for STABLE_SECONDS in a row (from now); None past `timeout`."""
        started = time.monotonic()
        since: float | None = None
        while time.monotonic() - started < timeout:
            if len(self.alive()) < len(self.watchers):  # one died: say so rather than wait
                return None
            if self.sharded():
                since = since if since is not None else time.monotonic()
                if time.monotonic() - since >= STABLE_SECONDS:
                    return since - started
            else:
                since = None
            time.sleep(0.2)
        return None

    def wait(self, seconds: float) -> None:
        """Sleep `seconds`, counting connections every SAMPLE_SECONDS meanwhile."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.look()
            time.sleep(max(min(SAMPLE_SECONDS, left), 0))


def shard_run(ctx, server, *, processes: int, prefix: str, folders: int, per_mailbox: int, replies: int,
              rate: float, lease_seconds: float) -> dict[str, Any]:
    ctx.reset()
    count = max(1, folders // per_mailbox)
    folders = count * per_mailbox
    users = make_accounts(server, prefix, count, per_mailbox)
    boxes = [
        data.mailbox_create(name=f"{prefix}-{i}", address=f"{user}@{prefix}.outreach.test", smtp_port=2,
                            display_name="Sam", daily_cap=10**9,
                            **(imap_fields(server, user) | {"imap_folders": folder_names(per_mailbox)}))
        for i, user in enumerate(users)
    ]
    # R enrollments for the replies while sharded, then one more per mailbox for a reply after the kill.
    jobs = data.followups_create(replies + count, sequences=data.sequences_create(boxes), tag=prefix,
                                 state=SendJob.State.SCHEDULED, due_in=timedelta(days=1))
    ctx.analyze()
    enrollment_of = [j.enrollment_id for j in jobs]
    index_of = {box.pk: i for i, box in enumerate(boxes)}
    # Every folder of an account may be watched: the server's limit (Dovecot's, raised) is named to the watchers
    # as the folders plus the connections they leave to the polls.
    env = child_env(PASSWORD) | {"OUTREACH_IMAP_MAX_CONNECTIONS_PER_ACCOUNT": str(per_mailbox + POLL_ROOM),
                                 "OUTREACH_WATCHER_LEASE_SECONDS": str(lease_seconds)}
    os.environ["OUTREACH_SECRET_BENCH_IMAP"] = PASSWORD  # the pollers (RQ workers) log in as well
    load_start = os.getloadavg()[0]
    takeover: dict[str, Any] = {}
    with WorkerPool(2, "ingest", "fork") as workers:
        started = time.monotonic()
        watchers = [spawn(f"shard-{prefix}-{k}", ["watch_mailboxes", "--idle-seconds", str(IDLE_SECONDS)], env=env)
                    for k in range(processes)]
        shards = Shards(watchers, server.port, folders)
        try:
            settled = shards.wait_sharded(120 + folders * 0.3)
            if settled is None:
                raise RuntimeError(f"{processes} watchers did not share {folders} folders:\n"
                                   + "\n".join(w.log_tail(5) for w in watchers))
            all_watched_s = time.monotonic() - started - STABLE_SECONDS
            takes_to_shard = lease_takes()
            shards.phase = "sharded"
            connections, leases = shards.look()
            per_process = sorted(len(leases.get(pid, [])) for pid in connections)
            held = sum(connections.values())
            drained_s = ingest_drained(600)  # the catch-up poll each opened folder asks for
            shards.max_connections = 0
            offset = clock_offset_ms()
            rng = random.Random(29)
            appended: dict[int, float] = {}
            sent: list[tuple[int, str, float, int]] = []  # (mailbox pk, folder, APPEND sent, enrollment)
            for i in range(replies):
                shards.wait(rng.expovariate(rate))
                folder = rng.choice(folder_names(per_mailbox))
                sent.append((boxes[i % count].pk, folder, time.time(), enrollment_of[i]))
                appended[enrollment_of[i]] = append_reply(server, users[i % count], folder, prefix, i)
            stopped = Enrollment.objects.filter(pk__in=appended, status=Enrollment.Status.STOPPED)
            wait_until = time.monotonic() + 60
            while stopped.count() < len(appended) and time.monotonic() < wait_until:
                shards.wait(0.2)
            max_sharded = shards.max_connections
            if stopped.count() < len(appended):
                for child in (*workers.workers, *watchers):
                    ctx.say(f"{child.name}, last lines: {child.log_tail(5)}")
            if processes > 1:
                takeover = take_over(ctx, server, shards, users=users, prefix=prefix, replies=replies,
                                     index_of=index_of, enrollment_of=enrollment_of, lease_seconds=lease_seconds)
        finally:
            peaks = [w.stop() for w in watchers]
    events = dict(TimelineEvent.objects.filter(kind="enrollment_stopped", enrollment_id__in=enrollment_of)
                  .values_list("enrollment_id", "at"))
    latencies = [events[e].timestamp() - t for e, t in appended.items() if e in events]
    after_kill = takeover.pop("appended", {})
    if takeover:
        takeover["reply_to_stop"] = summary_ms([events[e].timestamp() - t for e, t in after_kill.items()
                                                if e in events])
        takeover["stopped"] = sum(1 for e in after_kill if e in events)
    pushes = push_latencies(sent, events)
    return {
        "processes": processes,
        "folders": folders,
        "mailboxes": count,
        "folders_per_mailbox": per_mailbox,
        "lease_seconds": lease_seconds,
        "all_watched_s": round(all_watched_s, 2),
        "connections_held": held,
        "lease_takes_to_shard": takes_to_shard,
        "late_leases": {phase: shards.late.get(phase) for phase in ("start", "sharded", "take-over")},
        "folders_per_process": per_process,
        "max_connections_while_replies": max_sharded,
        "watched_twice": max(0, max_sharded - folders, takeover.get("max_connections", 0) - folders),
        "catch_up_drained": drained_s is not None,
        "catch_up_drained_s": None if drained_s is None else round(drained_s, 1),
        "watcher_peak_rss_mib": round(max(peaks) / 1024, 1),
        "replies": replies,
        "stopped": len(latencies),
        "latency": summary_ms(latencies),
        "push_to_enqueue": summary_ms(pushes.to_enqueue),
        "poll_queue_wait": summary_ms(pushes.queue_wait),
        "poll_run": summary_ms(pushes.run),
        "long_waits_by_polls_running": pushes.long_waits,
        "pushes_merged": pushes.merged,
        "clock_offset_ms": offset,
        "takeover": takeover or None,
        "loadavg_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
    }


def append_reply(server, user: str, folder: str, prefix: str, i: int) -> float:
    """APPEND enrollment i's reply; the time the server confirmed it (bench clock)."""
    raw = mails.bench_reply(sender=f"p{i}.{prefix}@prospects.test", to_message_id=data.first_message_id(prefix, i))
    with server.client(user) as client:
        client.append(folder, raw)
    return time.time()


def take_over(ctx, server, shards: Shards, *, users: list[str], prefix: str, replies: int, index_of: dict[int, int],
              enrollment_of: list[int], lease_seconds: float) -> dict[str, Any]:
    """SIGKILL the first watcher; replies into a few of its folders; the time until its leases, then its
    connections, are a survivor's."""
    victim = shards.watchers[0]
    theirs = sorted(leases_by_pid()[0].get(victim.proc.pid, []))
    count = len(users)
    shards.max_connections = 0
    takes = lease_takes()
    shards.phase = "take-over"
    victim.proc.kill()
    killed = time.monotonic()
    victim.proc.wait()
    appended: dict[int, float] = {}
    for mailbox_id, folder in sorted({m: (m, f) for m, f in theirs}.values())[:AFTER_KILL_REPLIES]:
        m = index_of[mailbox_id]
        i = replies + (m - replies) % count  # the spare enrollment of mailbox m (enrollment i is on i % count)
        appended[enrollment_of[i]] = append_reply(server, users[m], folder, prefix, i)
    leases_moved = watched_again = None
    deadline = killed + 3 * lease_seconds + 120 + shards.folders * 0.3
    wanted = set(theirs)
    while time.monotonic() < deadline and watched_again is None:
        connections, leases = shards.look()
        now = time.monotonic() - killed
        survivors = {key for pid in connections for key in leases.get(pid, [])}
        if leases_moved is None and wanted <= survivors:
            leases_moved = now
        if leases_moved is not None and sum(connections.values()) == shards.folders and connections == {
                pid: len(leases.get(pid, [])) for pid in connections}:
            watched_again = now
            takes = lease_takes() - takes
        time.sleep(0.2)
    if watched_again is None:
        ctx.say(f"take-over not complete after {deadline - killed:.0f}s: "
                + "; ".join(w.log_tail(3) for w in shards.alive()))
    stopped = Enrollment.objects.filter(pk__in=appended, status=Enrollment.Status.STOPPED)
    wait_until = time.monotonic() + 120
    while stopped.count() < len(appended) and time.monotonic() < wait_until:
        shards.wait(0.2)
    connections, leases = shards.look()
    return {
        "killed_folders": len(theirs),
        "leases_taken_s": None if leases_moved is None else round(leases_moved, 2),
        "watched_again_s": None if watched_again is None else round(watched_again, 2),
        "lease_takes": takes if watched_again is not None else None,
        "max_connections": shards.max_connections,
        "connections_after": sum(connections.values()),
        "folders_per_survivor": sorted(len(leases.get(pid, [])) for pid in connections),
        "replies_after_kill": len(appended),
        "appended": appended,
    }


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    folders, per_mailbox = o["folders"], min(o["shard_folders_per_mailbox"], o["folders"])
    runs = []
    # Room for every folder twice: a take-over briefly overlapping the dead process's connections shows as such.
    with dovecot(ctx, {}, dovecot_limits(2 * folders, per_mailbox)) as server:
        for processes in o["processes"]:
            ctx.say(f"watcher shards: {folders} folders ({per_mailbox} per mailbox) over {processes} watcher "
                    f"processes, {o['replies']} replies at {o['watch_reply_rate']}/s")
            runs.append(shard_run(ctx, server, processes=processes, prefix=f"s{processes}", folders=folders,
                                  per_mailbox=per_mailbox, replies=o["replies"], rate=o["watch_reply_rate"],
                                  lease_seconds=o["watch_lease_seconds"]))
    rows = [
        (
            r["processes"],
            r["folders"],
            r["all_watched_s"],
            r["connections_held"],
            "-".join(str(n) for n in sorted({min(r["folders_per_process"]), max(r["folders_per_process"])})),
            r["watched_twice"],
            f"{r['lease_takes_to_shard']} / {(r['takeover'] or {}).get('lease_takes') or '-'}",
            " / ".join("-" if n is None else str(n) for n in r["late_leases"].values()),
            f"{r['stopped']}/{r['replies']}",
            _seconds(r["latency"]["p50_ms"]),
            _seconds(r["latency"]["p99_ms"]),
            (r["takeover"] or {}).get("killed_folders"),
            (r["takeover"] or {}).get("leases_taken_s"),
            (r["takeover"] or {}).get("watched_again_s"),
            _seconds(((r["takeover"] or {}).get("reply_to_stop") or {}).get("max_ms")),
            r["watcher_peak_rss_mib"],
            " / ".join(f"{x:.1f}" for x in r["loadavg_1m"]),
        )
        for r in runs
    ]
    lease = o["watch_lease_seconds"]
    text = table(
        f"watcher shards: {folders} folders over several watch_mailboxes processes",
        ["processes", "folders", "all watched s", "connections", "folders per process", "watched twice",
         "lease takes start / take-over",
         "late leases start / sharded / take-over", "stopped", "stop p50 s", "stop p99 s",
         "killed folders", "leases taken s", "watched again s",
         "stop after kill max s", "peak RSS MiB", "load 1m start / end"],
        rows,
        [
            f"real Dovecot on loopback; {per_mailbox} folders per mailbox, one Dovecot account each; the watchers "
            "enqueue polls on the ingest queue, two of the product's RQ workers poll "
            "(outreach.worker: the classifier loaded at its start, each poll run in the worker process, as scripts/run "
            "runs it).",
            "all watched: from starting the processes together until every folder's lease is held by one of them, "
            f"none above its share, each with one connection per lease, for {STABLE_SECONDS:g} s; connections: "
            "the processes' sockets to the server then.",
            "watched twice: connections beyond one per folder at any sample (every 0.5 s) while replies arrived "
            "and during the take-over. lease takes: changes of holder until all watched, and from the kill until "
            "watched again (one per folder, and one per killed folder, are the least); late leases: the most "
            "leases seen expired while their process still ran (its round came late: another may take and watch "
            "them too), until all watched, then while sharded, then from the kill on.",
            f"stop: APPEND into a random folder of the enrollment's mailbox -> enrollment_stopped, replies at "
            f"{o['watch_reply_rate']:g}/s (Poisson) once the catch-up polls were done. Clock offset db-bench: "
            f"{', '.join(str(r['clock_offset_ms']) for r in runs)} ms.",
            f"take-over: SIGKILL of one process (leases of {lease:g} s, renewed every {lease / 3:g} s): until "
            "each of its leases is a survivor's, and until the survivors hold one connection per folder again; "
            "stop after kill: replies APPENDed into its folders right after the kill.",
            "where a stop's time goes, p50 / p99 ms per process count: APPEND -> poll enqueued "
            + "; ".join(f"{r['processes']}: {p50_p99(r['push_to_enqueue'])}" for r in runs)
            + ", the poll's wait in the queue " + "; ".join(f"{r['processes']}: {p50_p99(r['poll_queue_wait'])}"
                                                            for r in runs)
            + ", its run in a poller " + "; ".join(f"{r['processes']}: {p50_p99(r['poll_run'])}" for r in runs)
            + f"; waits over {LONG_WAIT:g} s by the most polls running meanwhile (2 pollers) "
            + "; ".join(f"{r['processes']}: {r['long_waits_by_polls_running'] or '-'}" for r in runs) + ".",
            "peak RSS: the largest watcher process' VmHWM.",
        ],
    )
    return {"runs": runs, "tables": [text]}


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else round(ms / 1000, 2)


