"""Run suites: the outer process owns the throwaway services, the inner one measures.

outer: create outreach_bench_<pid>, migrate it, start a private Redis, run the
inner process with DATABASE_URL/REDIS_URL pointing at them (its own session,
killed as a group at the deadline), then always drop the database, stop Redis
and kill any process group the inner process registered (Dovecot).

inner: refuses to run unless its database and Redis are the bench's own;
runs the suites; prints a table per suite with the machine facts; writes JSON.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proving.bench.env import DB_PREFIX, MANAGE, BenchSetupError, PgServer, bench_env, migrate
from proving.harness import template
from proving.harness.stack import DrillError, PrivateRedis

SUITES = (
    "guard", "ceiling", "slow-provider", "reply-to-stop", "ingest", "scale", "enroll", "guardrail", "api", "pages",
    "watcher", "watcher-shards",
)
# `all` runs them in this order (scale last: it leaves the biggest tables)
ALL = (
    "guard", "ceiling", "slow-provider", "reply-to-stop", "ingest", "enroll", "guardrail", "api", "pages", "watcher",
    "watcher-shards", "scale",
)

# Sizes: (full, --quick). Every one can be overridden on the command line.
DEFAULTS: dict[str, tuple[Any, Any]] = {
    "workers": ([1, 2, 4, 8], [1, 2]),
    "worker_classes": (["simple"], ["simple"]),
    "sends": (1000, 200),
    "repeat": (1, 1),
    "mailboxes": (16, 4),
    "seconds": (10.0, 2.0),
    "noop_jobs": (3000, 500),
    "delay": (5.0, 1.0),
    "slow_workers": (8, 2),
    "samples": (100, 16),
    "replies": (200, 30),
    "poll_interval": (1.0, 1.0),
    "reply_rate": (10.0, 10.0),
    "backlog_followups": (24, 12),
    "backlog_replies": (8, 4),
    "backlog_delay": (3.0, 3.0),
    "messages": (20000, 2000),
    "jobs": (1_000_000, 100_000),
    "small_jobs": (20_000, 20_000),
    "dispatch_passes": (20, 4),
    "scale_workers": (8, 2),
    "scale_mailboxes": (1000, 100),
    "scale_backlog": (500, 200),
    "rows": (50_000, 5_000),
    "guardrail_sends": (100_000, 10_000),
    "bounces": (200, 50),
    "api_calls": (2_000, 200),
    "page_jobs": (1_000_000, 50_000),
    "page_enrollments": (200_000, 10_000),
    "page_small_jobs": (10_000, 2_000),
    "page_requests": (40, 10),
    "page_workspaces": (20, 2),
    "folders": (1000, 100),
    "folders_per_mailbox": (20, 10),
    "watch_reply_rate": (2.0, 2.0),
    "load": ("", ""),  # bench watcher: background load, e.g. "cpu:2,send:3000" (proving.bench.load)
    "processes": ([1, 2, 4], [1, 2]),
    "shard_folders_per_mailbox": (2, 2),
    "watch_lease_seconds": (15.0, 15.0),
    "timeout": (4 * 3600.0, 1800.0),
}


def resolve(options: dict[str, Any]) -> dict[str, Any]:
    quick = bool(options.get("quick"))
    out = dict(options)
    for key, (full, small) in DEFAULTS.items():
        if out.get(key) is None:
            out[key] = small if quick else full
    return out


# --- outer -------------------------------------------------------------------------------------


def outer(suite: str, options: dict[str, Any], write: Callable[[str], None]) -> int:
    from django.conf import settings

    options = resolve(options)

    def terminate(signum, frame):  # `kill PID` of the command: still drop the database and stop Redis
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    server = PgServer.from_settings(settings.DATABASES, options.get("pg_url") or "")
    name = f"{DB_PREFIX}{os.getpid()}"
    workdir = Path(tempfile.mkdtemp(prefix="outreach-bench-"))
    workdir.chmod(0o755)  # Dovecot's auth and imap processes must traverse it
    redis = PrivateRedis(workdir)  # the drills' own: no persistence, loopback, stopped at the end
    inner_proc: subprocess.Popen | None = None
    setup_notes: list[str] = []
    created = False
    try:
        write(f"bench: database {name} on {server.host}:{server.port}, private Redis on 127.0.0.1:{redis.port}\n")
        admin = {"host": server.host, "port": str(server.port), "user": server.user, "password": server.password}
        copied = template.pg_copy(admin, name)  # within a test run: a copy of its migrated template
        if not copied:
            server.create_database(name)
        created = True
        redis.start()
        env = bench_env(server.url(name), redis.url)
        env["OUTREACH_BENCH_DIR"] = str(workdir)
        env["OUTREACH_BENCH_OPTIONS"] = json.dumps(options | {"setup_notes": setup_notes})
        started = time.monotonic()
        if copied:
            write("bench: a copy of the test run's migrated database\n")
        else:
            migrate(env, setup_notes)
            template.pg_save(admin, name)
        for note in setup_notes:
            write(f"bench: NOTE {note}\n")
        write(f"bench: migrated in {time.monotonic() - started:.1f}s\n")
        env["OUTREACH_BENCH_OPTIONS"] = json.dumps(options | {"setup_notes": setup_notes})
        inner_proc = subprocess.Popen([sys.executable, str(MANAGE), "bench", suite, "--inner"], env=env,
                                      cwd=MANAGE.parent, start_new_session=True)
        try:
            return inner_proc.wait(timeout=options["timeout"])
        except subprocess.TimeoutExpired:
            write(f"bench: deadline of {options['timeout']:.0f}s reached; stopping\n")
            return 124
    except (BenchSetupError, DrillError) as exc:
        write(f"bench: cannot set up: {exc}\n")
        return 2
    finally:
        if inner_proc is not None and inner_proc.poll() is None:
            _stop_group(inner_proc.pid, grace=15)
            inner_proc.wait()
        for pgid in _registered_groups(workdir):
            _stop_group(pgid, grace=2)
        redis.stop()
        if created and not options.get("keep"):
            try:
                server.drop_database(name)
            except Exception as exc:  # noqa: BLE001 - say so; never leave silently
                write(f"bench: could not drop {name}: {exc}\n")
        elif created:
            write(f"bench: kept database {name} (--keep)\n")
        shutil.rmtree(workdir, ignore_errors=True)


def _stop_group(pgid: int, grace: float) -> None:
    """SIGTERM a process group we started, then SIGKILL what is left after *grace* seconds."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _registered_groups(workdir: Path) -> list[int]:
    path = workdir / "groups"
    if not path.exists():
        return []
    return [int(line) for line in path.read_text().split() if line.strip().isdigit()]


