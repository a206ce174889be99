"""Page latency: server time of the operator UI's busiest pages on a big database, next to a small one.

For each size, on a fresh database (small first: the baseline, then big):

1. Bulk insert with INSERT ... SELECT generate_series (seconds, not minutes):
   E contacts (address, name, company; 5,000 domains), E enrollments over 10
   sequences of 5 steps on 4 mailboxes (70 % active, 10 % each paused,
   stopped, completed), J/E jobs per enrollment (earlier steps submitted in
   the last 14 days, the latest scheduled, canceled or submitted by the
   enrollment's status; sends spread over the last 180 days), one timeline
   event per job; a reply from every other enrollment (100,000 at the default size) with its conversation in
   the replies inbox (categories and handled spread evenly, replies over the last 180 days). VACUUM ANALYZE.
2. Each page is requested through Django's test Client as a logged-in
   superuser (the whole stack: middleware, views, queries, templates; no
   network), a few warm-up requests first, then R timed requests: p50, p95,
   max in milliseconds. Pages: dashboard, sequences list, sequence detail
   (the biggest sequence), contacts search (by name, by address, by @domain),
   enrollment detail (random enrollments), replies (unhandled, by category, an older page at a random
   cursor, a search by name), a conversation page, and the reports (by step of the biggest sequence, by
   week over every sequence, by sending domain over the last 30 days).
3. The reports' rollup (reports.rollup), before the pages are read: its first run, which counts everything, and
   a later run that counts 1,000 random people again (what a minute of a busy install asks of it).
"""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from django.db import connection

from inbound.kinds import Category
from inbound.models import Conversation, InboundMessage
from inbound.replies.selectors import cursor_of
from proving.bench.stats import percentile, ratio, table
from proving.harness import data
from reports import rollup as reports_rollup
from sequences.models import Contact, Enrollment, SendJob, TimelineEvent
from ui import dashboard_counts
from workspaces.models import DEFAULT_NAME, Workspace
from workspaces.scoping import workspace_scope

SEQUENCES = 10
STEPS = 5
DOMAINS = 5000
TARGET_MS = 300.0


def workspaces_make(count: int) -> list[Workspace]:
    """The install's workspace "Default" (first by name: the one the measuring user works in) and count - 1 more."""
    names = [DEFAULT_NAME] + [f"client-{i:02d}" for i in range(1, count)]
    return [Workspace.objects.get_or_create(name=name)[0] for name in names]


