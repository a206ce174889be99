"""Scale: 10^6 scheduled jobs in the table; the dispatcher's due-batch selection, enqueue rate, and peak memory.

Everything is measured twice in the same run: first with a small table
(--small-jobs, the baseline), then with the big one (--jobs). For each size,
on a fresh database:

1. Bulk insert (generate_series): N contacts, N enrollments over 16 mailboxes,
   N step-1 jobs `scheduled`: D of them due (in the last hour; D is the same
   for both sizes, enough for every dispatcher pass), the rest spread over
   the next 30 days -- so the sizes differ only in the backlog of future
   jobs. VACUUM ANALYZE.
2. One real dispatch_due() pass is run with its SQL captured (its
   jobs are put back to `scheduled` after, except 100 used in step 3); the
   captured SELECT ... FOR NO KEY UPDATE SKIP LOCKED (the due-batch
   selection, LIMIT = OUTREACH_DISPATCH_BATCH) is EXPLAIN ANALYZEd (is the
   partial index sendjob_due_idx used?) and then re-run K times, each in a
   transaction rolled back: p50/p99.
3. send_job_authorize timed in-process on jobs of that pass (claimed first).
4. A child process runs P passes of the product's dispatcher task
   (sequences.tasks.dispatch: lease sweep, due selection, queued, enqueue to
   RQ): per-pass p50/p99, jobs enqueued per second, its peak RSS.
5. W `rqworker send` processes run the product's send task on what was
   enqueued for a fixed window: sends/s and peak RSS.
6. The product's IMAP poller (child process, mailbox_poll) ingests a backlog
   of replies/bounces correlated to jobs in the table: messages/s, peak RSS.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_rq import get_connection

from db.clock import db_now
from proving.bench.imapserver import child_env, dovecot, first_select, imap_fields, write_maildir
from proving.bench.procs import WorkerPool, run_child
from proving.bench.stats import ratio, redis_summary_ms, summary_ms, table
from proving.bench.tasks import samples_key, send_key
from proving.harness import data, mails
from proving.harness.smtp import SmtpServer
from sequences.models import Contact, Enrollment, SendJob
from sequences.services.sending import dispatch_due, send_job_authorize, send_job_claim

S = SendJob.State


def bulk_insert(size: int, due: int, sequences) -> dict[str, float]:
    """Contacts, enrollments and step-1 jobs in three INSERT ... SELECT statements ('%%': they take parameters)."""
    seq_ids = "ARRAY[" + ",".join(str(s.pk) for s in sequences) + "]::bigint[]"
    timings = {}
    started = time.perf_counter()
    data.insert_select(Contact, {"email": "'p' || g || '@scale.test'", "first_name": "'Ada'", "company": "'Acme'",
                                 "created_at": "now()"}, "generate_series(1, %s) g", (size,))
    data.insert_select(Enrollment, {"sequence_id": f"({seq_ids})[1 + c.id %% {len(sequences)}]",
                                    "contact_id": "c.id", "status": "'active'", "created_at": "now()"},
                       "sequences_contact c WHERE c.email LIKE '%%@scale.test'")
    data.insert_select(SendJob, {
        "enrollment_id": "e.id", "step_id": "st.id", "state": "'scheduled'",
        # Due jobs are spread through the table (every k-th enrollment), not clustered at its start.
        "scheduled_at": f"CASE WHEN e.id %% {max(1, size // due)} = 0 AND e.id <= {max(1, size // due) * due} "
                        "THEN now() - ((e.id * 7919) %% 3600) * interval '1 second' "
                        "ELSE now() + (3600 + (e.id * 7919) %% 2592000) * interval '1 second' END",
        "message_id": "'<scale.' || e.id || '.1@outreach.test>'",
    }, "sequences_enrollment e JOIN sequences_step st ON st.sequence_id = e.sequence_id AND st.position = 1")
    timings["insert_s"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    timings["vacuum_analyze_s"] = round(time.perf_counter() - started, 1)
    return timings


def capture_selection(keep: int) -> tuple[str, list[int], int]:
    """Run one real dispatch_due pass; return its due-batch SELECT, *keep* of the ids it queued, its query count.

    The other jobs it queued go back to `scheduled` (bench data, a direct update): the timed re-runs
    and the dispatcher passes then see the same due set.
    """
    connection.queries_log.clear()  # a full log (9,000 entries) would make the capture come back empty
    with CaptureQueriesContext(connection) as captured:
        ids = dispatch_due()
    SendJob.objects.filter(pk__in=ids[keep:]).update(state=S.SCHEDULED, queued_at=None)
    selects = [q["sql"] for q in captured.captured_queries if "SKIP LOCKED" in q["sql"]]
    if not selects:
        raise RuntimeError("dispatch_due ran no SELECT ... SKIP LOCKED")
    return selects[0], ids[:keep], len(captured.captured_queries)


def explain(sql: str) -> dict[str, Any]:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
            plan = cursor.fetchone()[0]
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql)
            text = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    plan = plan if isinstance(plan, list) else json.loads(plan)
    indexes = sorted(set(_index_names(plan[0]["Plan"])))
    return {"indexes": indexes, "uses_sendjob_due_idx": "sendjob_due_idx" in indexes,
            "execution_ms": plan[0].get("Execution Time"), "plan": text}


def _index_names(node: dict) -> list[str]:
    names = [node["Index Name"]] if "Index Name" in node else []
    for child in node.get("Plans", []):
        names += _index_names(child)
    return names


def time_selection(sql: str, repeats: int) -> dict[str, Any]:
    samples = []
    rows = 0
    for _ in range(repeats):
        with transaction.atomic():
            with connection.cursor() as cursor:
                started = time.perf_counter()
                cursor.execute(sql)
                rows = len(cursor.fetchall())
                samples.append(time.perf_counter() - started)
            transaction.set_rollback(True)
    return summary_ms(samples) | {"rows": rows}


def time_authorize(job_ids: list[int]) -> dict[str, Any]:
    """send_job_authorize on claimed jobs, one at a time; the last call's statements are EXPLAINed."""
    samples = []
    outcomes: dict[str, int] = {}
    statements: list[str] = []
    for n, job_id in enumerate(job_ids):
        job = send_job_claim(job_id=job_id, worker_id="bench-scale")
        if job is None:
            continue
        connection.queries_log.clear()
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            decision = send_job_authorize(job_id=job_id, worker_id="bench-scale", version=job.version)
            samples.append(time.perf_counter() - started)
        if n == len(job_ids) - 1:
            statements = [q["sql"] for q in captured.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")]
        outcomes[decision.outcome] = outcomes.get(decision.outcome, 0) + 1
    return summary_ms(samples) | {"outcomes": outcomes, "slowest_statements": explain_each(statements)[:3]}


def explain_each(statements: list[str]) -> list[dict[str, Any]]:
    """EXPLAIN ANALYZE each statement (rolled back), slowest first, flagging sequential scans."""
    out = []
    for sql in statements:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
                plan = cursor.fetchone()[0]
            transaction.set_rollback(True)
        plan = plan if isinstance(plan, list) else json.loads(plan)
        out.append({"ms": plan[0].get("Execution Time"), "seq_scans": sorted(set(_seq_scans(plan[0]["Plan"]))),
                    "sql": sql[:300]})
    return sorted(out, key=lambda x: -(x["ms"] or 0))


def _seq_scans(node: dict) -> list[str]:
    names = [node.get("Relation Name", "?")] if node.get("Node Type") == "Seq Scan" else []
    for child in node.get("Plans", []):
        names += _seq_scans(child)
    return names


def send_window(sink: SmtpServer, workers: int, seconds: float) -> dict[str, Any]:
    """W workers run what the dispatcher enqueued for a fixed window; each authorize is timed in its worker."""
    sink.reset(data_delay=0)
    redis = get_connection("send")
    redis.delete(samples_key("guarded"), send_key("guarded"))
    with WorkerPool(workers, "send", "simple", job_class="proving.bench.tasks.TimedSendJob") as pool:
        started = time.perf_counter()
        time.sleep(seconds)
        sent = sink.count
        elapsed = time.perf_counter() - started
        maxrss = pool.stop()
    authorize = redis_summary_ms(redis, samples_key("guarded"))
    return {"workers": workers, "seconds": round(elapsed, 1), "sent": sent, "sends_per_s": round(sent / elapsed, 1),
            "worker_maxrss_mib": round(max(maxrss) / 1024, 1), "authorize_in_workers": authorize}


def poll_backlog(ctx, server, user: str, count: int) -> dict[str, Any]:
    (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag=f"scalepoll{user}", **imap_fields(server, user))
    wanted = int(count * mails.correlated_share()) + 1
    # Jobs not due for an hour or more: the dispatcher and the workers of this run never touch them.
    rows = list(SendJob.objects.filter(state=S.SCHEDULED, scheduled_at__gt=db_now() + timedelta(minutes=30))
                .order_by("pk").values_list("enrollment__contact__email", "message_id")[:wanted])
    prospects = [mails.Prospect(email, message_id) for email, message_id in rows]
    write_maildir(server, user, (raw for _kind, raw in mails.backlog(count, prospects, seed=13)))
    first_select(server, user)
    answer, maxrss = run_child(f"scale-poll-{user}", ["ingest", "--mailbox-id", str(mailbox.pk)], 600 + count,
                               env=child_env(user + "pw"))
    stopped = Enrollment.objects.filter(status=Enrollment.Status.STOPPED).count()
    return {"messages": answer["messages"], "seconds": round(answer["seconds"], 2),
            "messages_per_s": round(answer["messages"] / answer["seconds"], 1), "maxrss_mib": round(maxrss / 1024, 1),
            "enrollments_stopped": stopped, "error": answer["error"]}


def size_run(ctx, sink: SmtpServer, server, *, size: int, user: str) -> dict[str, Any]:
    o = ctx.options
    ctx.reset()
    ctx.say(f"scale: inserting {size:,} scheduled jobs")
    sequences = data.sequences_create(data.mailboxes_create(o["scale_mailboxes"], smtp_port=sink.port, tag="scale"))
    due = min(size, (o["dispatch_passes"] + 2) * settings.OUTREACH_DISPATCH_BATCH)
    out: dict[str, Any] = {"jobs": size, "mailboxes": len(sequences)}
    out |= bulk_insert(size, due, sequences)
    out["due"] = SendJob.objects.filter(state=S.SCHEDULED, scheduled_at__lte=db_now()).count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size('sequences_sendjob')")
        out["sendjob_table_and_indexes_mib"] = round(cursor.fetchone()[0] / 2**20, 1)
    ctx.say(f"scale: {size:,} jobs inserted in {out['insert_s']}s; selection")
    sql, queued_ids, queries = capture_selection(keep=100)
    out["dispatch_due_queries"] = queries
    out["selection_sql"] = sql
    out["explain"] = explain(sql)
    out["selection"] = time_selection(sql, 50 if ctx.quick else 200)
    out["authorize"] = time_authorize(queued_ids)
    passes = o["dispatch_passes"]
    ctx.say(f"scale: {passes} dispatcher passes in a child process")
    answer, maxrss = run_child(f"dispatch-{size}", ["dispatch", "--passes", str(passes)], 600 + passes * 60)
    times = [p["seconds"] for p in answer["passes"]]
    queued = sum(p["queued"] for p in answer["passes"])
    out["dispatch"] = summary_ms(times) | {"passes": len(times), "queued": queued,
                                            "dispatch_due_share": round(sum(p["dispatch_due_s"] for p in
                                                                            answer["passes"]) / sum(times), 2)
                                            if times else None,
                                            "enqueue_share": round(sum(p["enqueue_s"] for p in answer["passes"])
                                                                   / sum(times), 2) if times else None,
                                            "enqueued_per_s": round(queued / sum(times), 1) if times else None,
                                            "maxrss_mib": round(maxrss / 1024, 1),
                                            "rss_start_mib": round(answer["rss_start_kib"] / 1024, 1)}
    window = 15.0 if ctx.quick else 60.0
    ctx.say(f"scale: {o['scale_workers']} workers sending for {window:.0f}s")
    out["send"] = send_window(sink, o["scale_workers"], window)
    if server is not None:
        ctx.say(f"scale: IMAP poller on a {o['scale_backlog']}-message backlog")
        out["poller"] = poll_backlog(ctx, server, user, o["scale_backlog"])
    return out


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    sizes = [("small", o["small_jobs"]), ("big", o["jobs"])]
    runs: dict[str, Any] = {}
    with SmtpServer(keep_messages=False) as sink:
        try:
            server_cm = dovecot(ctx, {"small": "smallpw", "big": "bigpw"})
            server = server_cm.__enter__()
        except RuntimeError as exc:
            ctx.say(f"scale: no IMAP poller measurement ({exc})")
            server_cm, server = None, None
        try:
            for label, size in sizes:
                runs[label] = size_run(ctx, sink, server, size=size, user=label)
        finally:
            if server_cm is not None:
                server_cm.__exit__(None, None, None)
    small, big = runs["small"], runs["big"]

    def pair(label, path, unit_key, digits=2):
        a, b = _dig(small, path), _dig(big, path)
        return (label, a.get(unit_key) if isinstance(a, dict) else a, b.get(unit_key) if isinstance(b, dict) else b,
                ratio(b.get(unit_key) if isinstance(b, dict) else b, a.get(unit_key) if isinstance(a, dict) else a,
                      digits))

    rows = [
        ("scheduled jobs in sendjob", small["jobs"], big["jobs"], None),
        ("  over mailboxes (one sequence each)", small["mailboxes"], big["mailboxes"], None),
        ("  of which due now", small["due"], big["due"], None),
        ("sendjob table + indexes, MiB", small["sendjob_table_and_indexes_mib"],
         big["sendjob_table_and_indexes_mib"], None),
        ("bulk insert, s", small["insert_s"], big["insert_s"], None),
        pair("due-batch selection p50, ms", "selection", "p50_ms"),
        pair("due-batch selection p99, ms", "selection", "p99_ms"),
        ("  rows per batch / uses sendjob_due_idx", f"{small['selection']['rows']} / "
         f"{_yes(small['explain']['uses_sendjob_due_idx'])}",
         f"{big['selection']['rows']} / {_yes(big['explain']['uses_sendjob_due_idx'])}", None),
        pair("dispatcher pass p50, ms", "dispatch", "p50_ms"),
        pair("dispatcher pass p99, ms", "dispatch", "p99_ms"),
        ("  time share: dispatch_due / RQ enqueue", _shares(small), _shares(big), None),
        pair("enqueue rate, jobs/s", "dispatch", "enqueued_per_s"),
        pair("send_job_authorize p50, ms", "authorize", "p50_ms"),
        pair("send_job_authorize p99, ms", "authorize", "p99_ms"),
        ("  its slowest SELECT, ms (seq scans)", _slowest(small), _slowest(big), None),
        pair(f"sends/s ({o['scale_workers']} workers)", "send", "sends_per_s"),
        (f"send_job_authorize in {o['scale_workers']} workers p50, ms", _auth(small, "p50_ms"), _auth(big, "p50_ms"),
         ratio(_auth(big, "p50_ms"), _auth(small, "p50_ms"))),
        (f"send_job_authorize in {o['scale_workers']} workers p99, ms", _auth(small, "p99_ms"), _auth(big, "p99_ms"),
         ratio(_auth(big, "p99_ms"), _auth(small, "p99_ms"))),
        pair("dispatcher peak RSS, MiB", "dispatch", "maxrss_mib"),
        pair("worker peak RSS, MiB", "send", "worker_maxrss_mib"),
    ]
    if "poller" in big:
        rows += [pair("IMAP poller messages/s", "poller", "messages_per_s"),
                 pair("IMAP poller peak RSS, MiB", "poller", "maxrss_mib")]
    text = table(
        f"scale: {small['jobs']:,} vs {big['jobs']:,} scheduled jobs",
        ["measure", f"{small['jobs']:,} jobs", f"{big['jobs']:,} jobs", "big ÷ small"],
        rows,
        [f"selection = the SELECT ... FOR NO KEY UPDATE SKIP LOCKED of dispatch_due (LIMIT "
         f"{settings.OUTREACH_DISPATCH_BATCH}), captured from a real pass and re-run in rolled-back transactions.",
         f"indexes in the big table's plan: {', '.join(big['explain']['indexes']) or 'none (sequential scan)'}; "
         f"plan: {' / '.join(line.strip() for line in big['explain']['plan'][:4])}",
         "dispatcher pass = sequences.tasks.dispatch (lease sweep + due batch + stale re-enqueue + RQ enqueue) in "
         f"a child process; {big['dispatch']['passes']} passes on the big table.",
         "sends: the product's send task (sequences.tasks.send_job) in rq SimpleWorker processes, for a fixed "
         "window, on what the dispatcher enqueued; 'send_job_authorize p50/p99' timed in the bench process, one job "
         "at a time; 'in W workers': the same call timed inside each worker while all W send "
         "(proving.bench.tasks.TimedSendJob).",
         "poller: inbound.ingest.mailbox_poll in a child process; replies/bounces correlate to jobs of the table "
         "(mix as in the ingest suite)."])
    return {"runs": runs, "tables": [text]}


def _auth(run: dict[str, Any], key: str) -> Any:
    return run["send"].get("authorize_in_workers", {}).get(key)


def _shares(run: dict[str, Any]) -> str:
    d = run["dispatch"]
    return f"{d.get('dispatch_due_share')} / {d.get('enqueue_share')}"


def _slowest(run: dict[str, Any]) -> str:
    statements = run["authorize"].get("slowest_statements") or [{}]
    top = statements[0]
    return f"{top.get('ms')} ({', '.join(top.get('seq_scans', [])) or 'none'})"


def _dig(run: dict[str, Any], key: str) -> Any:
    return run.get(key, {})


def _yes(value: bool) -> str:
    return "yes" if value else "NO"

