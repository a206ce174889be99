"""`manage.py drill race|faults|blind`: show the product's promise on a real stack. Logic in proving.drills."""

from __future__ import annotations

import os
import signal
import sys

from django.core.management.base import BaseCommand, CommandError

from proving.harness.stack import DrillError, allow_loopback
from proving.jsonout import json_target

# The drill sets these for the workers it starts; inherited by the drill process itself they would
# pause its own in-process sends at a checkpoint.
PAUSE_ENV = ("OUTREACH_PAUSE_AT", "OUTREACH_PAUSE_DIR")


class Command(BaseCommand):
    help = (
        "race: run the reply-first and send-first fixtures against a real worker process and print the "
        "evidence timeline and PASS/FAIL. faults: kill workers at each checkpoint, flush/restart Redis, restart a "
        "private PostgreSQL, break SMTP and IMAP, fuzz ingestion; print a table. blind: revoke a drill mailbox's "
        "IMAP password at its Dovecot while a follow-up comes due and a reply arrives; print the timeline and "
        "PASS/FAIL. Drills run in a database of their own (created next to the configured one, dropped at the "
        "end); exit code 1 on FAIL."
    )
    requires_system_checks = []  # a harness of workers and servers, no URL served (see outreach rqworker.py)

    def add_arguments(self, parser):
        parser.add_argument("drill", choices=["race", "faults", "blind"])
        race = parser.add_argument_group("race")
        race.add_argument("--order", choices=["reply-first", "send-first", "both", "imap-backlog", "all"],
                          default="both",
                          help="both: reply-first and send-first; imap-backlog: replies delivered by IMAP while "
                               "follow-ups queue behind a slow send, on the processes scripts/run starts; all: the "
                               "three")
        race.add_argument("--mailbox", metavar="NAME",
                          help="send through this mailbox's SMTP settings (it must be marked is_drill_target); "
                               "default: a capture server the drill starts on a free loopback port")
        race.add_argument("--redis-url", metavar="URL",
                          help="run the drill's queues in this Redis database index (no outreach instance may use "
                               "it; only the drill's own keys are removed at the end, never the index's others); "
                               "default: a redis-server of the drill's own on a free loopback port")
        race.add_argument("--database", metavar="NAME",
                          help="the database to create for the drill (PostgreSQL: a database name that does not "
                               "exist yet; SQLite: a file path that does not exist yet); default: a generated name")
        faults = parser.add_argument_group("faults")
        faults.add_argument("--quick", action="store_true", help="fewer repetitions (minutes, not tens of minutes)")
        faults.add_argument("--json", metavar="OUT", help="also write the results as JSON to this file")
        faults.add_argument("--only", metavar="DRILLS",
                            help="comma-separated subset: kill, smtp, redis, postgres, imap, fuzz, bigheader")
        faults.add_argument("--kills", type=int, metavar="N",
                            help="SIGKILLs per checkpoint (default 5 quick, 20); each SMTP fault gets min(N, 5) jobs")
        faults.add_argument("--sends", type=int, metavar="N",
                            help="sends in the Redis run (default 300 quick, 2000); the PostgreSQL run does half")
        faults.add_argument("--fuzz", type=int, metavar="N",
                            help="mutated inbound messages (default 1000 quick, 10000)")
        faults.add_argument("--seed", type=int, default=20261129, help="seed of the fuzzer (same seed, same messages)")
        parser.add_argument("--keep", action="store_true", help="keep the drill database and temp dir (debugging)")
        parser.add_argument("--schema", choices=["migrate", "models"], default="migrate",
                            help="build the drill database by running the migrations (default) or from the models")

    def handle(self, *args, drill, **options):
        # Ctrl-C and SIGTERM unwind through the drills' cleanup (processes, temp dirs, database).
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        for name in PAUSE_ENV:
            os.environ.pop(name, None)
        allow_loopback()  # the drill's servers listen on loopback
        try:
            if drill == "race":
                from proving.drills import race

                chosen = {"both": race.ORDERS, "all": race.ALL_ORDERS}
                orders = chosen.get(options["order"], (options["order"],))
                passed = race.run(orders=orders, mailbox_name=options["mailbox"], out=self.stdout,
                                  keep=options["keep"], schema=options["schema"], redis_url=options["redis_url"],
                                  database_name=options["database"])
            elif drill == "blind":
                from proving.drills import blind

                passed = blind.run(out=self.stdout, keep=options["keep"], schema=options["schema"])
            else:
                from proving.drills import faults

                only = tuple(x.strip() for x in options["only"].split(",")) if options["only"] else None
                passed = faults.run(quick=options["quick"], only=only, kills=options["kills"], sends=options["sends"],
                                    fuzz=options["fuzz"], seed=options["seed"], json_path=json_target(options["json"]),
                                    out=self.stdout, keep=options["keep"], schema=options["schema"])
        except DrillError as exc:
            raise CommandError(str(exc)) from exc
        if not passed:
            sys.exit(1)
