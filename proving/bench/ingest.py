"""Ingestion throughput and peak memory on a backlog, next to a bare imapclient fetch of the same backlog.

A backlog of M messages (the mix in proving.harness.mails: 20% correlated human
replies, 3% hard-bounce DSNs, 5% out-of-office, 2% unsubscribe requests, 70%
newsletters) is written into a Dovecot account's Maildir; the first SELECT
lets Dovecot index it (timed apart). Then, each in a child process that
reports its own peak RSS (VmHWM):

- ceiling: a bare imapclient session fetching every message with the
  poller's items (BODY.PEEK[], INTERNALDATE, RFC822.SIZE, FLAGS), 200 per batch,
  keeping nothing;
- parse:   the same fetch plus inbound.ingest.parse (parse + classify) of each message, no DB,
           over the first PARSE_SAMPLE messages (the mix repeats every 100);
- ingest:  one pass of the product's mailbox_poll, 200 per batch: sizes and headers first, the
  body only of mail whose header ties it to us or marks it machine-generated (classified,
  correlated, one transaction each with its effects); the rest as metadata-only rows, one
  transaction per batch with the cursor.

Then the same two readers (bare fetch, product) over a second account holding only the
unrelated share of the mix (newsletters): the metadata-only path on its own.
"""

from __future__ import annotations

import os
import random
import statistics
from collections import Counter, defaultdict
from datetime import timedelta
from typing import Any

from django.db import connection
from django.utils import timezone

from db.clock import db_now
from inbound.ingest.correlate import ties_in_headers
from inbound.ingest.parse import parse_headers
from inbound.ingest.record import inbound_record, recorded_for
from inbound.models import InboundMessage
from mailboxes.imap.fetch import FetchedMessage
from mailboxes.models import ImapCursor
from proving.bench.cpu import ServerCpu, postmaster_pid
from proving.bench.imapserver import child_env, dovecot, first_select, imap_fields, write_maildir
from proving.bench.procs import run_child
from proving.bench.stats import StatementCounter, ratio, table
from proving.harness import data, mails
from sequences.models import Enrollment, SendJob, Suppression

PARSE_SAMPLE = 5000
PASSWORD = "backlogpw"


def statements_by_kind() -> dict[str, dict[str, Any]]:
    """Statements each message of the mix that acts sends (COMMIT aside), by kind: counted in this process on
    `inbound_record` called as the poller calls it (the batch's reads of its header ties and of what the
    folder holds made beforehand, once per batch). Needs an empty database."""
    (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag="count", imap_host="127.0.0.1", imap_port=1,
                                       imap_username="count", imap_password_env="OUTREACH_SECRET_COUNT")
    share = sum(n for kind, n in mails.MIX if kind != "unrelated")
    data.followups_create(share, sequences=data.sequences_create([mailbox]), tag="count",
                          state=SendJob.State.SCHEDULED, due_in=timedelta(days=1))
    prospects = [mails.Prospect(f"p{i}.count@prospects.test", data.first_message_id("count", i)) for i in range(share)]
    acting = [(kind, raw) for kind, raw in mails.backlog(100, prospects) if kind != "unrelated"]
    ImapCursor.objects.create(mailbox=mailbox, folder="INBOX", uidvalidity=1, last_uid=0)
    fetched = [FetchedMessage(uid=i, internaldate=timezone.now(), raw=raw, size=len(raw), flags=())
               for i, (_, raw) in enumerate(acting, start=1)]
    parsed = {f.uid: parse_headers(f.raw) for f in fetched}
    ties = ties_in_headers(parsed)
    recorded = recorded_for(mailbox, "INBOX", 1, list(parsed), [p.message_id for p in parsed.values()])
    counts: dict[str, list[int]] = defaultdict(list)
    for (kind, _), message in zip(acting, fetched, strict=True):
        counter = StatementCounter()
        with connection.execute_wrapper(counter):
            inbound_record(mailbox_id=mailbox.pk, folder="INBOX", uidvalidity=1, fetched=message, mailbox=mailbox,
                           known=ties.ours, looked_up=ties.looked_up, recorded=recorded)
        counts[kind].append(len(counter.sql))
    return {kind: {"messages": len(n), "statements_median": statistics.median(n), "statements_max": max(n)}
            for kind, n in counts.items()}


