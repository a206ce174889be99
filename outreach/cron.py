"""Periodic work, run by `python manage.py rqcron outreach.cron`.

Any number of these schedulers may run, on any hosts: the one holding the scheduler lease enqueues, the
others wait to take over (outreach/scheduler.py).
"""

from django.conf import settings
from rq import cron

from api.tasks import api_housekeeping
from inbound.tasks import inbound_raw_purge, poll_all, reply_rules_due, webhook_batches_due
from reports.tasks import reports_rollup, weekly_report_send
from sequences.tasks import dispatch, doctor, domain_auth, reply_view_episodes, webhooks_due
from ui.dashboard_counts import count_task as dashboard_count

cron.register(dispatch, queue_name="default", interval=settings.OUTREACH_DISPATCH_INTERVAL)
cron.register(poll_all, queue_name="default", interval=settings.OUTREACH_POLL_INTERVAL)
cron.register(doctor, queue_name="default", interval=300)
cron.register(dashboard_count, queue_name="default", interval=60)
cron.register(reports_rollup, queue_name="default", interval=60)
cron.register(weekly_report_send, queue_name="default", interval=3600)  # sent once a week: reports.weekly_send
cron.register(webhooks_due, queue_name="default", interval=10)
cron.register(reply_view_episodes, queue_name="default", interval=30)
cron.register(api_housekeeping, queue_name="default", interval=3600)
cron.register(inbound_raw_purge, queue_name="default", interval=3600)
cron.register(webhook_batches_due, queue_name="default", interval=60)
cron.register(reply_rules_due, queue_name="default", interval=60)
# Hourly pass; each mailbox's DNS is read once a day (a failing one hourly), however often schedulers restart.
cron.register(domain_auth, queue_name="default", interval=3600)
