"""`manage.py schema_sweep`: Schemathesis `--checks all` against gunicorn, per API role, on seeded rows.

    python manage.py schema_sweep [--roles all|staff,operator,admin] [--quick] [--json OUT] [--keep]

Logic in proving.schema_sweep. Exit code 1 when any role has a failure or an error.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from proving import schema_sweep
from proving.harness.stack import DrillError
from proving.jsonout import json_target

ALL_PHASES = "examples,coverage,fuzzing,stateful"


class Command(BaseCommand):
    help = ("Seed a database of its own with one of everything the API's id routes name, start gunicorn on it "
            "(DEBUG off, plain http on loopback) and run Schemathesis with every check for each API role, the "
            "seeded ids among the values it tries. Exit code 1 on any failure.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--roles", default="all", help=f"all, or some of {','.join(schema_sweep.ROLES)}")
        parser.add_argument("--quick", action="store_true",
                            help="the fuzzing and stateful phases, 3 examples per operation (a minute or so)")
        parser.add_argument("--examples", type=int, default=20, help="test cases per operation and phase")
        parser.add_argument("--phases", default=ALL_PHASES, help="Schemathesis phases, comma-separated")
        parser.add_argument("--seed", type=int, default=40, help="Schemathesis' seed (same seed, same requests)")
        parser.add_argument("--only", metavar="REGEX", help="only the operations whose path matches")
        parser.add_argument("--json", dest="json_out", metavar="OUT", help="also write the results to this file")
        parser.add_argument("--keep", action="store_true",
                            help="keep the temp dir (Schemathesis' output, gunicorn's log) and the database")

    def handle(self, *args: Any, **options: Any) -> None:
        json_out = json_target(options["json_out"])
        roles = schema_sweep.ROLES if options["roles"] == "all" else tuple(options["roles"].split(","))
        if unknown := set(roles) - set(schema_sweep.ROLES):
            raise CommandError(f"unknown role(s) {', '.join(sorted(unknown))}: use {', '.join(schema_sweep.ROLES)}")
        if not 1 <= options["examples"] <= 10_000:
            raise CommandError("--examples: from 1 to 10000")
        quick = options["quick"]
        try:
            results = schema_sweep.run(
                roles=roles, examples=3 if quick else options["examples"],
                phases="fuzzing,stateful" if quick else options["phases"], seed_value=options["seed"],
                only=options["only"], keep=options["keep"], out=self.stdout)
        except DrillError as exc:
            raise CommandError(str(exc)) from exc
        if json_out:
            json_out.write_text(json.dumps([asdict(r) for r in results], indent=2))
        failed = [r.role for r in results if r.failures or r.errors]
        self.stdout.write(f"schema sweep: {'FAIL (' + ', '.join(failed) + ')' if failed else 'PASS'}")
        if failed:
            raise SystemExit(1)
