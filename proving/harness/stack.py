"""The isolated stack the drills and benchmarks run on: a dedicated database, Redis, a temp dir, workers.

Also the one free_port of every loopback server here (SMTP, Dovecot,
redis-server, PostgreSQL). Nothing here touches the configured database's
rows or the configured Redis database: see proving.drills for the choices and
why.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.db import connections

from proving.harness import template

ALIAS = "default"
# Variables a drill subprocess must never inherit from the operator's shell: the drill sets them itself.
DRILL_OWNED_ENV = ("OUTREACH_PAUSE_AT", "OUTREACH_PAUSE_DIR", "OUTREACH_DRILL_UNCHECKED")
# The servers a drill starts listen on loopback: its processes may reach them (mailboxes.targets).
LOOPBACK_TARGETS = "127.0.0.0/8,::1/128,localhost"


class DrillError(Exception):
    """The drill cannot run (a refusal or a missing piece), with a message for the operator."""


class DrillTimeout(DrillError):
    pass


def free_port() -> int:
    # Some servers (aiosmtpd 1.4, Dovecot, redis-server) cannot be told "port 0, tell me":
    # take a free port from the kernel and hand it over; a clash is reported by the server's start.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for[T](predicate: Callable[[], T], *, timeout: float, what: str, interval: float = 0.02) -> T:
    """Poll `predicate` until it returns something truthy (cross-process: there is no barrier to wait on)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise DrillTimeout(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def make_tempdir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)  # servers started as other users (postgres, dovecot) traverse it
    return path


# --- the database ------------------------------------------------------------------


@dataclass
class Database:
    """A database the drill owns; `active()` points this process's default connection at it."""

    vendor: str
    label: str  # for the operator: where it is
    overrides: dict[str, Any]  # keys of settings.DATABASES["default"] to change
    url: str  # DATABASE_URL for subprocesses
    drop: Callable[[], None] = field(repr=False, default=lambda: None)
    # Made as a copy of the test run's migrated template (proving.harness.template): migrate() has nothing to do.
    copied: bool = False
    save: Callable[[], None] = field(repr=False, default=lambda: None)  # a migrated copy to the run's template

    @contextlib.contextmanager
    def active(self) -> Iterator[Database]:
        # As Django's test runner does: close the connection and change the settings
        # dict in place (every thread's connection is built from this same dict).
        conn = connections[ALIAS]
        conn.close()
        saved = {key: conn.settings_dict.get(key) for key in self.overrides}
        conn.settings_dict.update(self.overrides)
        # Another backend (a private PostgreSQL cluster while SQLite is configured): the
        # connection object is of the old backend's class, so it is built anew, now and after.
        rebuild = saved.get("ENGINE", conn.settings_dict["ENGINE"]) != conn.settings_dict["ENGINE"]
        if rebuild:
            del connections[ALIAS]
        try:
            yield self
        finally:
            connections[ALIAS].close()
            conn.settings_dict.update(saved)
            if rebuild:
                del connections[ALIAS]

    def migrate(self, *, schema: str = "migrate") -> float:
        """Create the tables (requires `active()`); returns seconds taken."""
        from django.core.management import call_command
        from django.test.utils import override_settings

        started = time.monotonic()
        if self.copied:
            return time.monotonic() - started
        if schema == "models":
            # Tables straight from the models (what pytest --nomigrations does): for when
            # migrations are being edited. The default runs the real migrations.
            from django.apps import apps

            off = {config.label: None for config in apps.get_app_configs()}
            with override_settings(MIGRATION_MODULES=off):
                call_command("migrate", run_syncdb=True, interactive=False, verbosity=0)
        else:
            call_command("migrate", interactive=False, verbosity=0)
            connections[ALIAS].close()  # nobody connected while it is copied
            self.save()
        return time.monotonic() - started


