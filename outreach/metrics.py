"""Prometheus metrics at `/metrics`, read at scrape time from the database and Redis (the record, not memory).

Every process (web, workers, schedulers, watcher) would count only its own events, so nothing is counted in
memory: each scrape reads the same things `/healthz` reads (outreach/health.py), plus the send jobs by state
and the canceled ones by reason, from whichever web process answers. Off unless OUTREACH_METRICS_TOKEN is set
(404); then a scrape must send `Authorization: Bearer <token>` (401 otherwise). A database or Redis that
cannot be reached shows as `outreach_up{component=...} 0` and its metrics are left out.

Reply → stop (`outreach_reply_to_stop_seconds{mailbox, quantile}`): gauges, p50 and p95 over the last 7 days,
the dashboard's figures (inbound.replies.receipts). Not a histogram: a histogram's buckets are counters that a
process adds its own observations to and that never go down, and here nothing is observed in memory; the
figures are read from the record at each scrape over a window that slides, so they can fall. Quantiles are what
the dashboard shows, and a gauge per quantile says them as they are (a Prometheus summary's shape, without its
counters).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from redis.exceptions import RedisError

from inbound.replies.receipts import DAYS, reply_to_stop_latencies
from outreach.health import mailboxes_read, queues_read, redis_connect
from outreach.scheduler import lease_read
from sequences.models import SendJob
from sequences.reply_view import View


@login_not_required  # its bearer token is the install's: it reads every workspace (outreach.middleware)
@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.OUTREACH_METRICS_TOKEN
    if not token:
        raise Http404("metrics are off (OUTREACH_METRICS_TOKEN)")
    given = request.headers.get("Authorization", "")
    if not secrets.compare_digest(given.encode(), f"Bearer {token}".encode()):
        response = HttpResponse("a bearer token is required\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


class Collector:
    """One scrape's readings, as Prometheus metric families."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("outreach_up", "1 when this instance reaches the component", labels=["component"])
        database = list(self._database())
        up.add_metric(["database"], 1 if database else 0)
        redis = list(self._redis())
        up.add_metric(["redis"], 1 if redis else 0)
        yield up
        yield from database
        yield from redis

    def _database(self) -> Iterator[Metric]:
        try:
            mailboxes = mailboxes_read()
            by_state = dict(SendJob.objects.values_list("state").annotate(n=Count("*")))
            canceled = dict(SendJob.objects.filter(state=SendJob.State.CANCELED).values_list("cancel_reason")
                            .annotate(n=Count("*")))
            latencies = reply_to_stop_latencies()
        except DatabaseError:
            return
        jobs = GaugeMetricFamily("outreach_send_jobs", "Send jobs by state", labels=["state"])
        for state in SendJob.State.values:
            jobs.add_metric([state], by_state.get(state, 0))
        yield jobs
        reasons = GaugeMetricFamily("outreach_send_jobs_canceled", "Canceled send jobs by reason", labels=["reason"])
        for reason, n in sorted(canceled.items()):
            reasons.add_metric([reason or "unknown"], n)
        yield reasons
        blocked = GaugeMetricFamily("outreach_mailbox_blocked", "1 while the mailbox is blocked", labels=["mailbox"])
        view = GaugeMetricFamily("outreach_mailbox_reply_view", "1 for the mailbox's reply view now",
                                 labels=["mailbox", "view"])
        age = GaugeMetricFamily("outreach_mailbox_reply_view_age_seconds",
                                "Seconds since every reply folder of the mailbox was read through",
                                labels=["mailbox"])
        for mailbox in mailboxes:
            blocked.add_metric([mailbox.name], 0 if mailbox.blocked_seconds is None else 1)
            for value in View:
                view.add_metric([mailbox.name, value.value], 1 if mailbox.view == value else 0)
            if mailbox.read_through_seconds_ago is not None:
                age.add_metric([mailbox.name], mailbox.read_through_seconds_ago)
        yield from (blocked, view, age)
        seconds = GaugeMetricFamily("outreach_reply_to_stop_seconds",
                                    f"Seconds from a reply reaching the mailbox (IMAP INTERNALDATE) to the commit of "
                                    f"the stop it caused, over the last {DAYS} days (nearest-rank quantile)",
                                    labels=["mailbox", "quantile"])
        replies = GaugeMetricFamily("outreach_reply_to_stop_replies",
                                    f"Replies that stopped someone over the last {DAYS} days", labels=["mailbox"])
        for latency in latencies:
            for q, value in sorted(latency.quantiles.items()):
                seconds.add_metric([latency.mailbox, str(q)], value)
            replies.add_metric([latency.mailbox], latency.replies)
        yield from (seconds, replies)

    def _redis(self) -> Iterator[Metric]:
        redis = redis_connect()
        try:
            queues = queues_read(redis)
            lease = lease_read(redis)
        except RedisError:
            return
        finally:
            redis.close()
        families = {
            key: GaugeMetricFamily(f"outreach_queue_{key}", help_text, labels=["queue"])
            for key, help_text in (("depth", "Jobs waiting in the RQ queue"),
                                   ("oldest_job_seconds", "Age of the job waiting longest in the queue"),
                                   ("running", "Jobs of the queue being run"),
                                   ("failed", "Jobs of the queue in its failed registry"),
                                   ("workers", "Workers listening on the queue"))
        }
        for name, stats in queues.items():
            for key, family in families.items():
                family.add_metric([name], stats[key] if stats[key] is not None else 0)
        yield from families.values()
        leader = GaugeMetricFamily("outreach_scheduler_leader", "1 while a scheduler holds the scheduler lease")
        leader.add_metric([], 1 if lease else 0)
        yield leader
        if lease is not None:
            term = GaugeMetricFamily("outreach_scheduler_lease_term", "The scheduler lease's term (take-overs)")
            term.add_metric([], lease.term)
            held = GaugeMetricFamily("outreach_scheduler_lease_held_seconds", "Seconds the holder has held it")
            held.add_metric([], lease.held_for_seconds)
            yield from (term, held)