def fill(*, jobs: int, enrollments: int, workspaces: int = 1) -> dict[str, Any]:
    """The bench rows for one size, in four INSERT ... SELECT statements ('%%': they take parameters). With several
    workspaces, the mailboxes, sequences and contacts are dealt among them (a sequence with its mailbox's), and
    the people of each sequence are its workspace's contacts."""
    started = time.perf_counter()
    spaces = workspaces_make(workspaces)
    mailboxes = []
    for i in range(max(4, len(spaces))):
        with workspace_scope(spaces[i % len(spaces)].pk):
            mailboxes.append(data.mailbox_create(
                name=f"pages-{i}", address=f"sales{i}@pages.outreach.test", display_name="Sam from Outreach",
                smtp_port=2, daily_cap=2_000_000_000))
    sequences = []
    for i in range(max(SEQUENCES, len(spaces))):
        mailbox = mailboxes[i % len(mailboxes)]
        with workspace_scope(mailbox.workspace_id):
            sequences.append(data.sequence_create(mailbox=mailbox, name=f"pages-{i}",
                                                  waits=(0,) + (86400,) * (STEPS - 1)))
    per = max(1, min(STEPS, round(jobs / enrollments)))
    seq_ids = "ARRAY[" + ",".join(str(s.pk) for s in sequences) + "]::bigint[]"
    seq_spaces = "ARRAY[" + ",".join(str(s.workspace_id) for s in sequences) + "]::bigint[]"
    data.insert_select(
        Contact,
        {
            "workspace_id": str(spaces[0].pk),
            "email": f"'p' || g || '@d' || (g %% {DOMAINS}) || '.test'",
            "first_name": "'First' || g",
            "last_name": "'Last' || g",
            "company": "'Company ' || (g %% 20000)",
            "created_at": "now()",
        },
        "generate_series(1, %s) g",
        (enrollments,),
    )
    if len(spaces) > 1:  # each person in the workspace of the sequence the next statement enrolls them in
        with connection.cursor() as cursor:
            cursor.execute(f"UPDATE sequences_contact SET workspace_id = ({seq_spaces})[1 + id % {len(sequences)}]")
    data.insert_select(
        Enrollment,
        {
            "sequence_id": f"({seq_ids})[1 + c.id %% {len(sequences)}]",
            "contact_id": "c.id",
            "status": "CASE c.id %% 10 WHEN 0 THEN 'stopped' WHEN 1 THEN 'paused' WHEN 2 THEN 'completed' "
            "ELSE 'active' END",
            "stop_reason": "CASE c.id %% 10 WHEN 0 THEN 'replied' ELSE '' END",
            "created_at": "now() - interval '20 days'",
        },
        "sequences_contact c",
    )
    # Sends spread over the last 180 days: the table holds history, the dashboard charts the last 14 days.
    submitted_at = "now() - ((e.id * 7919 + st.position * 104729) %% 15552000) * interval '1 second'"
    last = f"st.position = {per}"
    data.insert_select(
        SendJob,
        {
            "enrollment_id": "e.id",
            "step_id": "st.id",
            "state": f"CASE WHEN NOT {last} OR e.status = 'completed' THEN 'submitted' "
            "WHEN e.status = 'active' THEN 'scheduled' ELSE 'canceled' END",
            "cancel_reason": f"CASE WHEN {last} AND e.status IN ('paused', 'stopped') THEN 'enrollment_paused' "
            "ELSE '' END",
            "scheduled_at": f"CASE WHEN {last} AND e.status = 'active' THEN now() + interval '1 day' "
            f"ELSE {submitted_at} END",
            "authorized_at": f"CASE WHEN NOT {last} OR e.status = 'completed' THEN {submitted_at} END",
            "submitted_at": f"CASE WHEN NOT {last} OR e.status = 'completed' THEN {submitted_at} END",
            "canceled_at": f"CASE WHEN {last} AND e.status IN ('paused', 'stopped') THEN now() END",
            "smtp_reply": "'250 2.0.0 Ok: queued'",
            "message_id": "'<pages.' || e.id || '.' || st.position || '@outreach.test>'",
        },
        f"sequences_enrollment e JOIN sequences_step st ON st.sequence_id = e.sequence_id AND st.position <= {per}",
    )
    data.insert_select(
        TimelineEvent,
        {
            "kind": "CASE j.state WHEN 'submitted' THEN 'job_submitted' WHEN 'canceled' THEN 'job_canceled' "
            "ELSE 'job_scheduled' END",
            "email": "c.email",
            "enrollment_id": "j.enrollment_id",
            "job_id": "j.id",
            "version_seen": "j.version",
        },
        "sequences_sendjob j JOIN sequences_enrollment e ON e.id = j.enrollment_id "
        "JOIN sequences_contact c ON c.id = e.contact_id",
    )
    _fill_replies()
    insert_s = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    counts = {
        "jobs": SendJob.objects.count(),
        "enrollments": Enrollment.objects.count(),
        "contacts": Contact.objects.count(),
        "events": TimelineEvent.objects.count(),
        "replies": Conversation.objects.count(),
        "workspaces": len(spaces),
    }
    return {**counts, "insert_s": round(insert_s, 1), "vacuum_analyze_s": round(time.perf_counter() - started, 1)}