def database_url(s: dict[str, Any]) -> str:
    """DATABASE_URL (as outreach.settings reads it) for a PostgreSQL or SQLite (file) settings dict."""
    if s.get("ENGINE", "").endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    user = quote(s.get("USER") or "", safe="")
    password = quote(str(s.get("PASSWORD") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}{s.get('HOST') or ''}{port}/{quote(s['NAME'], safe='')}"


def database_dump(s: dict[str, Any]) -> str:
    """Everything the database holds, as SQL text: pg_dump for PostgreSQL, the file's dump for SQLite.

    What a person with the database files (or a backup) can read: a privacy test searches it for what
    must not be kept.
    """
    if s["ENGINE"].endswith("sqlite3"):
        import sqlite3

        with contextlib.closing(sqlite3.connect(s["NAME"])) as conn:
            return "\n".join(conn.iterdump())
    done = subprocess.run(
        ["pg_dump", "-h", s.get("HOST") or "127.0.0.1", "-p", str(s.get("PORT") or 5432),
         "-U", s.get("USER") or "postgres", s["NAME"]],
        env=os.environ | ({"PGPASSWORD": str(s["PASSWORD"])} if s.get("PASSWORD") else {}),
        capture_output=True, check=True, timeout=120)
    return done.stdout.decode("utf-8", "replace")


def _pg_admin(s: dict[str, Any], sql: str) -> None:
    """Run one statement outside any transaction, from a maintenance database (never the drill's)."""
    import psycopg

    errors = []
    for dbname in ("postgres", settings.DATABASES[ALIAS]["NAME"], "template1"):
        try:
            with psycopg.connect(host=s.get("HOST") or None, port=s.get("PORT") or None, user=s.get("USER") or None,
                                 password=s.get("PASSWORD") or None, dbname=dbname, autocommit=True,
                                 connect_timeout=10) as conn:
                conn.execute(sql)
                return
        except psycopg.OperationalError as exc:  # cannot connect to that one: try the next
            errors.append(f"{dbname}: {str(exc).strip()}")
    raise DrillError("cannot reach a maintenance database to run " + sql.split(" ")[0] + ": " + "; ".join(errors))


def dedicated_database(*, tmpdir: Path, name: str | None = None) -> Database:
    """A new, empty database next to the configured one (same server and credentials).

    `name`: the PostgreSQL database to create (it must not exist), or with SQLite the file to create (it must
    not exist; removed by `drop`); by default a generated name, or a file in `tmpdir`.
    """
    base = dict(connections[ALIAS].settings_dict)
    engine = base["ENGINE"]
    if engine.endswith("sqlite3"):
        if name is None:
            path = tmpdir / "drill.sqlite3"
            return Database("sqlite", f"SQLite file {path}", {"NAME": str(path)}, f"sqlite:///{path}",
                            copied=template.sqlite_copy(path), save=lambda: template.sqlite_save(path))
        path = Path(name).resolve()
        if path.exists():
            raise DrillError(f"{path} exists: the drill creates its database and never reuses a file")
        if not path.parent.is_dir():
            raise DrillError(f"no directory {path.parent} for the drill database {path.name}")

        def drop() -> None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)

        return Database("sqlite", f"SQLite file {path} (removed at the end)", {"NAME": str(path)},
                        f"sqlite:///{path}", drop=drop, copied=template.sqlite_copy(path),
                        save=lambda: template.sqlite_save(path))
    if not engine.endswith("postgresql"):
        raise DrillError(f"drills support PostgreSQL and SQLite, not {engine}")
    if name is None:
        name = f"outreach_drill_{os.getpid()}_{secrets.token_hex(3)}"
    elif not name or '"' in name or "\x00" in name or len(name.encode()) > 63:
        raise DrillError(f"{name!r} is not a PostgreSQL database name (at most 63 bytes, no double quote)")
    server = {"host": base.get("HOST") or "", "port": str(base.get("PORT") or ""), "user": base.get("USER") or "",
              "password": str(base.get("PASSWORD") or "")}
    copied = template.pg_copy(server, name)
    try:
        if not copied:
            _pg_admin(base, f'CREATE DATABASE "{name}"')
    except Exception as exc:
        raise DrillError(f"cannot create the drill database {name} on {base.get('HOST') or 'localhost'}: {exc}. "
                         "The drill never writes to the configured database; grant CREATEDB to its user.") from exc
    where = f"{base.get('HOST') or 'localhost'}:{base.get('PORT') or 5432}"
    return Database("postgresql", f"PostgreSQL database {name} on {where} (dropped at the end)", {"NAME": name},
                    database_url(base | {"NAME": name}),
                    drop=lambda: _pg_admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'),
                    copied=copied, save=lambda: template.pg_save(server, name))