def run(ctx) -> dict[str, Any]:
    o = ctx.options
    count = o["messages"]
    ctx.reset()
    counted = statements_by_kind()
    ctx.say("ingest: statements per message that acts: " + ", ".join(
        f"{kind} {c['statements_median']:g}" for kind, c in counted.items()))
    ctx.reset()
    with dovecot(ctx, {"backlog": PASSWORD, "quiet": PASSWORD}) as server:
        (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag="ingest", **imap_fields(server, "backlog"))
        prospects_needed = int(count * mails.correlated_share()) + 1
        ctx.say(f"ingest: {prospects_needed} enrollments, {count} messages into the Maildir")
        jobs = data.followups_create(prospects_needed, sequences=data.sequences_create([mailbox]), tag="ing",
                                     state=SendJob.State.SCHEDULED, due_in=timedelta(days=1))
        # Step 1 left before the oldest message of the backlog arrived (one a second), so every answer has evidence.
        SendJob.objects.filter(submitted_at__isnull=False).update(
            submitted_at=db_now() - timedelta(seconds=count + 3600))
        ctx.analyze()
        prospects = [mails.Prospect(f"p{i}.ing@prospects.test", data.first_message_id("ing", i))
                     for i in range(len(jobs))]
        kinds: Counter = Counter()

        def generate():
            for kind, raw in mails.backlog(count, prospects):
                kinds[kind] += 1
                yield raw

        write_maildir(server, "backlog", generate())
        exists, index_seconds = first_select(server, "backlog")
        ctx.say(f"ingest: Dovecot indexed {exists} messages in {index_seconds:.1f}s; bare fetch")
        timeout = 600 + count * 0.5
        postgres = postmaster_pid(connection)
        with ServerCpu(dovecot=server.master_pid) as bare_cpu:
            bare, bare_rss = run_child("imapfetch", ["imapfetch", "--host", server.host, "--port",
                                                     str(server.port), "--user", "backlog", "--password",
                                                     "backlogpw"], timeout)
        sample = min(count, PARSE_SAMPLE)
        ctx.say(f"ingest: fetch + parse/classify of the first {sample} messages")
        parsed, parse_rss = run_child("parsefetch", ["parsefetch", "--host", server.host, "--port", str(server.port),
                                                     "--user", "backlog", "--password", "backlogpw",
                                                     "--limit", str(sample)], timeout)
        ctx.say("ingest: mailbox_poll")
        with ServerCpu(dovecot=server.master_pid, postgres=postgres) as poll_cpu:
            polled, poll_rss = run_child("ingest", ["ingest", "--mailbox-id", str(mailbox.pk)], timeout,
                                         env=child_env(PASSWORD))
        quiet = _unrelated_only(ctx, server, int(count * (1 - mails.correlated_share())), timeout)
    inbound = InboundMessage.objects.filter(mailbox=mailbox)
    recorded = Counter(inbound.values_list("kind", flat=True))
    stopped = Enrollment.objects.filter(status=Enrollment.Status.STOPPED).count()
    suppressed = Suppression.objects.count()
    result = {
        "messages": count,
        "mix": dict(kinds),
        "bytes": bare["bytes"],
        "dovecot_first_select_s": round(index_seconds, 2),
        "bare_fetch": _reader(bare, bare_rss),
        "fetch_parse": _reader(parsed, parse_rss),
        "ingest": _reader(polled, poll_rss) | {
            "error": polled["error"], "bodies_fetched": polled["stats"]["bodies"],
            "acting_seconds": round(polled["stats"]["acting_seconds"], 2),
            "acting_cpu_seconds": round(polled["stats"]["acting_cpu_seconds"], 2)},
        "cpu_s": {"bare_fetch": {"client": round(bare["cpu_s"], 2), **bare_cpu.spent},
                  "ingest": {"poller": round(polled["cpu_s"], 2), **poll_cpu.spent}},
        "recorded_by_kind": dict(recorded),
        "stored_full": inbound.filter(content=InboundMessage.Content.FULL).count(),
        "stored_metadata_only": inbound.filter(content=InboundMessage.Content.METADATA).count(),
        "unrelated_only": quiet,
        "enrollments_stopped": stopped,
        "suppressions": suppressed,
        "statements_by_kind": counted,
    }
    b, p, i, q = result["bare_fetch"], result["fetch_parse"], result["ingest"], result["unrelated_only"]
    result["product_fraction_of_bare"] = round(i["messages_per_s"] / b["messages_per_s"], 3)
    result["cpu_bound"] = cpu_bound(result)
    rows = [
        ("bare imapclient fetch (ceiling)", b["messages"], b["seconds"], b["messages_per_s"], b["rss_start_mib"],
         b["maxrss_mib"]),
        ("fetch + parse/classify, no DB", p["messages"], p["seconds"], p["messages_per_s"], p["rss_start_mib"],
         p["maxrss_mib"]),
        ("mailbox_poll (product)", i["messages"], i["seconds"], i["messages_per_s"], i["rss_start_mib"],
         i["maxrss_mib"]),
        ("unrelated only: bare fetch", q["bare_fetch"]["messages"], q["bare_fetch"]["seconds"],
         q["bare_fetch"]["messages_per_s"], q["bare_fetch"]["rss_start_mib"], q["bare_fetch"]["maxrss_mib"]),
        ("unrelated only: mailbox_poll", q["ingest"]["messages"], q["ingest"]["seconds"],
         q["ingest"]["messages_per_s"], q["ingest"]["rss_start_mib"], q["ingest"]["maxrss_mib"]),
    ]
    acting = i["bodies_fetched"] or 0
    text = table(
        f"ingest: a {count:,}-message backlog ({result['bytes'] / 1e6:.0f} MB) in Dovecot",
        ["reader", "messages", "seconds", "messages/s", "RSS at start MiB", "peak RSS MiB"],
        rows,
        [f"product ÷ ceiling throughput: {ratio(i['messages_per_s'], b['messages_per_s'], 3)}; "
         f"Dovecot's first SELECT (indexing the Maildir) took {index_seconds:.1f}s, before both runs.",
         f"the product read {acting:,} bodies (the header left them open) and spent {i['acting_seconds']}s of its "
         f"{i['seconds']}s classifying and committing them, one transaction each with its effects; "
         f"{i['messages'] - acting:,} messages needed their header only. Stored in full: {result['stored_full']:,}; "
         f"metadata only: {result['stored_metadata_only']:,}.",
         f"unrelated only (newsletters, {q['messages']:,}): product ÷ bare fetch "
         f"{ratio(q['ingest']['messages_per_s'], q['bare_fetch']['messages_per_s'], 3)}.",
         f"mix: {dict(kinds)}; recorded: {dict(recorded)}; enrollments stopped: {stopped}; suppressions: "
         f"{suppressed}.",
         "statements per message that acts, COMMIT aside (median, max; counted with execute_wrapper around "
         "inbound_record as the poller calls it, on the 30 messages that act in 100 of the mix): "
         + ", ".join(f"{kind} {c['statements_median']:g}, {c['statements_max']}" for kind, c in counted.items())
         + ".",
         "each reader is a child process reporting its own peak RSS (VmHWM) and its RSS after imports "
         f"(Django set up for the parser and the poller); parse/classify ran on the first {sample} messages.",
         cpu_text(result)])
    result["tables"] = [text]
    return result