def _fill_replies() -> None:
    """A reply from every other enrollment, and its conversation: the replies inbox at scale."""
    replied_at = "now() - ((e.id * 7919) %% 15552000) * interval '1 second'"
    data.insert_select(
        InboundMessage,
        {
            "mailbox_id": "s.mailbox_id", "folder": "'INBOX'", "uidvalidity": "1", "uid": "e.id",
            "message_id": "'<reply.' || e.id || '@prospect.test>'", "from_address": "c.email",
            "subject": "'Re: Hello'", "kind": "'human_reply'", "reply_text": "'Thanks, tell me more.'",
            "correlation_rule": "'in_reply_to'", "enrollment_id": "e.id", "internaldate": replied_at,
        },
        "sequences_enrollment e JOIN sequences_sequence s ON s.id = e.sequence_id "
        "JOIN sequences_contact c ON c.id = e.contact_id WHERE e.id %% 2 = 0",
    )
    categories = "(ARRAY[" + ",".join(f"'{c.value}'" for c in Category) + "])"
    data.insert_select(
        Conversation,
        {
            "enrollment_id": "e.id", "contact_id": "e.contact_id", "sequence_id": "e.sequence_id",
            "mailbox_id": "i.mailbox_id", "latest_id": "i.id", "last_reply_at": "i.internaldate",
            "suggested": f"{categories}[1 + e.id %% {len(Category)}]",
            "category": f"{categories}[1 + e.id %% {len(Category)}]", "handled": "e.id %% 3 = 0",
        },
        "mailboxes_inboundmessage i JOIN sequences_enrollment e ON e.id = i.enrollment_id",
    )


def pages(rng: random.Random) -> dict[str, Any]:
    """Page name -> a function giving the next URL to request: the objects of the workspace the measuring user
    works in (the first by name)."""
    with workspace_scope(Workspace.objects.order_by("name").first().pk):
        return _pages(rng)


def _pages(rng: random.Random) -> dict[str, Any]:
    biggest = Enrollment.objects.values("sequence_id").order_by("sequence_id").first()["sequence_id"]
    n = Contact.objects.count()
    ids = list(Enrollment.objects.order_by("?").values_list("pk", flat=True)[:200])
    replies = list(Conversation.objects.order_by("?").only("pk", "last_reply_at")[:200])
    month_ago = datetime.now(UTC).date() - timedelta(days=29)
    return {
        "dashboard": lambda: "/",
        "reports: by step": lambda: f"/reports/?by=step&sequence={biggest}",
        "reports: by week": lambda: "/reports/?by=week",
        "reports: by domain, 30 days": lambda: f"/reports/?by=domain&since={month_ago}",
        "sequences list": lambda: "/sequences/",
        "sequence detail": lambda: f"/sequences/{biggest}/",
        "contacts search: name": lambda: f"/contacts/?q=First{rng.randint(1, n)}",
        "contacts search: address": lambda: f"/contacts/?q=p{rng.randint(1, n)}@d",
        "contacts search: @domain": lambda: f"/contacts/?q=@d{rng.randint(0, DOMAINS - 1)}.test",
        "enrollment detail": lambda: f"/enrollments/{rng.choice(ids)}/",
        "replies: unhandled": lambda: "/replies/",
        "replies: by category": lambda: f"/replies/?status=all&category={rng.choice(list(Category)).value}",
        "replies: older page": lambda: f"/replies/?status=all&before={quote(cursor_of(rng.choice(replies)))}",
        "replies: search": lambda: f"/replies/?status=all&q=First{rng.randint(1, n)}",
        "conversation": lambda: f"/replies/{rng.choice(replies).pk}/",
    }