def _pg_bin(tool: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"))
    if found:
        return found[-1]
    path = shutil.which(tool)
    if not path:
        raise DrillError(f"{tool} not found (install postgresql: /usr/lib/postgresql/*/bin)")
    return path


class PrivatePostgres:
    """A PostgreSQL cluster of the drill's own (initdb in a temp dir, pg_ctl on a free loopback port).

    The only cluster a drill ever restarts. Durability settings stay on except
    fsync (a process crash, which is what the drill does, loses nothing with
    fsync off; `synchronous_commit=off` would, so it stays on).
    """

    def __init__(self, tmpdir: Path):
        # A directory of its own: with SQLite configured the drills already run in one private cluster,
        # and the PostgreSQL-restart drill starts a second one beside it.
        self.root = Path(tempfile.mkdtemp(prefix="pg-", dir=tmpdir))
        self.data = self.root / "data"
        self.port = free_port()
        self.root.chmod(0o755)
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: run the server as `postgres`
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise DrillError("running as root and there is no `postgres` user for a private cluster") from None
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *argv: str, timeout: float = 60) -> None:
        done = subprocess.run([*self._as, *argv], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise DrillError(f"{' '.join(argv[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> PrivatePostgres:
        if not self.data.exists():
            self._run(_pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                      "--no-sync")
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c full_page_writes=off -c max_connections=200")
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", opts, "-w",
                  "start")
        return self

    def restart(self, *, mode: str = "immediate") -> None:
        """Stop (immediate: like a crash, recovery from WAL at start) and start again on the same port."""
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")
        self.start()

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=30)

    def database(self, name: str = "outreach_drill") -> Database:
        s = {"HOST": "127.0.0.1", "PORT": str(self.port), "USER": "postgres", "PASSWORD": "", "NAME": name}
        _pg_admin(s, f'CREATE DATABASE "{name}"')
        # ENGINE and OPTIONS too: the configured database may be SQLite, whose options psycopg refuses.
        overrides = s | {"ENGINE": "django.db.backends.postgresql", "OPTIONS": {}}
        return Database("postgresql", f"private PostgreSQL cluster 127.0.0.1:{self.port} ({self.data})", overrides,
                        database_url(s))


# --- Redis ---------------------------------------------------------------------------


class RedisIndex:
    """A Redis database index the operator named (`--redis-url`): the drill's queues there, and nothing else.

    The index may hold other data: the drill never flushes it. It refuses an index where outreach is already
    at work (a worker on one of its queues, a job queued, an `outreach:` key): another instance's worker
    would take the drill's jobs, and its data would be mixed with the drill's. At the end it removes what
    it added (its RQ jobs, queues, registries, workers and `outreach:` marks) and leaves every other key.
    """

    def __init__(self, url: str, *, queues: tuple[str, ...]):
        import redis

        self.url = url
        self.queues = queues
        self.conn = redis.Redis.from_url(url, socket_timeout=5)
        try:
            self.conn.ping()
        except redis.RedisError as exc:
            raise DrillError(f"cannot reach Redis at {url}: {exc}") from exc
        self.label = f"{url} (given; only the drill's own keys are removed at the end)"
        self._registered: set[str] = set()  # queues RQ listed in this index before the drill (left listed)
        self._locks: set[str] = set()  # RQ's maintenance locks that the drill's workers may set (if absent before)

    def start(self) -> RedisIndex:
        from rq import Queue, Worker
        from rq.group import Group

        busy = []
        for name in self.queues:
            queue = Queue(name, connection=self.conn)
            workers = Worker.all(queue=queue)
            if workers:
                busy.append(f"{len(workers)} worker(s) listen on queue {name!r}")
            if any(self.conn.exists(key) for key in self._queue_keys(queue)):
                busy.append(f"queue {name!r} holds jobs")
        if next(self.conn.scan_iter(match="outreach:*", count=1000), None) is not None:
            busy.append("it holds outreach: keys")
        if busy:
            raise DrillError(f"Redis {self.url} is in use by outreach ({'; '.join(busy)}): give the drill an index "
                             "no outreach instance uses, or leave out --redis-url (a private redis-server)")
        self._registered = {name for name in self.queues
                            if self.conn.sismember(Queue.redis_queues_keys, Queue(name, connection=self.conn).key)}
        self._locks = {key for key in (Group.REDIS_GROUP_CLEANING_KEY,) if not self.conn.exists(key)}
        return self

    @staticmethod
    def _queue_keys(queue) -> list[str]:
        registries = (queue.started_job_registry, queue.finished_job_registry, queue.failed_job_registry,
                      queue.deferred_job_registry, queue.scheduled_job_registry, queue.canceled_job_registry)
        return [queue.key, queue.intermediate_queue.key, *(registry.key for registry in registries)]

    def stop(self) -> None:
        """Remove the drill's jobs, queues, registries, workers and marks (the refusal at start made them its own)."""
        from rq import Queue, Worker
        from rq.job import Job
        from rq.worker_registration import unregister

        for name in self.queues:
            queue = Queue(name, connection=self.conn)
            for worker in Worker.all(queue=queue):
                unregister(worker)
                self.conn.delete(worker.key)
            keys = self._queue_keys(queue)
            ids = {*queue.get_job_ids(), *(m.decode() for m in self.conn.lrange(keys[1], 0, -1))}
            for key in keys[2:]:
                ids.update(member.decode() for member in self.conn.zrange(key, 0, -1))
            for job_id in ids:
                with contextlib.suppress(Exception):
                    Job.fetch(job_id, connection=self.conn).delete(remove_from_queue=False)
            self.conn.delete(*keys, queue.registry_cleaning_key)
            if name not in self._registered:
                self.conn.srem(Queue.redis_queues_keys, queue.key)
        # What RQ keeps of a worker after it stopped: the drill's are named "<role>-<drill pid>-<random>"
        # (start_worker, called in this process).
        leftovers = [*self.conn.scan_iter(match=f"rq:worker:*-{os.getpid()}-*", count=1000),
                     *self.conn.scan_iter(match="outreach:*", count=1000), *self._locks]
        if leftovers:
            self.conn.delete(*leftovers)