def _unrelated_only(ctx, server, count: int, timeout: float) -> dict[str, Any]:
    """Bare fetch and the product over an account holding only newsletters: the metadata-only path alone."""
    (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag="quiet", **imap_fields(server, "quiet"))
    data.followups_create(1, sequences=data.sequences_create([mailbox]), tag="quiet",
                          state=SendJob.State.SCHEDULED, due_in=timedelta(days=1))
    SendJob.objects.filter(enrollment__sequence__mailbox=mailbox, submitted_at__isnull=False).update(
        submitted_at=db_now() - timedelta(seconds=count + 3600))
    rng = random.Random(7)
    write_maildir(server, "quiet", (mails.newsletter(rng) for _ in range(count)))
    first_select(server, "quiet")
    ctx.say(f"ingest: unrelated only, {count} newsletters: bare fetch and mailbox_poll")
    bare, bare_rss = run_child("imapfetch", ["imapfetch", "--host", server.host, "--port", str(server.port),
                                             "--user", "quiet", "--password", PASSWORD], timeout)
    polled, poll_rss = run_child("ingest", ["ingest", "--mailbox-id", str(mailbox.pk)], timeout,
                                 env=child_env(PASSWORD))
    return {"messages": count, "bare_fetch": _reader(bare, bare_rss), "ingest": _reader(polled, poll_rss)}


