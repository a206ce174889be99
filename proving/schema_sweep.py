"""The API against its OpenAPI schema on a production-like stack: Schemathesis (`--checks all`) per API role, the
id routes fed the ids of real rows (`manage.py schema_sweep`).

One run owns everything it touches: a database of its own (a SQLite file in a temp dir, or a new PostgreSQL
database beside the configured one: proving.harness.stack), a private redis-server, an SMTP sink for the mailbox
(an answer to a reply is really sent), and gunicorn started as the Procfile starts it, DEBUG off, plain http on
loopback (OUTREACH_HTTPS=0). The database is seeded through the services with one of everything an id route
names. Schemathesis then runs once per role with tests/api/schemathesis.toml plus a dictionary of the seeded ids
bound to each id parameter: half the values it draws there are real rows, half are generated.

The roles run least privileged first (staff, operator, admin) on the same rows, so each sees what the one before
it changed. gunicorn's access log counts the requests that reached a seeded row and were answered 2xx.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO
from urllib.parse import unquote

import requests
from django.conf import settings
from django.db import connections
from django.test.utils import override_settings

from proving.harness.smtp import SmtpServer
from proving.harness.stack import (
    LOOPBACK_TARGETS,
    DrillError,
    PrivateRedis,
    allow_loopback,
    dedicated_database,
    free_port,
    make_tempdir,
    subprocess_env,
    wait_for,
)

ACTOR = "schema sweep"
ROOT = Path(__file__).resolve().parents[1]  # not settings.BASE_DIR: `python -m` imports this before the settings
BASE_CONFIG = ROOT / "tests" / "api" / "schemathesis.toml"
ST = Path(sys.executable).with_name("st")
# Least privileged first: staff meets the rows as seeded.
ROLES = ("staff", "operator", "admin")
# Each id parameter of the schema (location.name) and the seeded ids it is given.
BINDINGS = {
    "path.sequence_id": "sequence_ids", "query.sequence_id": "sequence_ids", "body.sequence_id": "sequence_ids",
    "query.sequence": "sequence_ids", "query.mailbox": "mailbox_ids",
    "path.enrollment_id": "enrollment_ids", "path.bulk_id": "bulk_ids", "path.reply_id": "reply_ids",
    "path.email": "emails", "body.email": "emails", "body.contacts[*].email": "emails",
    "body.value": "suppressed", "query.address": "suppressed",
}
# Requests on a row of their own (the access log's request line): route prefix -> the seeded ids it names.
ID_ROUTES = re.compile(r'"(?:GET|POST) /api/v1/(sequences|enrollments/bulk|enrollments|replies|contacts|timeline)/'
                       r'(?!bulk[\s?])([^/?\s]+)\S* HTTP/[\d.]+" (\d{3}) ')
ROUTE_IDS = {"sequences": "sequence_ids", "enrollments/bulk": "bulk_ids", "enrollments": "enrollment_ids",
             "replies": "reply_ids", "contacts": "emails", "timeline": "emails"}


@dataclass
class Seeded:
    """The ids of the rows the sweep's requests should meet, by dictionary name."""

    sequence_ids: list[int] = field(default_factory=list)
    mailbox_ids: list[int] = field(default_factory=list)
    enrollment_ids: list[int] = field(default_factory=list)
    bulk_ids: list[int] = field(default_factory=list)
    reply_ids: list[int] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    suppressed: list[str] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass
class RoleResult:
    role: str
    operations: int
    test_cases: int
    failures: int  # unique failures Schemathesis reports
    errors: int
    seconds: float
    on_seeded_rows: int  # requests on an id route that named a seeded row and were answered 2xx
    id_requests: int  # requests on an id route
    failure_text: str = ""  # Schemathesis' FAILURES section: each failure's check, request and response