def measure(requests: int, warmup: int = 3) -> dict[str, dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(
        username="bench-pages", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(user)
    rng = random.Random(7)
    out = {}
    for name, url in pages(rng).items():
        times = []
        for i in range(warmup + requests):
            path = url()
            started = time.perf_counter()
            response = client.get(path, secure=True)
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                raise RuntimeError(f"{path}: HTTP {response.status_code}")
            if i >= warmup:
                times.append(elapsed * 1000)
        out[name] = {
            "n": len(times),
            "p50_ms": round(percentile(times, 50), 1),
            "p95_ms": round(percentile(times, 95), 1),
            "max_ms": round(max(times), 1),
        }
    return out


def count_time(times: int = 3) -> float:
    """The median time of the dashboard's background count (ui/dashboard_counts.py), in ms: the page
    reads its row, so its cost shows here and not in the page's time."""
    spent = []
    first = Workspace.objects.order_by("name").first()
    for _ in range(times):
        started = time.perf_counter()
        with workspace_scope(first.pk, with_unowned=Workspace.objects.count() == 1):
            dashboard_counts.count()
        spent.append((time.perf_counter() - started) * 1000)
    return round(percentile(spent, 50), 1)


def rollup_cost(people: int = 1000) -> dict[str, float]:
    """The reports' rollup: its first run over everything (a rebuild: the bench's reset empties only the domain's
    tables), then *people* random enrollments counted again (what a run does for the people the timeline names),
    in ms. The pages read what it keeps, so its cost shows here, not in theirs."""
    started = time.perf_counter()
    first = reports_rollup.rollup_rebuild()
    full_ms = (time.perf_counter() - started) * 1000
    ids = list(Enrollment.objects.order_by("?").values_list("pk", flat=True)[:people])
    started = time.perf_counter()
    reports_rollup.recount(ids)
    return {"first_run_ms": round(full_ms, 1), "people": first.enrollments, "messages": first.messages,
            "recount_ms": round((time.perf_counter() - started) * 1000, 1), "recounted": len(ids)}


def run(ctx) -> dict[str, Any]:
    sizes = [
        ("small", ctx.options["page_small_jobs"], max(1, ctx.options["page_small_jobs"] // STEPS)),
        ("big", ctx.options["page_jobs"], ctx.options["page_enrollments"]),
    ]
    result: dict[str, Any] = {"target_p95_ms": TARGET_MS, "requests_per_page": ctx.options["page_requests"]}
    for label, jobs, enrollments in sizes:
        ctx.reset()
        ctx.say(f"pages: {label} database, {jobs:,} jobs / {enrollments:,} enrollments")
        result[label] = {"data": fill(jobs=jobs, enrollments=enrollments,
                                      workspaces=ctx.options["page_workspaces"])}
        result[label]["rollup"] = rollup_cost()
        ctx.say(f"pages: filled in {result[label]['data']['insert_s']}s; reports rolled up in "
                f"{result[label]['rollup']['first_run_ms'] / 1000:.1f}s; measuring")
        result[label]["pages"] = measure(ctx.options["page_requests"])
        result[label]["dashboard_count_ms"] = count_time()
    small, big = result["small"], result["big"]
    rows = []
    for name, b in big["pages"].items():
        s = small["pages"][name]
        rows.append(
            (
                name,
                s["p50_ms"],
                s["p95_ms"],
                b["p50_ms"],
                b["p95_ms"],
                b["max_ms"],
                ratio(b["p95_ms"], s["p95_ms"]),
                b["p95_ms"] <= TARGET_MS,
            )
        )
    result["within_target"] = all(r[-1] for r in rows)
    sd, bd = small["data"], big["data"]
    result["tables"] = [
        table(
            f"pages: server time per page, {bd['jobs']:,} jobs / {bd['enrollments']:,} enrollments next to "
            f"{sd['jobs']:,} jobs / {sd['enrollments']:,} enrollments",
            [
                "page",
                "small p50 ms",
                "small p95 ms",
                "big p50 ms",
                "big p95 ms",
                "big max ms",
                "big ÷ small p95",
                f"p95 ≤ {TARGET_MS:.0f} ms",
            ],
            rows,
            [
                f"{result['requests_per_page']} timed requests per page after 3 warm-up requests, Django test "
                "Client as a superuser (middleware, views, queries, templates; no network), one process.",
                f"big database filled in {bd['insert_s']}s (INSERT ... SELECT generate_series) + "
                f"{bd['vacuum_analyze_s']}s VACUUM ANALYZE; {bd['events']:,} timeline events, "
                f"{bd['contacts']:,} contacts in {bd['workspaces']} workspace{'s' if bd['workspaces'] != 1 else ''} "
                "(the pages are those of the first, as a user who works in it sees them).",
                "contacts search: a random name (First<n>), an address part (p<n>@d) and a random @domain per request.",
                f"dashboard: its numbers over all time are counted once a minute in the background; that count took "
                f"{big['dashboard_count_ms']:,.0f} ms (small: {small['dashboard_count_ms']:,.0f} ms), median of 3.",
                f"reports: they read the rollup the scheduler keeps once a minute; its first run (every person) took "
                f"{big['rollup']['first_run_ms'] / 1000:,.1f} s over {big['rollup']['people']:,} people and "
                f"{big['rollup']['messages']:,} messages (small: "
                f"{small['rollup']['first_run_ms'] / 1000:,.1f} s); counting {big['rollup']['recounted']:,} random "
                f"people again took {big['rollup']['recount_ms']:,.0f} ms.",
            ],
        )
    ]
    return result