def _reader(answer: dict, rss_kib: int) -> dict:
    """One child's answer as the table's fields: messages, seconds, messages/s, RSS at start and peak."""
    return {"messages": answer["messages"], "seconds": round(answer["seconds"], 2),
            "messages_per_s": round(answer["messages"] / answer["seconds"], 1),
            "maxrss_mib": round(rss_kib / 1024, 1), "rss_start_mib": round(answer["rss_start_kib"] / 1024, 1)}


def cpu_bound(result: dict[str, Any]) -> dict[str, Any]:
    """What the CPU the product spent allows on this machine: the rate if every CPU did nothing else and nothing
    ever waited (its CPU seconds, the poller's and the servers', spread over every CPU), that rate as a fraction
    of the bare fetch's measured one, and the poller's CPU per message that acts. {} when a server's CPU could
    not be read."""
    spent = result["cpu_s"]["ingest"]
    if any(v is None for v in spent.values()):
        return {}
    cpus = os.cpu_count() or 1
    total = sum(spent.values())
    i, b = result["ingest"], result["bare_fetch"]
    acting = i["bodies_fetched"] or 0
    rate = i["messages"] / (total / cpus) if total else None
    return {"cpus": cpus, "cpu_seconds": round(total, 2), "messages_per_s": round(rate, 1) if rate else None,
            "fraction_of_bare": round(rate / b["messages_per_s"], 3) if rate else None,
            "poller_cpu_ms_per_acting_message": round(i["acting_cpu_seconds"] / acting * 1000, 2) if acting else None}


def cpu_text(result: dict[str, Any]) -> str:
    bare, poll = ({k: "not read" if v is None else v for k, v in spent.items()}
                  for spent in (result["cpu_s"]["bare_fetch"], result["cpu_s"]["ingest"]))
    text = (f"CPU seconds (user + system): bare fetch: client {bare['client']}, Dovecot {bare['dovecot']}; "
            f"product: poller {poll['poller']} (of which {result['ingest']['acting_cpu_seconds']} in the messages "
            f"that act), PostgreSQL {poll['postgres']}, Dovecot {poll['dovecot']} (servers read from /proc).")
    bound = result.get("cpu_bound") or {}
    if bound.get("messages_per_s"):
        text += (f" Spread over all {bound['cpus']} CPUs with no wait, that CPU allows at most "
                 f"{bound['messages_per_s']:,} messages/s, {bound['fraction_of_bare']} of the bare fetch; a message "
                 f"that acts cost the poller {bound['poller_cpu_ms_per_acting_message']} ms of CPU.")
    return text
