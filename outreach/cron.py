"""Periodic work, run by exactly one `python manage.py rqcron outreach.cron` process.

RQ's cron scheduler has no lock between two scheduler processes: run one.
"""

from rq import cron

from sequences.tasks import dispatch

cron.register(dispatch, queue_name="default", interval=10)