class PrivateRedis:
    """A redis-server of the drill's own on a free loopback port: the only Redis a drill flushes or restarts."""

    def __init__(self, tmpdir: Path):
        self.port = free_port()
        self.dir = tmpdir / "redis"
        self.dir.mkdir()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.label = f"private redis-server {self.url} (started by the drill, stopped at the end)"
        self.proc: subprocess.Popen | None = None
        self.restarts = 0

    def start(self) -> PrivateRedis:
        binary = shutil.which("redis-server")
        if not binary:
            raise DrillError("redis-server not found (apt-get install -y redis-server)")
        log = open(self.dir / "redis.log", "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(self.dir), "--protected-mode", "yes"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        wait_for(self.ping, timeout=10, what=f"redis-server on port {self.port}")
        return self

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=5)

    def ping(self) -> bool:
        try:
            return bool(self.client().ping())
        except Exception:  # noqa: BLE001
            return False

    def flushall(self) -> None:
        self.client().flushall()

    def restart(self) -> None:
        """Kill the server (all data gone, every connection dropped) and start a new one on the same port."""
        self.stop()
        self.start()
        self.restarts += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


# --- processes -------------------------------------------------------------------------


def allow_loopback() -> None:
    """This process, and the processes it starts, may reach the servers a drill or a bench starts on loopback."""
    os.environ.setdefault("OUTREACH_ALLOW_PRIVATE_TARGETS", LOOPBACK_TARGETS)
    settings.OUTREACH_ALLOW_PRIVATE_TARGETS = [*settings.OUTREACH_ALLOW_PRIVATE_TARGETS, *LOOPBACK_TARGETS.split(",")]


def subprocess_env(*, database: Database, redis_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DRILL_OWNED_ENV}
    env.update(DATABASE_URL=database.url, REDIS_URL=redis_url, PYTHONUNBUFFERED="1")
    env.setdefault("DJANGO_SETTINGS_MODULE", os.environ.get("DJANGO_SETTINGS_MODULE", "outreach.settings"))
    env.setdefault("OUTREACH_ALLOW_PRIVATE_TARGETS", LOOPBACK_TARGETS)  # the drill's servers are on loopback
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Process:
    """A `manage.py` subprocess in its own process group (so a kill takes its forked children too)."""

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str], log_dir: Path):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps its own descriptor
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *argv],
            env=env, cwd=str(settings.BASE_DIR), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        self._terminated = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker and everything it forked, at once (a host dying).

        Its group is not enough: RQ's work horse calls setpgrp(), so it is found
        through /proc before the parent dies (afterwards it would belong to init).
        """
        tree = descendants(self.proc.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in tree:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)

    def terminate(self) -> None:
        """SIGTERM, once (a second one tells an RQ worker to kill the job in progress), without waiting."""
        if self.alive() and not self._terminated:
            self._terminated = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (an idle RQ worker exits at once), then SIGKILL the group if it lingers."""
        self.terminate()
        if self.alive():
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(grace)
        self.kill()

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""


def stop_all(processes: list[Process], grace: float = 5.0) -> None:
    """Stop processes side by side: SIGTERM to each first, then wait for each (`Process.stop`)."""
    for process in processes:
        process.terminate()
    for process in processes:
        process.stop(grace)


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc), children first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces or parentheses; split after the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def start_worker(name: str, *, env: dict[str, str], log_dir: Path, burst: bool = False,
                 extra_args: tuple[str, ...] = ()) -> Process:
    """`manage.py rqworker send`, exactly as the product runs it (forking worker)."""
    argv = ["rqworker", "send", "--name", f"{name}-{os.getpid()}-{secrets.token_hex(3)}", *extra_args]
    if burst:
        argv.append("--burst")
    return Process(name, argv, env=env, log_dir=log_dir)
