"""Enrollment throughput: `manage.py enroll` on an N-row CSV, next to a bare PostgreSQL COPY of the same rows.

The product run is the command itself, in process: read and decode the file,
check every row, then `enrollments_create_batch` per 1,000 rows (contacts,
enrollments, step-1 jobs and two timeline events per row, one transaction
per batch). The baseline is `COPY ... FROM STDIN` of the same rows (email,
first_name, last_name, company, one field) into an unlogged table with the
contacts' unique index on email: the fastest way PostgreSQL takes these rows
at all, measured in the same run.
"""

from __future__ import annotations

import csv
import io
import os
import time
from pathlib import Path
from typing import Any

from proving.bench.stats import ratio, table
from proving.harness import data


def _csv(rows: int) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["email", "first_name", "last_name", "company", "plan"])
    for i in range(rows):
        writer.writerow([f"p{i}@prospects{i % 97}.test", f"First{i}", f"Last{i}", f"Company {i % 1000}", "gold"])
    return out.getvalue()


def _copy(text: str) -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_enroll_copy")
        cursor.execute("CREATE UNLOGGED TABLE bench_enroll_copy (email varchar(254) UNIQUE, first_name varchar(200), "
                       "last_name varchar(200), company varchar(200), plan text)")
        started = time.perf_counter()
        with cursor.copy("COPY bench_enroll_copy FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
            copy.write(text)
        seconds = time.perf_counter() - started
        cursor.execute("DROP TABLE bench_enroll_copy")
    return seconds


def run(ctx) -> dict[str, Any]:
    from django.core.management import call_command

    from sequences.models import Enrollment, SendJob, TimelineEvent

    rows = ctx.options["rows"]
    ctx.reset()
    (mailbox,) = data.mailboxes_create(1, smtp_port=2, tag="enroll")
    sequence = data.sequence_create(mailbox=mailbox, name="bench-enroll", waits=(0, 86400))
    text = _csv(rows)
    path = Path(os.environ["OUTREACH_BENCH_DIR"]) / f"bench-enroll-{rows}.csv"
    path.write_text(text)
    ctx.say(f"enroll: COPY of {rows:,} rows")
    copy_seconds = _copy(text)
    ctx.say(f"enroll: manage.py enroll of {rows:,} rows")
    started = time.perf_counter()
    call_command("enroll", "--sequence", sequence.name, str(path), "--progress-every", "0",
                 stdout=io.StringIO(), stderr=io.StringIO())
    enroll_seconds = time.perf_counter() - started
    path.unlink()
    enrolled = Enrollment.objects.filter(sequence=sequence).count()
    jobs = SendJob.objects.filter(enrollment__sequence=sequence, state=SendJob.State.SCHEDULED).count()
    events = TimelineEvent.objects.filter(enrollment__sequence=sequence).count()
    result = {
        "rows": rows,
        "enroll": {"seconds": round(enroll_seconds, 2), "rows_per_s": round(rows / enroll_seconds, 1),
                   "enrolled": enrolled, "jobs_scheduled": jobs, "timeline_events": events},
        "copy": {"seconds": round(copy_seconds, 3), "rows_per_s": round(rows / copy_seconds, 1)},
    }
    e, c = result["enroll"], result["copy"]
    text_table = table(
        f"enroll: a {rows:,}-row CSV into one sequence",
        ["writer", "rows", "seconds", "rows/s"],
        [("bare PostgreSQL COPY (ceiling)", rows, c["seconds"], c["rows_per_s"]),
         ("manage.py enroll (product)", rows, e["seconds"], e["rows_per_s"])],
        [f"product ÷ COPY throughput: {ratio(e['rows_per_s'], c['rows_per_s'], 3)}.",
         f"the product wrote {enrolled:,} enrollments, {jobs:,} scheduled step-1 jobs and {events:,} timeline "
         "events (plus the contacts); COPY wrote one row per contact into an unlogged table with a unique index.",
         "both in one process against the bench database; the command's time includes reading and checking "
         "the file."])
    result["tables"] = [text_table]
    return result