def seed(*, smtp_port: int) -> Seeded:
    """One of everything an id route names, through the services (the SMTP sink on `smtp_port` receives step 1)."""
    from api.bulk import bulk_enrollment_run, bulk_enrollment_submit
    from api.tokens import MAX_RATE_PER_MINUTE, api_token_create
    from db.clock import db_now
    from inbound.ingest.record import inbound_record
    from inbound.models import Conversation
    from mailboxes.imap.fetch import FetchedMessage
    from proving.harness import data
    from sequences.models import SendJob
    from sequences.pipeline import send_job_process
    from sequences.services.campaigns import sequence_create, step_save
    from sequences.services.sending import dispatch_due
    from sequences.services.stops import enrollment_pause, enrollment_stop, sequence_pause
    from sequences.services.suppressions import suppression_add, suppression_lift
    from sequences.webhooks_out.events import WebhookEvent
    from sequences.webhooks_out.models import WebhookEndpoint

    mailbox = data.mailbox_create(name="sweep", address="sales@sweep.outreach.test", smtp_port=smtp_port,
                                  display_name="Sweep Sales", daily_cap=100_000)
    active = data.sequence_create(mailbox=mailbox, name="sweep active", waits=(0, 86400))
    paused = data.sequence_create(mailbox=mailbox, name="sweep paused", waits=(0, 86400))
    draft = sequence_create(name="sweep draft", mailbox_id=mailbox.pk, actor=ACTOR)
    step_save(sequence_id=draft.pk, step_id=None, subject="Hello {{ first_name }}", body="Hi {{ first_name }}.",
              wait_seconds=0, thread=False, actor=ACTOR)
    WebhookEndpoint.objects.create(url="https://crm.example/hooks", secret_env="OUTREACH_SECRET_SWEEP_WEBHOOK",
                                   event_types=[e.value for e in WebhookEvent])

    # Ada's step 1 is sent and she replies: a conversation, and an enrollment stopped by her reply.
    ada = data.enroll(active, "ada@prospect.example", first_name="Ada", actor=ACTOR)
    job = SendJob.objects.get(enrollment=ada, state=SendJob.State.SCHEDULED)
    if job.pk not in dispatch_due():
        raise DrillError(f"step 1 of enrollment {ada.pk} was not due")
    outcome = send_job_process(job_id=job.pk, worker_id=ACTOR)
    if outcome.state != SendJob.State.SUBMITTED:
        raise DrillError(f"step 1 was not sent to the SMTP sink: {outcome.state} {outcome.detail}")
    job.refresh_from_db()
    raw = (f"From: Ada <ada@prospect.example>\r\nTo: {mailbox.address}\r\nSubject: Re: Hello Ada\r\n"
           f"Message-ID: <sweep-reply-{job.pk}@prospect.example>\r\nIn-Reply-To: {job.message_id}\r\n"
           f"References: {job.message_id}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
           "Interested, can we talk on Tuesday?\r\n").encode()
    inbound_record(mailbox_id=mailbox.pk, folder="INBOX", uidvalidity=1,
                   fetched=FetchedMessage(uid=1, internaldate=db_now(), raw=raw, size=len(raw), flags=()))

    grace = data.enroll(active, "grace@prospect.example", first_name="Grace", actor=ACTOR)  # step 1 scheduled
    linus = data.enroll(active, "linus@prospect.example", first_name="Linus", actor=ACTOR)
    enrollment_pause(enrollment_id=linus.pk, actor=ACTOR)
    ken = data.enroll(active, "ken@prospect.example", first_name="Ken", actor=ACTOR)
    enrollment_stop(enrollment_id=ken.pk, reason="operator", actor=ACTOR)
    barbara = data.enroll(paused, "barbara@prospect.example", first_name="Barbara", actor=ACTOR)
    sequence_pause(sequence_id=paused.pk, actor=ACTOR)
    alan = data.enroll(draft, "alan@prospect.example", first_name="Alan", actor=ACTOR)
    margaret = data.enroll(active, "margaret@prospect.example", first_name="Margaret", actor=ACTOR)
    suppression_add(value="margaret@prospect.example", reason="unsubscribe", actor=ACTOR, source=ACTOR)
    suppression_add(value="@competitor.example", reason="manual", actor=ACTOR, source=ACTOR, note="a competitor")
    suppression_add(value="old@customer.example", reason="complaint", actor=ACTOR, source=ACTOR)
    suppression_lift(value="old@customer.example", note="asked to hear from us again", actor=ACTOR, source=ACTOR)

    done = bulk_enrollment_submit(sequence_id=active.pk, update_contacts=False, token_id=None, contacts=[
        {"email": "edsger@prospect.example", "first_name": "Edsger"}, {"email": "not an address"}])
    bulk_enrollment_run(bulk_id=done.pk)
    queued = bulk_enrollment_submit(sequence_id=paused.pk, update_contacts=False, token_id=None,
                                    contacts=[{"email": "donald@prospect.example", "first_name": "Donald"}])

    tokens = {role: api_token_create(name=f"sweep-{role}", role=role, rate_per_minute=MAX_RATE_PER_MINUTE)[1]
              for role in ROLES}
    enrollments = [ada, grace, linus, ken, barbara, alan, margaret]
    return Seeded(
        sequence_ids=[active.pk, paused.pk, draft.pk], mailbox_ids=[mailbox.pk],
        enrollment_ids=[e.pk for e in enrollments], bulk_ids=[done.pk, queued.pk],
        reply_ids=list(Conversation.objects.values_list("pk", flat=True)),
        emails=[e.contact.email for e in enrollments] + ["edsger@prospect.example"],
        suppressed=["margaret@prospect.example", "@competitor.example", "old@customer.example"], tokens=tokens)


