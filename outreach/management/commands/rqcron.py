"""`manage.py rqcron outreach.cron`: django-rq's cron scheduler, enqueueing only under the scheduler lease.

The same command line as django-rq's own (the `outreach` app comes before `django_rq` in INSTALLED_APPS, so
this command is the one that runs): any number of them may run, on any hosts; one enqueues
(outreach/scheduler.py).
"""

from __future__ import annotations

import logging
from typing import Any

from django_rq.management.commands.rqcron import Command as DjangoRqCronCommand

from outreach.scheduler import LeasedCronScheduler


class Command(DjangoRqCronCommand):
    help = "Starts the RQ cron scheduler; any number may run, the one holding the scheduler lease enqueues"
    requires_system_checks = []  # serves no URL: no second of CPU importing them at each start (see rqworker.py)

    def handle(self, *args: Any, **options: Any) -> None:
        config_path: str = options["config_path"]
        scheduler = LeasedCronScheduler(logging_level=getattr(logging, options["logging_level"]))
        self.stdout.write(f"Loading cron configuration from {config_path}")
        scheduler.load_config_from_file(config_path)
        self.stdout.write(self.style.SUCCESS(f"Starting cron scheduler with {len(scheduler.get_jobs())} jobs "
                                             "(it enqueues while it holds the scheduler lease)..."))
        scheduler.start()
