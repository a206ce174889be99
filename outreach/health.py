"""Health for load balancers and orchestrators: `/healthz` (can this instance serve?) and `/healthz/live`.

No login. `/healthz` answers 503 when the database or Redis cannot be reached (the instance can do nothing
useful), else 200, and to a probe says only that: `{"status": "ok"}` or `{"status": "unavailable"}`. The
detail goes only to a request with `Authorization: Bearer <OUTREACH_HEALTH_TOKEN>` (the mailboxes' names, the
hosts and process ids of the scheduler and the watchers tell an attacker what to aim at), still with no address,
no server's words and no setting: the database, Redis, each queue's depth and oldest job's age, the scheduler
lease's holder (outreach/scheduler.py), the watcher processes and the folders none of them holds
(mailboxes.WatchLease), and the mailboxes that are blocked or not reading replies (the words of
sequences.reply_view). What deserves a look without making the instance unusable (no scheduler holds the lease,
a blocked mailbox) is listed under `warnings`. `/healthz/live` touches neither: the process answers.
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from redis import Redis
from redis.exceptions import RedisError
from rq.exceptions import NoSuchJobError
from rq.job import Job
from rq.queue import Queue
from rq.registry import FailedJobRegistry, StartedJobRegistry
from rq.worker import Worker

from db.clock import db_now
from inbound.models import WatcherProcess, WatchLease
from mailboxes.models import Mailbox
from outreach.scheduler import lease_read
from sequences.loads import folder_views
from sequences.reply_view import HOLDING, View, view_of

REDIS_TIMEOUT = 2.0  # seconds: a Redis that answers slower than this is as good as unreachable to a probe


@login_not_required  # no login: and, as the install's, it reads every workspace (outreach.middleware)
@never_cache
@require_GET
def live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "alive"})


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    report: dict[str, Any] = {}
    warnings: list[str] = []
    database_ok = _database(report, warnings)
    redis_ok = _redis(report, warnings)
    report["warnings"] = warnings
    ok = database_ok and redis_ok
    status = {"status": "ok" if ok else "unavailable"}
    return JsonResponse(status | report if detail_allowed(request) else status, status=200 if ok else 503)


def detail_allowed(request: HttpRequest) -> bool:
    """Whether the request carries the health token (OUTREACH_HEALTH_TOKEN; none set: nobody sees the detail)."""
    token = settings.OUTREACH_HEALTH_TOKEN
    given = request.headers.get("Authorization", "")
    return bool(token) and secrets.compare_digest(given.encode(), f"Bearer {token}".encode())


def _database(report: dict[str, Any], warnings: list[str]) -> bool:
    try:
        mailboxes = mailboxes_read()
    except DatabaseError as exc:
        report["database"] = {"ok": False, "error": type(exc).__name__}
        return False
    report["database"] = {"ok": True, "vendor": connection.vendor}
    blocked, not_reading = [], []
    for mailbox in mailboxes:
        if mailbox.blocked_seconds is not None:
            blocked.append({"name": mailbox.name, "blocked_seconds": mailbox.blocked_seconds})
            warnings.append(f"mailbox {mailbox.name} is blocked: its jobs wait")
        if mailbox.view in HOLDING:
            not_reading.append({"name": mailbox.name, "reply_view": mailbox.view.value,
                                "read_through_seconds_ago": mailbox.read_through_seconds_ago})
            warnings.append(f"mailbox {mailbox.name} is not reading replies ({mailbox.view.value}): follow-ups held")
    report["mailboxes"] = {"total": len(mailboxes), "blocked": blocked, "not_reading_replies": not_reading}
    report["watchers"] = watchers_read(warnings)
    return True


def watchers_read(warnings: list[str]) -> dict[str, Any]:
    """The running watcher processes (their lease renewed in time) and the watched folders none of them holds."""
    now = db_now()
    processes = [{"name": name, "folders": folders} for name, folders in
                 WatcherProcess.objects.filter(expires_at__gt=now).order_by("name").values_list("name", "folders")]
    folders = WatchLease.objects.count()
    unheld = folders - WatchLease.objects.filter(expires_at__gt=now).exclude(holder="").count()
    if folders and not processes:
        warnings.append("no watch_mailboxes process is running: replies are read only when mailboxes are polled")
    elif unheld:
        warnings.append(f"{unheld} of {folders} watched folders have no watcher holding them: a running watcher "
                        "takes them at its next round")
    return {"processes": processes, "folders": folders, "folders_unheld": unheld}


def _redis(report: dict[str, Any], warnings: list[str]) -> bool:
    redis = redis_connect()
    try:
        redis.ping()
        report["redis"] = {"ok": True}
        report["queues"] = queues_read(redis)
        lease = lease_read(redis)
    except RedisError as exc:
        report["redis"] = {"ok": False, "error": type(exc).__name__}
        return False
    finally:
        redis.close()
    if lease is None:
        report["scheduler"] = {"leader": None}
        warnings.append("no scheduler holds the lease: nothing periodic is enqueued (start `rqcron outreach.cron`)")
    else:
        report["scheduler"] = {"leader": lease.holder, "term": lease.term,
                               "lease_held_seconds": lease.held_for_seconds,
                               "lease_renewed_seconds_ago": lease.renewed_seconds_ago,
                               "lease_expires_in_seconds": lease.expires_in_seconds}
    return True


# --- the readings, shared with /metrics (outreach/metrics.py) ---------------------------------------------


@dataclass(frozen=True)
class MailboxHealth:
    name: str
    blocked_seconds: float | None  # None: not blocked
    view: View  # its reply view, as the final check judges it (sequences.reply_view)
    read_through_seconds_ago: float | None  # None: a reply folder never read, or no IMAP


def mailboxes_read() -> list[MailboxHealth]:
    """Every mailbox's blocked state and reply view, by the database clock (raises DatabaseError)."""
    mailboxes = list(Mailbox.objects.prefetch_related("cursors").order_by("name"))
    now = db_now()
    found = []
    for mailbox in mailboxes:
        folders = set(mailbox.reply_folders)
        views = folder_views((c.read_through, c.unread_since) for c in mailbox.cursors.all() if c.folder in folders)
        read = views.read_through if views.read == len(folders) else None
        found.append(MailboxHealth(
            name=mailbox.name,
            blocked_seconds=_seconds(now - mailbox.blocked_at) if mailbox.blocked_at else None,
            view=view_of(mailbox, views, now=now),
            read_through_seconds_ago=_seconds(now - read) if read and mailbox.has_imap else None))
    return found


def redis_connect() -> Redis:
    return Redis.from_url(settings.REDIS_URL, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT)


def queues_read(redis: Redis) -> dict[str, dict[str, Any]]:
    """Each RQ queue's depth, its oldest job's age in seconds, jobs running and failed, workers (raises RedisError)."""
    return {name: _queue(Queue(name, connection=redis)) for name in settings.RQ_QUEUES}


def _queue(queue: Queue) -> dict[str, Any]:
    oldest_age = None
    for job_id in queue.get_job_ids(0, 1):  # the head of the queue: the job waiting longest
        with contextlib.suppress(NoSuchJobError):  # taken and finished meanwhile
            enqueued_at = Job.fetch(job_id, connection=queue.connection).enqueued_at
            if enqueued_at is not None:
                oldest_age = _seconds(datetime.now(UTC) - enqueued_at.replace(tzinfo=enqueued_at.tzinfo or UTC))
    return {"depth": queue.count, "oldest_job_seconds": oldest_age,
            "running": StartedJobRegistry(queue=queue).count, "failed": FailedJobRegistry(queue=queue).count,
            "workers": Worker.count(queue=queue)}


def _seconds(delta: timedelta) -> float:
    return round(max(delta.total_seconds(), 0.0), 3)