def st_config(seeded: Seeded) -> str:
    """tests/api/schemathesis.toml, and a dictionary of seeded ids bound to each id parameter (drawn half the time)."""
    lines = [BASE_CONFIG.read_text(), "", "# Added by proving.schema_sweep: the ids of the seeded rows."]
    values = asdict(seeded)
    for name in sorted(set(BINDINGS.values())):
        lines.append(f"[dictionaries.{name}]\nvalues = {json.dumps(values[name])}")
    lines.append("[parameters]")
    lines += [f'"{key}" = {{ dictionary = "{name}", probability = 0.5 }}' for key, name in BINDINGS.items()]
    return "\n".join(lines) + "\n"


def gunicorn_argv(port: int) -> list[str]:
    """The Procfile's web command, on this port."""
    line = next(line for line in (ROOT / "Procfile").read_text().splitlines()
                if line.startswith("web:"))
    values = {"OUTREACH_WEB_ADDR": f"127.0.0.1:{port}"}
    line = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: values.get(m[1], m[2]), line.split(":", 1)[1])
    # No control socket: it would sit in the home directory, beside another gunicorn's.
    return [str(ROOT / w) if w.startswith(".venv/") else w for w in shlex.split(line)] + [
        "--no-control-socket"]


def id_route_counts(log: str, seeded: Seeded) -> tuple[int, int]:
    """(requests on an id route that named a seeded row and were answered 2xx, requests on an id route)."""
    values = asdict(seeded)
    hits = total = 0
    for route, ident, status in ID_ROUTES.findall(log):
        total += 1
        known = {str(v) for v in values[ROUTE_IDS[route]]}
        hits += unquote(ident) in known and status.startswith("2")
    return hits, total


def run_role(role: str, *, token: str, base_url: str, config: Path, examples: int, phases: str, seed_value: int,
             only: str | None, workdir: Path) -> RoleResult:
    """`st run --checks all` with this role's token; the numbers from its JSON report."""
    report = workdir / f"st-{role}.json"
    argv = [str(ST), "--config-file", str(config), "run", f"{base_url}/api/openapi.json", "--checks", "all",
            "-H", f"Authorization: Bearer {token}", "--max-examples", str(examples), "--phases", phases,
            "--workers", "2", "--request-timeout", "60", "--seed", str(seed_value), "--no-color",
            "--report", "json", "--report-json-path", str(report)]
    if only:
        argv += ["--include-path-regex", only]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=workdir, env=os.environ | {"SCHEMATHESIS_HOOKS": ""}, capture_output=True,
                          text=True, timeout=3600)
    (workdir / f"st-{role}.out").write_text(done.stdout + done.stderr)
    if not report.exists():
        raise DrillError(f"schemathesis wrote no report for {role} (exit {done.returncode}):\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")
    summary = json.loads(report.read_text())
    failures = sum(group["count"] for group in summary["failures"])
    text = done.stdout.split("SUMMARY")[0].partition("FAILURES")[2].strip() if failures else ""
    return RoleResult(role=role, operations=(summary["operations"] or {}).get("tested", 0),
                      test_cases=summary["test_cases"]["generated"], failures=failures,
                      errors=sum(group["count"] for group in summary["errors"]),
                      seconds=round(time.monotonic() - started, 1), on_seeded_rows=0, id_requests=0,
                      failure_text=text)