# --- inner -------------------------------------------------------------------------------------


@dataclass
class Context:
    options: dict[str, Any]
    write: Callable[[str], None]
    tables: list[str] = field(default_factory=list)

    @property
    def quick(self) -> bool:
        return bool(self.options.get("quick"))

    def say(self, message: str) -> None:
        self.write(f"  [{time.strftime('%H:%M:%S')}] {message}\n")

    def register_group(self, pgid: int) -> None:
        """A process group the outer process must kill if this one dies (e.g. Dovecot's)."""
        with open(Path(os.environ["OUTREACH_BENCH_DIR"]) / "groups", "a") as f:
            f.write(f"{pgid}\n")

    def reset(self) -> None:
        """Empty every app table and the private Redis: each measured run starts from the same state."""
        from django.apps import apps
        from django.db import connection
        from django_rq import get_connection

        _assert_bench_services()
        tables = sorted({m._meta.db_table for label in ("sequences", "mailboxes")
                         for m in apps.get_app_config(label).get_models(include_auto_created=True)})
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        get_connection("send").flushdb()

    def analyze(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def _assert_bench_services() -> None:
    """Never measure (or truncate) anything but the bench's own database and Redis."""
    from django.conf import settings

    name = settings.DATABASES["default"]["NAME"]
    if not (settings.DATABASES["default"]["ENGINE"].endswith("postgresql") and str(name).startswith(DB_PREFIX)):
        raise RuntimeError(f"the inner bench runs only against an {DB_PREFIX}* database, not {name!r}")
    private = os.environ.get("OUTREACH_BENCH_REDIS_URL")
    urls = {q["URL"] for q in settings.RQ_QUEUES.values()}
    if not private or urls != {private}:
        raise RuntimeError("the inner bench runs only against the private Redis the outer process started")


def machine_facts() -> dict[str, Any]:
    from django.db import connection

    facts: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu_model": _cpuinfo("model name"),
        "memory_gib": round(_meminfo("MemTotal") / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        facts["postgresql"] = cursor.fetchone()[0].split(" on ")[0]
        for setting in ("shared_buffers", "synchronous_commit", "fsync", "max_connections"):
            cursor.execute(f"SHOW {setting}")
            facts[f"pg_{setting}"] = cursor.fetchone()[0]
    try:
        from django_rq import get_connection

        facts["redis"] = get_connection("send").info("server")["redis_version"]
    except Exception:  # noqa: BLE001
        facts["redis"] = "?"
    dovecot = shutil.which("dovecot")
    if dovecot:
        facts["dovecot"] = subprocess.run([dovecot, "--version"], capture_output=True, text=True).stdout.strip()
    from importlib.metadata import version

    for package in ("Django", "rq", "django-rq", "psycopg", "IMAPClient", "aiosmtpd"):
        try:
            facts[package.lower()] = version(package)
        except Exception:  # noqa: BLE001
            pass
    return facts


def _cpuinfo(key: str) -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _meminfo(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def machine_table(facts: dict[str, Any]) -> str:
    from proving.bench.stats import table

    rows = [
        ("CPU", f"{facts['cpu_model']} ({facts['nproc']} logical CPUs, {facts['cpus_usable']} usable)"),
        ("memory", f"{facts['memory_gib']} GiB"),
        ("PostgreSQL", f"{facts['postgresql']} (shared_buffers {facts['pg_shared_buffers']}, "
                       f"synchronous_commit {facts['pg_synchronous_commit']}, fsync {facts['pg_fsync']})"),
        ("Redis", facts.get("redis", "?")),
        ("Dovecot", facts.get("dovecot", "-")),
        ("Python / Django / rq", f"{facts['python']} / {facts.get('django')} / {facts.get('rq')}"),
        ("load average at start", " ".join(str(x) for x in facts["loadavg_at_start"])),
    ]
    if "loadavg_at_end" in facts:
        rows.append(("load average at end", " ".join(str(x) for x in facts["loadavg_at_end"])))
    return table("Machine", ["fact", "value"], rows)


def inner(suite: str, write: Callable[[str], None]) -> int:
    from proving.bench import (
        api,
        ceiling,
        enroll,
        guard,
        guardrail,
        ingest,
        pages,
        reply_to_stop,
        scale,
        slow_provider,
        watcher,
        watcher_shards,
    )

    def terminate(signum, frame):  # the outer process' deadline: unwind, so workers and servers stop
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    _assert_bench_services()
    options = json.loads(os.environ["OUTREACH_BENCH_OPTIONS"])
    ctx = Context(options=options, write=write)
    runners = {
        "guard": guard.run,
        "ceiling": ceiling.run,
        "slow-provider": slow_provider.run,
        "reply-to-stop": reply_to_stop.run,
        "ingest": ingest.run,
        "scale": scale.run,
        "enroll": enroll.run,
        "guardrail": guardrail.run,
        "api": api.run,
        "pages": pages.run,
        "watcher": watcher.run,
        "watcher-shards": watcher_shards.run,
    }
    # `all`: the guard suite already measures the ceiling with the same W; once is enough.
    names = [n for n in ALL if n != "ceiling" or options.get("no_ceiling")] if suite == "all" else [suite]
    facts = machine_facts()
    report: dict[str, Any] = {
        "suite": suite,
        "quick": ctx.quick,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "options": {k: v for k, v in options.items() if k != "setup_notes"},
        "setup_notes": options.get("setup_notes", []),
        "machine": facts,
        "results": {},
        "errors": {},
    }
    write(machine_table(facts) + "\n")
    failed = False
    for name in names:
        write(f"== {name} ==\n")
        started = time.monotonic()
        try:
            result = runners[name](ctx)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other suites
            failed = True
            report["errors"][name] = f"{type(exc).__name__}: {exc}"
            write(f"suite {name} FAILED: {type(exc).__name__}: {exc}\n{traceback.format_exc()}\n")
            continue
        result["seconds"] = round(time.monotonic() - started, 1)
        for text in result.get("tables", []):
            write("\n" + text + "\n")
        report["results"][name] = result
    facts["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    write(machine_table(facts))
    out = options.get("json")
    if out:
        Path(out).write_text(json.dumps(report, indent=2, default=str) + "\n")
        write(f"\nJSON written to {out}\n")
    return 1 if failed else 0
