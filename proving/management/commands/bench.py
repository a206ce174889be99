"""Benchmarks with their baselines in the same run: `python manage.py bench SUITE [--json OUT] [--quick]`.

Suites: guard, ceiling, slow-provider, reply-to-stop, ingest, scale, enroll, guardrail, api, pages, watcher,
watcher-shards, all.
The bench creates and drops its own database (outreach_bench_<pid>) on the
configured PostgreSQL server and runs a private redis-server on a free
loopback port; it never reads or writes the app's data. See BENCHMARKS.md.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from proving.bench import runner
from proving.bench.load import parse_load
from proving.harness.stack import allow_loopback
from proving.jsonout import json_target


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _words(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


class Command(BaseCommand):
    help = "Run a benchmark suite; prints a table per suite and writes JSON. Sizes default per --quick."
    requires_system_checks = []  # a harness of workers and servers, no URL served (see outreach rqworker.py)

    def add_arguments(self, parser):
        parser.add_argument("suite", choices=[*runner.SUITES, "all"])
        parser.add_argument("--json", dest="json_out", help="write the results here")
        parser.add_argument("--quick", action="store_true", help="small sizes: a run of a few minutes")
        parser.add_argument("--pg-url", help="PostgreSQL server to create the bench database on (loopback only); "
                                             "default: the configured one, else postgres@127.0.0.1:5432")
        parser.add_argument("--keep", action="store_true", help="do not drop the bench database (debugging)")
        parser.add_argument("--timeout", type=float, help="stop everything after this many seconds")
        g = parser.add_argument_group("guard / ceiling")
        g.add_argument("--workers", type=_ints, help="worker counts, e.g. 1,2,4,8")
        g.add_argument("--worker-classes", type=_words,
                       help="simple (SimpleWorker) and/or fork (the product's forking worker, as scripts/run "
                            "starts it)")
        g.add_argument("--sends", type=int, help="messages per measured run")
        g.add_argument("--repeat", type=int, help="runs per (variant, workers); the median is reported")
        g.add_argument("--mailboxes", type=int, help="sending mailboxes the jobs are spread over")
        g.add_argument("--seconds", type=float, help="duration of each pgbench / loop run")
        g.add_argument("--noop-jobs", type=int, help="jobs per RQ no-op run")
        g.add_argument("--no-ceiling", action="store_true", help="guard: skip the ceiling measurements")
        g = parser.add_argument_group("slow-provider")
        g.add_argument("--delay", type=float, help="seconds the SMTP server stalls DATA")
        g.add_argument("--slow-workers", type=int, help="workers, all busy in a slow send")
        g.add_argument("--samples", type=int, help="reply commits measured per variant")
        g = parser.add_argument_group("reply-to-stop / ingest")
        g.add_argument("--replies", type=int, help="replies appended per mode")
        g.add_argument("--poll-interval", type=float, help="seconds between poll passes (polling mode)")
        g.add_argument("--reply-rate", type=float, help="replies appended per second (Poisson arrivals)")
        g.add_argument("--backlog-followups", type=int, help="follow-ups queued at once in each backlog run")
        g.add_argument("--backlog-replies", type=int, help="replies delivered during each backlog run")
        g.add_argument("--backlog-delay", type=float, help="seconds the SMTP server stalls DATA in the backlog runs")
        g.add_argument("--messages", type=int, help="ingest backlog size")
        g = parser.add_argument_group("scale")
        g.add_argument("--jobs", type=int, help="scheduled jobs in the table")
        g.add_argument("--small-jobs", type=int, help="the same measurements on a table this small first")
        g.add_argument("--dispatch-passes", type=int, help="dispatcher passes measured")
        g.add_argument("--scale-workers", type=int, help="workers sending the dispatched jobs")
        g.add_argument("--scale-mailboxes", type=int, help="sending mailboxes the jobs are spread over")
        g.add_argument("--scale-backlog", type=int, help="IMAP messages ingested against the big table")
        g = parser.add_argument_group("watcher")
        g.add_argument("--folders", type=int, help="watched IMAP folders (in the one process of watcher; shared by "
                                                   "the processes of watcher-shards)")
        g.add_argument("--folders-per-mailbox", type=int, help="folders of each mailbox (one Dovecot account each)")
        g.add_argument("--watch-reply-rate", type=float, help="replies appended per second (below the pollers' rate)")
        g.add_argument("--load", help="background load while each design is measured: cpu:N (N busy processes), "
                                      "send:N (N follow-ups sent through the pipeline to a local sink), or both: "
                                      "cpu:2,send:3000")
        g = parser.add_argument_group("watcher-shards (also --folders, --replies, --watch-reply-rate)")
        g.add_argument("--processes", type=_ints, help="watcher process counts, e.g. 1,2,4")
        g.add_argument("--shard-folders-per-mailbox", type=int, help="folders of each mailbox (one account each)")
        g.add_argument("--watch-lease-seconds", type=float,
                       help="OUTREACH_WATCHER_LEASE_SECONDS of the watchers (a take-over waits for a lease to expire)")
        g = parser.add_argument_group("enroll")
        g.add_argument("--rows", type=int, help="CSV rows enrolled (and copied for the baseline)")
        g = parser.add_argument_group("guardrail")
        g.add_argument("--guardrail-sends", type=int, help="messages sent within the mailbox's window")
        g.add_argument("--bounces", type=int, help="hard bounces recorded (and manual suppressions for the baseline)")
        g = parser.add_argument_group("api")
        g.add_argument("--api-calls", type=int, help="enrollments through the API (and the service), stops measured")
        g = parser.add_argument_group("pages")
        g.add_argument("--page-jobs", type=int, help="jobs in the big database")
        g.add_argument("--page-enrollments", type=int, help="enrollments (and contacts) in the big database")
        g.add_argument("--page-small-jobs", type=int, help="jobs in the small database (the baseline)")
        g.add_argument("--page-requests", type=int, help="timed requests per page and size")
        g.add_argument("--page-workspaces", type=int,
                       help="workspaces the rows are dealt among (the pages are the first one's)")
        parser.add_argument("--inner", action="store_true", help="(internal) run inside the bench environment")

    def handle(self, *args, suite, inner, json_out, **options):
        allow_loopback()  # the bench's servers listen on loopback
        def write(text: str) -> None:
            self.stdout.write(text, ending="")
            self.stdout.flush()

        if inner:
            code = runner.inner(suite, write)
            if code:
                raise SystemExit(code)  # the outer process reports it
            return
        else:
            try:
                parse_load(options.get("load"))
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            keys = {"quick", "pg_url", "keep", "timeout", "no_ceiling", *runner.DEFAULTS}
            chosen = {k: v for k, v in options.items() if k in keys}
            target = json_target(json_out)
            chosen["json"] = str(target) if target else None
            code = runner.outer(suite, chosen, write)
        if code:
            raise CommandError(f"bench {suite} failed (exit {code})", returncode=code)