def _up(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:  # not listening yet, or a worker still starting
        return False


def run(*, roles: tuple[str, ...], examples: int, phases: str, seed_value: int, only: str | None, keep: bool,
        out: TextIO) -> list[RoleResult]:
    """Seed, start gunicorn, sweep each role; the results, in the order run."""
    if not ST.exists():
        raise DrillError(f"{ST} not found: schemathesis is in the test extras (scripts/setup --test)")
    allow_loopback()
    tmpdir = make_tempdir("outreach-sweep-")
    results: list[RoleResult] = []
    with contextlib.ExitStack() as cleanup:
        if not keep:
            cleanup.callback(shutil.rmtree, tmpdir, ignore_errors=True)
        redis = PrivateRedis(tmpdir).start()
        cleanup.callback(redis.stop)
        smtp = SmtpServer(keep_messages=False).start()
        cleanup.callback(smtp.stop)
        database = dedicated_database(tmpdir=tmpdir)
        if not keep:
            cleanup.callback(database.drop)
        queues = {name: dict(cfg, URL=redis.url) for name, cfg in settings.RQ_QUEUES.items()}
        with database.active(), override_settings(RQ_QUEUES=queues, REDIS_URL=redis.url):
            database.migrate()
            seeded = seed(smtp_port=smtp.port)
            connections["default"].close()
        config = tmpdir / "schemathesis.toml"
        config.write_text(st_config(seeded))

        port = free_port()
        env = subprocess_env(database=database, redis_url=redis.url, DEBUG="0", OUTREACH_HTTPS="0",
                             DJANGO_SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="127.0.0.1",
                             OUTREACH_ALLOW_PRIVATE_TARGETS=LOOPBACK_TARGETS)
        env.setdefault("OUTREACH_DNS_RESOLVER", "off")  # no lookup leaves the machine
        log_path = tmpdir / "gunicorn.log"
        with log_path.open("wb") as log:
            web = subprocess.Popen(gunicorn_argv(port), cwd=ROOT, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        cleanup.callback(_stop, web)
        base_url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _up(f"{base_url}/healthz/live") or web.poll() is not None, timeout=60, what="gunicorn",
                 interval=0.2)
        if web.poll() is not None:
            raise DrillError(f"gunicorn exited ({web.returncode}):\n{log_path.read_text()[-3000:]}")
        out.write(f"schema sweep: {database.label}; gunicorn {base_url} (DEBUG off); redis {redis.url}; "
                  f"SMTP sink 127.0.0.1:{smtp.port}\n  seeded: " + ", ".join(
                      f"{len(v)} {k}" for k, v in asdict(seeded).items() if k != "tokens") + "\n")
        out.flush()
        for role in roles:
            logged = log_path.stat().st_size
            result = run_role(role, token=seeded.tokens[role], base_url=base_url, config=config, examples=examples,
                              phases=phases, seed_value=seed_value, only=only, workdir=tmpdir)
            with log_path.open(errors="replace") as log:
                log.seek(logged)
                result.on_seeded_rows, result.id_requests = id_route_counts(log.read(), seeded)
            results.append(result)
            out.write(f"  {role:<8} {result.operations} operations, {result.test_cases} test cases, "
                      f"{result.failures} failures, {result.errors} errors; {result.on_seeded_rows} of "
                      f"{result.id_requests} id-route requests answered 2xx on a seeded row; {result.seconds}s\n")
            if result.failure_text:
                out.write(result.failure_text + "\n")
            out.flush()
        if keep:
            out.write(f"  --keep: {tmpdir} (schemathesis output st-<role>.out, gunicorn.log) and the database stay\n")
    return results


def _stop(web: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(web.pid, 15)
    try:
        web.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(web.pid, 9)
        web.wait(10)


def main(argv: list[str]) -> None:
    """`python -m proving.schema_sweep ARGS`: `manage.py schema_sweep ARGS` from a shell that set no key."""
    from django.core.management import execute_from_command_line

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "outreach.settings")
    # This process serves nothing and keeps nothing: a key of its own (gunicorn is given another).
    os.environ.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))
    execute_from_command_line(["manage.py", "schema_sweep", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
